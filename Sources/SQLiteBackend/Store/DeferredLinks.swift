import CSQLite
import Foundation
@_spi(BackendKit) import StoreAPI

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
/// The links are kept as a `PairSetChecksum` of `(src, dst)` pairs.
struct DeferredLinks: Sendable {
    /// The join table.
    let table: String
    /// The side that did not write its rows, and the side that did (for the error).
    let entity: String
    let relationship: String
    let otherSide: String
    private(set) var pairs = PairSetChecksum()

    init(table: String, entity: String, relationship: String, otherSide: String) {
        self.table = table
        self.entity = entity
        self.relationship = relationship
        self.otherSide = otherSide
    }

    mutating func add(src: Int64, dst: Int64) { pairs.add(src, dst) }

    /// Throws ``StoreError/invalidRelationshipTarget(entity:relationship:reason:)`` unless the table's rows are
    /// exactly the links added.
    func verify(_ c: SQLiteConnection) throws {
        var rows = PairSetChecksum()
        try c.withStatement("SELECT src, dst FROM \(SQLiteLayout.quote(table))") { s in
            while try s.step() { rows.add(s.int64(0), s.int64(1)) }
        }
        guard rows != pairs else { return }
        func links(_ n: Int) -> String { n == 1 ? "1 link" : "\(n) links" }
        let which = rows.count == pairs.count ? "as many links but not the same ones"
            : "\(links(pairs.count)) against \(links(rows.count))"
        throw StoreError.invalidRelationshipTarget(
            entity: entity, relationship: relationship,
            reason: "its records and those of the inverse \(otherSide) disagree (\(which)); the two sides of a many-to-many relationship must list the same links")
    }

}
