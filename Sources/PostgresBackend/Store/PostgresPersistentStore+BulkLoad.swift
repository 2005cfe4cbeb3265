import Foundation
@_spi(BackendKit) import StoreAPI

extension PostgresPersistentStore: BulkLoadingStore {
    /// Starts a bulk load of an empty store (a conversion, copy or restore onto the server fills a new store between
    /// this and ``finishBulkLoad()``). Nothing is deferred: saves keep every index and check; the load only ends
    /// with fresh planner statistics. `false` for a store that holds records.
    func beginBulkLoad() throws -> Bool {
        try refuseIfReadOnlyForBulkLoad()
        return try withConnectionForBulkLoad { c in
            for root in layout.schema.rootEntities {
                guard let t = layout.tables[root.name] else { continue }
                let rows = try c.execute("SELECT EXISTS (SELECT 1 FROM \(PostgresLayout.quote(t.name)))")
                if rows.text(0, 0) == "t" { return false }
            }
            return true
        }
    }

    /// Analyzes every table of the store, so that the planner knows the loaded rows: without statistics it may
    /// plan a page read (`_pk > … ORDER BY _pk LIMIT …`) as a scan and sort of the whole table, until autovacuum
    /// gets round to the new tables.
    func finishBulkLoad() throws {
        try withConnectionForBulkLoad { c in
            let tables = PostgresStoreBackend.tableColumns(layout).map(\.0)
            try c.execute("ANALYZE " + tables.map(PostgresLayout.quote).joined(separator: ", "))
        }
    }
}
