import CSQLite
import Foundation
@_spi(BackendKit) import StoreAPI

/// The pairs one side of a many-to-many gave during a bulk load without writing them, kept as a count and an
/// order-independent checksum and checked against the join table when the load finishes.
///
/// A transfer delivers both sides of every many-to-many, each pair twice; the second copy would cost a statement
/// that only finds the row there already. The side that writes is the first the load meets; the other must list
/// exactly the rows it wrote, or the load fails naming the relationship. The checksum adds a 64-bit mix of each
/// pair: two different sets of pairs with the same count give the same sum with a probability of about 2⁻⁶⁴.
struct CoreDataDeferredJoin {
    let table: String
    /// The column holding the deferred side's keys, and the other column.
    let column: String
    let other: String
    /// The deferred side's relationship, for the error.
    let entity: String
    let relationship: String
    private(set) var count = 0
    private(set) var checksum: UInt64 = 0

    init(table: String, column: String, other: String, entity: String, relationship: String) {
        self.table = table
        self.column = column
        self.other = other
        self.entity = entity
        self.relationship = relationship
    }

    mutating func add(mine: Int64, theirs: [Int64]) {
        for t in theirs {
            count += 1
            checksum &+= Self.mix(mine, t)
        }
    }

    /// Throws ``StoreError/invalidRelationshipTarget(entity:relationship:reason:)`` unless the table's rows are
    /// exactly the pairs added.
    func verify(_ c: CoreDataConnection) throws {
        var rows = 0
        var sum: UInt64 = 0
        try c.query("SELECT \(CoreDataSQL.quoted(column)), \(CoreDataSQL.quoted(other)) FROM \(CoreDataSQL.quoted(table))") { s in
            rows += 1
            sum &+= Self.mix(sqlite3_column_int64(s, 0), sqlite3_column_int64(s, 1))
        }
        guard rows != count || sum != checksum else { return }
        let which = rows == count ? "as many links but not the same ones" : "\(count) links against \(rows)"
        throw StoreError.invalidRelationshipTarget(
            entity: entity, relationship: relationship,
            reason: "its records and those of the inverse disagree (\(which)); the two sides of a many-to-many "
                + "relationship must list the same links")
    }

    /// A 64-bit mix of a pair (two rounds of SplitMix64's finaliser).
    private static func mix(_ a: Int64, _ b: Int64) -> UInt64 {
        finalize(UInt64(bitPattern: a) &+ 0x9E37_79B9_7F4A_7C15 &* finalize(UInt64(bitPattern: b) ^ 0xD1B5_4A32_D192_ED03))
    }

    private static func finalize(_ x: UInt64) -> UInt64 {
        var z = x
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
