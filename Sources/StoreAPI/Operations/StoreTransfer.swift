import Foundation

/// Progress of a long store operation.
public struct TransferProgress: Sendable, Hashable {
    /// Records written so far.
    public var recordsDone: Int
    /// Records to write in all, when known.
    public var recordsTotal: Int?
    /// The entity being copied.
    public var entity: String?

    /// Creates a progress value.
    public init(recordsDone: Int, recordsTotal: Int?, entity: String?) {
        self.recordsDone = recordsDone
        self.recordsTotal = recordsTotal
        self.entity = entity
    }
}

/// Called with progress; throw (any error) to cancel — the operation then removes everything it staged.
public typealias ProgressHandler = (TransferProgress) throws -> Void

/// The streaming transfer engine: copies a whole store — records with their primary keys and global IDs,
/// relationships and their order, history, metadata — into another store, of the same type or not, in bounded
/// memory.
///
/// Records travel in pages of ``batchSize``: each page is read with ``PersistentStore/scan(entity:after:limit:)``
/// (or streamed from an atomic backend's file) and written with one ``PersistentStore/save(_:)``. An atomic
/// destination is written once, streaming, instead of once per page.
public struct StoreTransfer {
    /// Records per page.
    public var batchSize: Int
    /// Called after every page.
    public var progress: ProgressHandler?

    /// Creates a transfer.
    public init(batchSize: Int = 5_000, progress: ProgressHandler? = nil) {
        self.batchSize = max(1, batchSize)
        self.progress = progress
    }

    /// Copies every record and history transaction of `source` into the empty store `destination`.
    public func copy(from source: any PersistentStore, to destination: any PersistentStore) throws {
        let schema = source.metadata.schema
        let total = progress == nil ? nil : try Self.countRecords(source)
        var done = 0
        try bulkLoading(destination) {
            if let pages = source as? any PageScanningStore, let sink = destination as? any PageInsertingStore {
                return try copyPages(from: pages, to: sink, total: total)
            }
            for entity in schema.entities where !entity.isAbstract {
                try KeyedPages.forEach(
                    size: batchSize, next: { try source.scan(entity: entity.name, after: $0, limit: batchSize) },
                    count: \.count, lastKey: { $0.last?.primaryKey }
                ) { page in
                    try destination.save(StoreChanges(inserted: page))
                    done += page.count
                    try report(done, total, entity.name)
                }
            }
        }
        try copyHistory(from: source, to: destination)
        try carryKeyCounters(source.metadata.primaryKeyCounters, to: destination)
    }

    /// The records of `source`, page by page as bytes (see ``RecordPage``).
    private func copyPages(from source: any PageScanningStore, to destination: any PageInsertingStore, total: Int?) throws {
        var done = 0
        for entity in source.metadata.schema.entities where !entity.isAbstract {
            try KeyedPages.forEach(
                size: batchSize, next: { try source.scanPage(entity: entity.name, after: $0, limit: batchSize) },
                count: \.count, lastKey: { $0.primaryKeys.last }
            ) { page in
                try destination.insert(page)
                done += page.count
                try report(done, total, entity.name)
            }
        }
    }

    /// Moves the destination's key allocators past the source's, so keys of records deleted in the source are not
    /// handed out again in the copy.
    func carryKeyCounters(_ counters: [String: Int64]?, to destination: any PersistentStore) throws {
        for (root, next) in counters ?? [:] {
            let first = try destination.allocatePrimaryKeys(root: root, count: 1)
            if first + 1 < next { _ = try destination.allocatePrimaryKeys(root: root, count: Int(next - first - 1)) }
        }
    }

    /// Copies from an atomic backend's file, streaming it instead of loading it whole.
    public func copy(streamingFrom url: URL, of backend: any AtomicStoreBackend, to destination: any PersistentStore) throws {
        var page: [Record] = []
        var history: [HistoryTransaction] = []
        var counters: [String: Int64]?
        var done = 0
        try bulkLoading(destination) {
            try backend.readStore(at: url) { element in
                switch element {
                case .metadata(let m): counters = m.primaryKeyCounters
                case .record(let r):
                    page.append(r)
                    if page.count >= batchSize {
                        try destination.save(StoreChanges(inserted: page))
                        done += page.count
                        try report(done, nil, r.entity)
                        page.removeAll(keepingCapacity: true)
                    }
                case .history(let t):
                    history.append(t)
                }
            }
            if !page.isEmpty {
                try destination.save(StoreChanges(inserted: page))
                done += page.count
                try report(done, done, nil)
            }
        }
        if !history.isEmpty { try destination.save(StoreChanges(history: history)) }
        try carryKeyCounters(counters, to: destination)
    }

