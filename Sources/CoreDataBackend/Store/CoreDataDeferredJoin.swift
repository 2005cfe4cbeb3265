import CSQLite
import Foundation
@_spi(BackendKit) import StoreAPI

/// The pairs one side of a many-to-many gave during a bulk load without writing them, kept as a count and an
/// order-independent checksum and checked against the join table when the load finishes.
///
/// A transfer delivers both sides of every many-to-many, each pair twice; the second copy would cost a statement
/// that only finds the row there already. The side that writes is the one leading the table's primary key
/// (``CoreDataWritePlan/bulkJoinWriters``), else the first the load meets; the other must list
/// exactly the rows it wrote (compared as a `PairSetChecksum`), or the load fails naming the relationship.
struct CoreDataDeferredJoin {
    let table: String
    /// The column holding the deferred side's keys, and the other column.
    let column: String
    let other: String
    /// The deferred side's relationship, for the error.
    let entity: String
    let relationship: String
    private(set) var pairs = PairSetChecksum()

    init(table: String, column: String, other: String, entity: String, relationship: String) {
        self.table = table
        self.column = column
        self.other = other
        self.entity = entity
        self.relationship = relationship
    }

    mutating func add(mine: Int64, theirs: [Int64]) {
        for t in theirs { pairs.add(mine, t) }
    }

    /// Throws ``StoreError/invalidRelationshipTarget(entity:relationship:reason:)`` unless the table's rows are
    /// exactly the pairs added. `written`, when given, is what the table holds (the writing side's pairs, as
    /// (``column``, ``other``), when nothing else changed the table), so that it is not read back.
    func verify(_ c: CoreDataConnection, written: PairSetChecksum? = nil) throws {
        var rows = PairSetChecksum()
        if let written {
            rows = written
        } else {
            try c.query("SELECT \(CoreDataSQL.quoted(column)), \(CoreDataSQL.quoted(other)) FROM \(CoreDataSQL.quoted(table))") { s in
                rows.add(sqlite3_column_int64(s, 0), sqlite3_column_int64(s, 1))
            }
        }
        guard rows != pairs else { return }
        let which = rows.count == pairs.count ? "as many links but not the same ones" : "\(pairs.count) links against \(rows.count)"
        throw StoreError.invalidRelationshipTarget(
            entity: entity, relationship: relationship,
            reason: "its records and those of the inverse disagree (\(which)); the two sides of a many-to-many "
                + "relationship must list the same links")
    }

}
