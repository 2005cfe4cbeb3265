import Foundation

/// A store that can take its first, large load faster by building its secondary indexes once at the end instead
/// of maintaining them record by record.
///
/// The transfer engine (migrate, replace, backup, restore, convert) fills a new, empty store in a staging
/// location; when that store conforms, it calls ``beginBulkLoad()`` before the first record and
/// ``finishBulkLoad()`` after the last — also after a failure, so the store is never left without its indexes.
/// For SQLite this turns a B-tree insert per record and index (random, for the global-ID index) into one sort per
/// index: faster, and in memory bounded by the sorter rather than by a page cache large enough for the index.
///
/// Between the two calls a store may check less than usual (a duplicate global ID is found when its index is
/// built, by ``finishBulkLoad()``; in SQLite, that the two sides of a many-to-many list the same links) and reads may
/// not see all of the load yet (LMDB: lookups by global ID; SQLite: one side of a many-to-many). It must
/// stay readable and writable — a save that updates or deletes finds everything in place (SQLite first makes its
/// many-to-many check, and refuses the save while the other side of a deferred link is not loaded yet) — and every
/// check it deferred must be made by ``finishBulkLoad()``, which throws if the loaded data breaks one.
@_spi(BackendKit) public protocol BulkLoadingStore: PersistentStore {
    /// Prepares an empty store for a bulk load. Returns `false`, changing nothing, when the store is not empty
    /// (a bulk load only pays off, and is only safe to defer checks for, on a new store).
    func beginBulkLoad() throws -> Bool

    /// Builds what ``beginBulkLoad()`` deferred and makes every check it skipped; throws, naming the problem,
    /// when the loaded records break one. Does nothing when no bulk load is in progress.
    func finishBulkLoad() throws
}

extension StoreTransfer {
    /// Runs `load` between ``BulkLoadingStore/beginBulkLoad()`` and ``BulkLoadingStore/finishBulkLoad()`` when the
    /// destination supports them. After a failure the deferred work is still finished (best effort) before the
    /// error is passed on.
    func bulkLoading(_ destination: any PersistentStore, _ load: () throws -> Void) throws {
        guard let bulk = destination as? any BulkLoadingStore, try bulk.beginBulkLoad() else { return try load() }
        do {
            try load()
        } catch {
            try? bulk.finishBulkLoad()
            throw error
        }
        try bulk.finishBulkLoad()
    }
}
