import Foundation
import StoreAPI

/// Checks that a database holds the tables and columns a layout needs.
enum SQLiteLayoutVerifier {
    static func problems(_ c: SQLiteConnection, _ layout: SQLiteLayout) throws -> [String] {
        let existing = Set(try c.textRows("SELECT name FROM sqlite_schema WHERE type = 'table'"))
        var problems: [String] = []
        for t in [SQLiteLayout.metadataTable, SQLiteLayout.keysTable, SQLiteLayout.entitiesTable, SQLiteLayout.historyTable]
        where !existing.contains(t) {
            problems.append("the table \(t) is missing")
        }
        for root in layout.schema.rootEntities {
            guard let t = layout.tables[root.name] else { continue }
            guard existing.contains(t.name) else {
                problems.append("the table \(t.name) is missing")
                continue
            }
            let columns = Set(try c.textRows("SELECT name FROM pragma_table_info(\(SQLiteLayout.literal(t.name)))"))
            for col in ["_pk", "_ent", "_gid"] + t.columns.map(\.name) where !columns.contains(col) {
                problems.append("the column \(t.name).\(col) is missing")
            }
        }
        for j in layout.joinTables where !existing.contains(j.name) {
            problems.append("the join table \(j.name) is missing")
        }
        return problems
    }
}
