import Foundation
@_spi(BackendKit) import StoreAPI

/// In a bulk load, the positions of ordered to-many members that the owner's list gives before the members' rows
/// exist, beyond those kept in memory (``CoreDataPendingLinks/positionLimit``): kept in a temporary table and read
/// by key when the member's row is inserted. A transfer inserts members in key order, so those reads walk the
/// table's B-tree in order; writing the positions into the members' rows at the end instead would write every
/// such row a second time.
///
/// A transfer saves entity by entity, so every member of an ordered list usually arrives after its owner: held in
/// memory, the waiting positions would grow with the store. SQLite's temporary database keeps them in its page cache
/// and spills to a temporary file beyond it, so a load's memory stays flat in the store's size. The table lives on
/// the writer's connection and inside the save's transaction: a save that rolls back takes its rows with it.
struct CoreDataSpilledPositions {
    /// One order column and its table.
    private struct Column {
        let table: String
        let order: String
    }

    /// The columns with positions, their index the `C` value of their rows.
    private var columns: [Column] = []

    private static let table = "temp.Z_PENDING_ORDER"

    /// Keeps `position` for member `member` in `order` of `table` (the last position given for a member wins).
    mutating func add(
        _ position: Int64, member: Int64, table: String, order: String, _ c: CoreDataConnection
    ) throws {
        let id: Int
        if let known = column(table: table, order: order) {
            id = known
        } else {
            if columns.isEmpty {
                try c.run("CREATE TEMP TABLE IF NOT EXISTS Z_PENDING_ORDER (C INTEGER, PK INTEGER, POSITION INTEGER, "
                    + "PRIMARY KEY (C, PK)) WITHOUT ROWID")
            }
            id = columns.count
            columns.append(Column(table: table, order: order))
        }
        try c.run("INSERT OR REPLACE INTO \(Self.table) (C, PK, POSITION) VALUES (?, ?, ?)",
                  [.integer(Int64(id)), .integer(member), .integer(position)])
    }

    /// The position kept for member `member` in `order` of `table`, if one was spilled.
    func position(member: Int64, table: String, order: String, _ c: CoreDataConnection) throws -> Int64? {
        guard !columns.isEmpty, let id = column(table: table, order: order) else { return nil }
        return try c.integer(Self.lookupSQL, [.integer(Int64(id)), .integer(member)])
    }

    /// Drops the table: every kept position was read when its member's row was inserted, and a member whose row
    /// never was has no order column to write.
    mutating func finish(_ c: CoreDataConnection) throws {
        guard !columns.isEmpty else { return }
        try c.run("DROP TABLE IF EXISTS \(Self.table)")
        columns = []
    }

    private static let lookupSQL = "SELECT POSITION FROM \(table) WHERE C = ? AND PK = ?"

    /// A linear search: a store has few ordered relationships, and comparing names that are usually the same string
    /// is cheaper than hashing them for every member.
    private func column(table: String, order: String) -> Int? {
        columns.firstIndex { $0.table == table && $0.order == order }
    }
}
