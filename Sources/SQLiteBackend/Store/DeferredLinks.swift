import CSQLite
import Foundation
import StoreAPI

/// The links one side of a many-to-many relationship gave during a bulk load without writing them, kept as a count
/// and an order-independent checksum so that the load can check them against the table at the end.
///
/// Both sides of a many-to-many read one join table, and a store transfer delivers both: each link twice, once
/// from each side. Writing the second copy cost a statement per link that only found the row there already — a
/// seventh of a conversion from LMDB into SQLite. During a bulk load the side whose records are the table's `dst` column
/// writes nothing when it is unordered (its rows then hold no position for it, and reads list its links by key, as
/// they do for any row without one); ``verify(_:)`` then checks that its links are exactly the table's rows, which
/// the other side wrote. Two sides that disagree (a damaged or hand-edited source) make the load
/// fail with an error naming the relationship, instead of being merged silently.
///
/// The checksum adds a 64-bit mix of each `(src, dst)` pair: different sets of pairs with the same count give the
/// same sum with a probability of about 2⁻⁶⁴.
struct DeferredLinks: Sendable {
    /// The join table.
    let table: String
    /// The side that did not write its rows, and the side that did (for the error).
    let entity: String
    let relationship: String
    let otherSide: String
    private(set) var count = 0
    private(set) var checksum: UInt64 = 0

    init(table: String, entity: String, relationship: String, otherSide: String) {
        self.table = table
        self.entity = entity
        self.relationship = relationship
        self.otherSide = otherSide
    }

    mutating func add(src: Int64, dst: Int64) {
        count += 1
        checksum &+= Self.mix(src, dst)
    }

    /// Throws ``StoreError/invalidRelationshipTarget(entity:relationship:reason:)`` unless the table's rows are
    /// exactly the links added.
    func verify(_ c: SQLiteConnection) throws {
        var rows = 0
        var sum: UInt64 = 0
        try c.withStatement("SELECT src, dst FROM \(SQLiteLayout.quote(table))") { s in
            while try s.step() {
                rows += 1
                sum &+= Self.mix(s.int64(0), s.int64(1))
            }
        }
        guard rows != count || sum != checksum else { return }
        func links(_ n: Int) -> String { n == 1 ? "1 link" : "\(n) links" }
        let which = rows == count ? "as many links but not the same ones" : "\(links(count)) against \(links(rows))"
        throw StoreError.invalidRelationshipTarget(
            entity: entity, relationship: relationship,
            reason: "its records and those of the inverse \(otherSide) disagree (\(which)); the two sides of a many-to-many relationship must list the same links")
    }

    /// A 64-bit mix of a pair (two rounds of SplitMix64's finaliser).
    private static func mix(_ src: Int64, _ dst: Int64) -> UInt64 {
        finalize(UInt64(bitPattern: src) &+ 0x9E37_79B9_7F4A_7C15 &* finalize(UInt64(bitPattern: dst) ^ 0xD1B5_4A32_D192_ED03))
    }

    private static func finalize(_ x: UInt64) -> UInt64 {
        var z = x
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