    /// Writes `source` as one atomic file at `url` (a staging path) with `backend`.
    public func write(_ source: any PersistentStore, metadata: StoreMetadata, as backend: any AtomicStoreBackend, to url: URL) throws {
        let contents = PagedContents(source: source, metadata: metadata, batchSize: batchSize, transfer: self,
                                     total: progress == nil ? nil : try Self.countRecords(source))
        try backend.writeStore(contents, to: url)
    }

    func copyHistory(from source: any PersistentStore, to destination: any PersistentStore) throws {
        var after: Int64?
        while true {
            let page = try source.history(after: after)
            guard let last = page.last else { break }
            // History arrives in token order; write it in pages so a long history stays in bounded memory.
            for chunk in stride(from: 0, to: page.count, by: batchSize) {
                try destination.save(StoreChanges(history: Array(page[chunk..<min(chunk + batchSize, page.count)])))
            }
            after = last.token
            if page.count < batchSize { break }
        }
    }

    fileprivate func report(_ done: Int, _ total: Int?, _ entity: String?) throws {
        try Self.report(to: progress, done, total, entity)
    }

    /// Tells `progress` how far a paged pass has come; whatever it throws cancels the pass
    /// (``StoreError/cancelled``).
    static func report(to progress: ProgressHandler?, _ done: Int, _ total: Int?, _ entity: String?) throws {
        guard let progress else { return }
        do { try progress(TransferProgress(recordsDone: done, recordsTotal: total, entity: entity)) } catch {
            throw StoreError.cancelled
        }
    }

    /// The number of records in a store (sub-entities counted once).
    public static func countRecords(_ store: any PersistentStore) throws -> Int {
        try store.metadata.schema.entities.filter { !$0.isAbstract }.reduce(0) { n, e in
            n + (try store.count(FetchRequest(entity: e.name, includesSubentities: false)))
        }
    }
}

/// A source store presented as ``AtomicStoreContents``, read page by page while the destination writes.
private struct PagedContents: AtomicStoreContents, @unchecked Sendable {
    // @unchecked: the transfer (and its progress closure) is used only on the writing thread, synchronously.
    let source: any PersistentStore
    let metadata: StoreMetadata
    let batchSize: Int
    let transfer: StoreTransfer
    let total: Int?

    func forEachRecord(_ body: (Record) throws -> Void) throws {
        var done = 0
        for entity in metadata.schema.entities where !entity.isAbstract {
            try KeyedPages.forEach(
                size: batchSize, next: { try source.scan(entity: entity.name, after: $0, limit: batchSize) },
                count: \.count, lastKey: { $0.last?.primaryKey }
            ) { page in
                for r in page { try body(r) }
                done += page.count
                try transfer.report(done, total, entity.name)
            }
        }
    }

    /// Pages through keys only: the source's records are decoded once, in ``forEachRecord(_:)``.
    func forEachPrimaryKey(_ body: (_ entity: String, _ primaryKey: Int64) throws -> Void) throws {
        for entity in metadata.schema.entities where !entity.isAbstract {
            try KeyedPages.forEach(
                size: batchSize, next: { try source.scanKeys(entity: entity.name, after: $0, limit: batchSize) },
                count: \.count, lastKey: { $0.last }
            ) { keys in
                for k in keys { try body(entity.name, k) }
            }
        }
    }

    func forEachHistoryTransaction(_ body: (HistoryTransaction) throws -> Void) throws {
        for t in try source.history(after: nil) { try body(t) }
    }
}

/// The loop of every paged pass over a store's records (copy, write, export, verify): pages in key order, each
/// asked for after the last key of the one before.
enum KeyedPages {
    /// Calls `body` with each non-empty page `next` returns, given the last key of the page before (`nil` for
    /// the first); stops after an empty page or one shorter than `size`.
    static func forEach<Page>(
        size: Int, next: (_ after: Int64?) throws -> Page, count: (Page) -> Int, lastKey: (Page) -> Int64?,
        _ body: (Page) throws -> Void
    ) throws {
        var after: Int64?
        while true {
            let page = try next(after)
            let n = count(page)
            if n == 0 { return }
            try body(page)
            guard n >= size, let last = lastKey(page) else { return }
            after = last
        }
    }
}
