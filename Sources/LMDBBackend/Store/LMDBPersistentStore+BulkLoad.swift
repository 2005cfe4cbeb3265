import CLMDB
import Foundation
import StoreAPI

/// Bulk loads (see ``BulkLoadingStore``): the global-ID index is written in large sorted runs.
///
/// Global IDs are random, so each save's entries land on leaf pages all over the index, and a copy-on-write
/// B-tree rewrites every page it touches: at a million records, saves of a few thousand rewrote most of the index
/// every time. During a bulk load the entries of many saves are kept (``bulkGlobalIDRun`` at most, a few
/// megabytes) and written together, so each page is rewritten once per run instead of once per save.
/// ``finishBulkLoad()`` writes the rest. Until then a lookup by global ID may miss records of the load, and a
/// duplicate global ID is reported by the save (or the finish) that writes its run — after which the store is
/// one to discard, as the transfer engine does with its staging store whenever a load fails.
extension LMDBPersistentStore: BulkLoadingStore {
    /// Global-ID entries kept before they are written: 2¹⁷ entries, 4 MiB (and as much again while sorted). A save
    /// whose entries would not fit writes the run first, so the buffer is allocated once.
    static let bulkGlobalIDRun = 1 << 17
    /// Global-ID entries per transaction when a run is written.
    static let bulkGlobalIDChunk = 1 << 14

    public func beginBulkLoad() throws -> Bool {
        try run {
            guard !isReadOnly else { return false }
            let globalIDs = try env.requireDatabase(DatabaseName.globalIDs)
            let empty = try env.read { txn in try txn.count(globalIDs) == 0 }
            guard empty else { return false }
            return bulkGlobalIDs.withLock { state in
                guard state == nil else { return false }
                var batch = GlobalIDBatch()
                batch.reserve(Self.bulkGlobalIDRun)
                state = batch
                return true
            }
        }
    }

    public func finishBulkLoad() throws {
        try run {
            // Taken out (not copied), so emptying it after the write does not copy the buffer.
            var pending = bulkGlobalIDs.withLock { state in
                defer { state = nil }
                return state
            }
            guard pending != nil else { return }
            do {
                try flushGlobalIDs(&pending, layout)
            } catch {
                bulkGlobalIDs.withLock { $0 = pending }
                throw error
            }
        }
    }

    /// Writes `pending` into the global-ID index and empties it: sorted, then in transactions of
    /// ``bulkGlobalIDChunk`` entries. Each holds the pages of one stretch of the key space, so a transaction's
    /// dirty pages (kept in memory until it commits) stay few however large the index has grown.
    func flushGlobalIDs(_ pending: inout GlobalIDBatch?, _ layout: StoreLayout) throws {
        guard pending?.isEmpty == false else { return }
        pending?.sort()
        let dbi = try env.requireDatabase(DatabaseName.globalIDs)
        try writeSorted(pending?.entries ?? [], dbi, layout)
        // `entries` was only borrowed above, so emptying keeps the buffer instead of copying it.
        pending?.removeAll()
    }

    private func writeSorted(_ ordered: [GlobalIDBatch.Entry], _ dbi: MDB_dbi, _ layout: StoreLayout) throws {
        var start = 0
        while start < ordered.count {
            let end = min(ordered.count, start + Self.bulkGlobalIDChunk)
            try env.reserveMapSpace((end - start) * 64)
            try env.write(timeout: writeTimeout) { txn in
                try GlobalIDBatch.write(ordered[start..<end], txn, dbi, layout: layout, storeURL: storeURL, env: env)
            }
            env.releaseResidentPages(after: (end - start) * 64)
            start = end
        }
    }
}
