import CSQLite
import Foundation
@_spi(BackendKit) import StoreAPI

/// Bulk loads (see ``BulkLoadingStore``): while a transfer fills a new, empty store, the indexes of its record and
/// join tables (foreign keys, `Z_ENT`, join columns, uniqueness constraints) are dropped and created again at the
/// end, each from one sort instead of a B-tree insert per row; the entity columns of to-one keys (`Z<n>_<REL>`) whose
/// destination is not stored yet are filled by one statement each at the end instead of a lookup when it arrives; the positions of ordered members that arrive
/// after their owner wait beyond a bound in a temporary table, not memory (``CoreDataSpilledPositions``); and commits do not wait for the disk
/// (`synchronous = NORMAL` in WAL mode: a crash loses at most the last commits of a load that is redone anyway).
/// A many-to-many's second side writes no rows: its pairs are checked against the table at the end
/// (``CoreDataDeferredJoin``). A uniqueness constraint the loaded records break, or two sides of a many-to-many
/// that disagree, make ``finishBulkLoad()`` throw, naming it.
extension CoreDataStore: BulkLoadingStore {
    func beginBulkLoad() throws -> Bool {
        try lock.withLock {
            guard deferredIndexes == nil, let (_, writer) = try? requireWriter() else { return false }
            // Before the first commit of the load (dropping the indexes), which then does not wait for the disk either.
            try? writer.db.execute("PRAGMA synchronous = NORMAL")
            var indexes: [String]?
            defer { if indexes == nil { try? writer.db.execute("PRAGMA synchronous = FULL") } }
            try transaction { c, w in
                let tables = Set(w.plan.tables.values.map(\.name)).union(w.plan.joinTables)
                for table in tables {
                    if try c.integer("SELECT EXISTS (SELECT 1 FROM \(CoreDataSQL.quoted(table)))") == 1 { return }
                }
                var found: [(name: String, sql: String)] = []
                try c.query("SELECT name, tbl_name, sql FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL ORDER BY name") { s in
                    guard let name = sqlite3_column_text(s, 0), let table = sqlite3_column_text(s, 1),
                        let sql = sqlite3_column_text(s, 2), tables.contains(String(cString: table))
                    else { return }
                    found.append((String(cString: name), String(cString: sql)))
                }
                for index in found { try w.db.execute("DROP INDEX \(CoreDataSQL.quoted(index.name))") }
                indexes = found.map(\.sql)
            }
            guard let indexes else { return false }
            deferredIndexes = indexes
            return true
        }
    }

    func finishBulkLoad() throws {
        try lock.withLock {
            guard let statements = deferredIndexes else { return }
            deferredIndexes = nil
            let (_, w) = try requireWriter()
            defer { try? w.db.execute("PRAGMA synchronous = FULL") }
            do {
                try transaction { c, w in
                    try finishSpilledPositions(c)
                    // Before the indexes, so that they are built from the final rows.
                    try rowWriter(c, w).fillEntityColumns(only: takeEntityColumnsLeftNull())
                    try globalIDs.finishBulkLoad(c)
                    for sql in statements { try w.db.execute(sql) }
                }
                // After the indexes, so that a failed check leaves a store with all of them.
                for (join, written) in pendingJoins() {
                    guard let c = try? requireWriter().0 else { break }
                    try join.verify(c, written: written)
                }
            } catch let error as StoreError {
                guard case .io(_, _, let reason) = error, reason.contains("UNIQUE constraint failed") else { throw error }
                throw StoreError.corruptStore(url ?? w.db.url, reason: "the loaded records break a uniqueness constraint (\(reason))")
            }
        }
    }
}
