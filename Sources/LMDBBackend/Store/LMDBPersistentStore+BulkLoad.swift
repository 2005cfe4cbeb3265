import CLMDB
import Foundation
@_spi(BackendKit) import StoreAPI

/// Bulk loads (see ``BulkLoadingStore``): the global-ID index is written once, from sorted runs merged.
///
/// Global IDs are random, so each save's entries land on leaf pages all over the index, and a copy-on-write
/// B-tree rewrites every page it touches. During a bulk load the entries of many saves are kept
/// (``bulkGlobalIDRun`` at most, a megabyte), sorted, and set aside in a temporary file as a run
/// (``GlobalIDRuns``); ``finishBulkLoad()`` merges the runs and writes the index in key order, which for a new
/// store is one append. (Writing each run into the index as it filled rewrote the whole index once per run: at a
/// million records, eight times.) Until then a lookup by global ID may miss records of the load, and a duplicate
/// global ID is reported by the finish — or by a save that updates or deletes, which writes everything pending
/// first — after which the store is one to discard, as the transfer engine does with its staging store whenever
/// a load fails.
extension LMDBPersistentStore: BulkLoadingStore {
    /// Global-ID entries kept before they are written: 2¹⁵ entries, 1 MiB (and as much again while sorted). A save
    /// whose entries would not fit writes the run first, so the buffer is allocated once. Smaller runs mean more of
    /// them to merge at the finish, which costs little beside what the buffer would add to every large load's peak
    /// memory.
    static let bulkGlobalIDRun = 1 << 15
    /// Global-ID entries per transaction when a run is written.
    static let bulkGlobalIDChunk = 1 << 14

    public func beginBulkLoad() throws -> Bool {
        try run {
            guard !isReadOnly else { return false }
            let globalIDs = try env.requireDatabase(DatabaseName.globalIDs)
            let empty = try env.read { txn in try txn.count(globalIDs) == 0 }
            guard empty else { return false }
            let began = bulkGlobalIDs.withLock { state in
                guard state == nil else { return false }
                var batch = GlobalIDBatch()
                batch.reserve(Self.bulkGlobalIDRun)
                state = batch
                return true
            }
            // The load's commits are flushed to disk once, by the finish (see LMDBEnvironment.setSyncsOnCommit).
            if began { try env.setSyncsOnCommit(false) }
            return began
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
                try? env.setSyncsOnCommit(true)
                throw error
            }
            try env.setSyncsOnCommit(true)
            try env.syncToDisk()
        }
    }

    /// Sorts `pending`'s entries and sets them aside as a run, emptying the buffer for the next. Where no
    /// temporary file can be made or written (no writable temporary directory, a full one), everything pending
    /// goes into the index now instead: slower for a large load, never a failed one.
    func spillGlobalIDs(_ pending: inout GlobalIDBatch?, _ layout: LMDBLayout) throws {
        guard pending?.isEmpty == false else { return }
        pending?.sort()
        do {
            if pending?.spilled == nil { pending?.spilled = try GlobalIDRuns() }
            try pending?.spilled?.append(sortedRun: pending?.entries ?? [])
            pending?.removeAll()
        } catch {
            // A run that failed to be written is still in the buffer (runs are recorded once written whole).
            try flushGlobalIDs(&pending, layout)
        }
    }

    /// Writes everything `pending` holds (set-aside runs and the buffer) into the global-ID index and empties it:
    /// in key order, in transactions of ``bulkGlobalIDChunk`` entries. Each holds the pages of one stretch of the
    /// key space, so a transaction's dirty pages (kept in memory until it commits) stay few however large the
    /// index has grown.
    func flushGlobalIDs(_ pending: inout GlobalIDBatch?, _ layout: LMDBLayout) throws {
        let runs = pending?.spilled
        guard pending?.isEmpty == false || runs?.isEmpty == false else { return }
        pending?.sort()
        let dbi = try env.requireDatabase(DatabaseName.globalIDs)
        let buffered = pending?.entries ?? []
        if let runs, !runs.isEmpty {
            try runs.merge(with: buffered, chunk: Self.bulkGlobalIDChunk) { try writeChunk($0, dbi, layout) }
        } else {
            var start = 0
            while start < buffered.count {
                let end = min(buffered.count, start + Self.bulkGlobalIDChunk)
                try writeChunk(buffered[start..<end], dbi, layout)
                start = end
            }
        }
        // `entries` was only borrowed above, so emptying keeps the buffer instead of copying it.
        pending?.removeAll()
    }

    private func writeChunk(_ ordered: ArraySlice<GlobalIDBatch.Entry>, _ dbi: MDB_dbi, _ layout: LMDBLayout) throws {
        try env.reserveMapSpace(ordered.count * 64)
        try env.write(timeout: writeTimeout) { txn in
            try GlobalIDBatch.write(ordered, txn, dbi, layout: layout, storeURL: storeURL, env: env)
        }
        env.releaseResidentPages(after: ordered.count * 64)
    }
}
