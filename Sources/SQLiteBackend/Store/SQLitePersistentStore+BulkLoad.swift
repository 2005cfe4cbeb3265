import CSQLite
import Foundation
@_spi(BackendKit) import StoreAPI

/// Bulk loads (see ``BulkLoadingStore``): the secondary indexes of the record and join tables — the unique index
/// on global IDs, entity-code and foreign-key indexes, uniqueness constraints, the join tables' `dst` indexes — are
/// dropped while a new store is filled and created again, each from one sort, at the end. Meanwhile saves add join
/// rows without reading them (`SQLiteSaveWriter.addJoinRows`), and the unordered `dst` side of a many-to-many writes
/// none: its links are checked against the rows the other side wrote when the load finishes (``DeferredLinks``), so
/// until then reads may not list them.
///
/// Maintaining them row by row costs a B-tree descent per index and row (for global IDs, at random places, so
/// the page cache must hold the whole index to stay fast); building one sorts the rows once, in memory bounded by
/// the sorter, spilling to temporary files beyond it. The statements come from `sqlite_master`, so whatever the
/// layout created is recreated exactly.
extension SQLitePersistentStore: BulkLoadingStore {
    func beginBulkLoad() throws -> Bool {
        try withConnection { c, s in
            guard !isReadOnly, s.deferredIndexes == nil else { return false }
            let began = try c.transaction(write: true) {
                // Join and order tables lose theirs too: a bulk load's saves add join rows without reading them
                // (see SQLiteSaveWriter.addJoinRows), so nothing looks rows up by `dst` meanwhile.
                let joinTables = Set(layout.joinTables.map(\.name))
                let tables = Set(layout.tables.values.map(\.name)).union(joinTables)
                var indexes: [(name: String, table: String, sql: String)] = []
                try c.withStatement("SELECT name, tbl_name, sql FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL ORDER BY name") { st in
                    while try st.step() {
                        let table = st.text(1)
                        if tables.contains(table) { indexes.append((st.text(0), table, st.text(2))) }
                    }
                }
                for table in tables.union(joinTables).sorted() {
                    let empty = try c.int64("SELECT NOT EXISTS (SELECT 1 FROM \(SQLiteLayout.quote(table)))") == 1
                    if !empty { return false }
                }
                for index in indexes { try c.exec("DROP INDEX \(SQLiteLayout.quote(index.name))", "deferring index \(index.name)") }
                s.deferredIndexes = indexes.map(\.sql)
                s.deferredLinks = [:]
                return true
            }
            if began { Self.setCache(Self.bulkLoadCacheKiB, c) }
            return began
        }
    }

    func finishBulkLoad() throws {
        try withConnection { c, s in
            guard let statements = s.deferredIndexes else { return }
            Self.setCache(Self.indexBuildCacheKiB, c)
            c.releaseMemory()
            do {
                try c.transaction(write: true) {
                    for sql in statements { try c.exec(sql, "building an index deferred by a bulk load") }
                }
            } catch let error as StoreError {
                throw Self.describeIndexFailure(error, fileURL)
            }
            s.deferredIndexes = nil
            Self.setCache(ConnectionSettings.cacheKiB, c)
            // After the indexes, so that a failed check leaves a store with all of them.
            let links = s.deferredLinks
            s.deferredLinks = nil
            for l in (links ?? [:]).values.sorted(by: { $0.table < $1.table }) { try l.verify(c) }
        }
    }

    /// The page cache while loading: rows are appended in key order, so a small cache serves the inserts. This is
    /// what bounds the load's memory, whatever the store's size.
    static let bulkLoadCacheKiB = 16 * 1024

    /// The page cache while the indexes are built. SQLite's sorter holds up to the cache size of keys in memory
    /// before it spills a sorted run to a temporary file, and it does so beside the cache. With the whole load's
    /// cache the sorter of a small store never fills, so the build's memory grows with the store; with a quarter of
    /// it the sorter fills early and spills, and a large store's build needs hardly more memory than a small one's.
    static let indexBuildCacheKiB = bulkLoadCacheKiB / 4

    /// Sets the page cache; a pragma that cannot fail on an open connection, and only a matter of speed if it did.
    private static func setCache(_ kib: Int, _ c: SQLiteConnection) {
        try? c.exec("PRAGMA cache_size = -\(kib)")
    }

    /// A unique index that cannot be built means the loaded records broke it: say which, in the store's terms.
    private static func describeIndexFailure(_ error: StoreError, _ url: URL) -> StoreError {
        let text = "\(error)"
        guard text.contains("UNIQUE constraint failed") else { return error }
        if text.contains("._gid") {
            return .corruptStore(url, reason: "two of the loaded records have the same global ID (\(text))")
        }
        return .corruptStore(url, reason: "the loaded records break a uniqueness constraint (\(text))")
    }
}
