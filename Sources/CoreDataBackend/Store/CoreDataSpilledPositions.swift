import Foundation
@_spi(BackendKit) import StoreAPI

/// In a bulk load, the positions of ordered to-many members that the owner's list gives before the members' rows
/// exist, beyond those kept in memory (``CoreDataPendingLinks/positionLimit``): kept in a temporary table and
/// written into the members' order columns by one statement per column when the load finishes.
///
/// A transfer saves entity by entity, so every member of an ordered list usually arrives after its owner: held in
/// memory, the waiting positions would grow with the store. SQLite's temporary database keeps them in its page cache
/// and spills to a temporary file beyond it, so a load's memory stays flat in the store's size. The table lives on
/// the writer's connection and inside the save's transaction: a save that rolls back takes its rows with it.
struct CoreDataSpilledPositions {
    /// One order column (with its table and the foreign key that must be set for a position to count).
    private struct Column {
        let table: String
        let order: String
        let foreignKey: String
    }

    /// The columns with positions, their index the `C` value of their rows.
    private var columns: [Column] = []

    private static let table = "temp.Z_PENDING_ORDER"

    /// Keeps `position` for member `member` in `order` of `table` (the last position given for a member wins).
    mutating func add(
        _ position: Int64, member: Int64, table: String, order: String, foreignKey: String, _ c: CoreDataConnection
    ) throws {
        // A linear search: a store has few ordered relationships, and comparing names that are usually the same
        // string is cheaper than hashing them for every member.
        let id: Int
        if let known = columns.firstIndex(where: { $0.table == table && $0.order == order && $0.foreignKey == foreignKey }) {
            id = known
        } else {
            if columns.isEmpty {
                try c.run("CREATE TEMP TABLE IF NOT EXISTS Z_PENDING_ORDER (C INTEGER, PK INTEGER, POSITION INTEGER, "
                    + "PRIMARY KEY (C, PK)) WITHOUT ROWID")
            }
            id = columns.count
            columns.append(Column(table: table, order: order, foreignKey: foreignKey))
        }
        try c.run("INSERT OR REPLACE INTO \(Self.table) (C, PK, POSITION) VALUES (?, ?, ?)",
                  [.integer(Int64(id)), .integer(member), .integer(position)])
    }

    /// Writes every kept position into its member's row (members whose row was never inserted, or whose to-one is
    /// not set, keep theirs as they are) and drops the table.
    mutating func apply(_ c: CoreDataConnection) throws {
        guard !columns.isEmpty else { return }
        let q = CoreDataSQL.quoted
        for (id, column) in columns.enumerated() {
            let table = q(column.table)
            try c.run("UPDATE \(table) SET \(q(column.order)) = (SELECT POSITION FROM \(Self.table) WHERE C = ? AND PK = \(table).Z_PK) "
                + "WHERE \(q(column.foreignKey)) IS NOT NULL AND Z_PK IN (SELECT PK FROM \(Self.table) WHERE C = ?)",
                [.integer(Int64(id)), .integer(Int64(id))])
        }
        try c.run("DROP TABLE IF EXISTS \(Self.table)")
        columns = []
    }
}
