import Foundation
import Synchronization

/// A complete store held in memory: records per hierarchy, key allocators, history and metadata.
///
/// It is the in-memory backend's store and the engine behind every atomic backend (which loads a file into one and
/// writes it back on save). Queries run through ``PredicateEvaluator``; saves are atomic because they are applied
/// to a copy that replaces the state only when every change applied cleanly.
@_spi(BackendKit) public final class MemoryStore: PersistentStore, Sendable {
    struct State {
        var metadata: StoreMetadata
        var tables: [String: [Int64: Record]] = [:]
        var nextKey: [String: Int64] = [:]
        var history: [HistoryTransaction] = []
    }

    /// The records of one in-memory store. Handles opened on the same named store share it.
    final class Storage: Sendable {
        let state: Mutex<State>
        init(_ state: State) { self.state = Mutex(state) }
    }

    public let url: URL?
    private let storage: Storage
    private let isClosed = Mutex(false)
    /// Called with the would-be new state before it replaces the current one; an atomic backend writes its file
    /// here, and a throw abandons the save.
    private let willCommit: (@Sendable (MemoryStore.Snapshot) throws -> Void)?
    /// Called once by ``close()`` (an atomic backend releases its writer lock here).
    private let onClose: (@Sendable () -> Void)?

    /// Creates an empty store with `metadata`.
    public convenience init(url: URL?, metadata: StoreMetadata) {
        self.init(url: url, storage: Storage(State(metadata: metadata)), willCommit: nil)
    }

    init(
        url: URL?, storage: Storage, willCommit: (@Sendable (MemoryStore.Snapshot) throws -> Void)?,
        onClose: (@Sendable () -> Void)? = nil
    ) {
        self.url = url
        self.storage = storage
        self.willCommit = willCommit
        self.onClose = onClose
    }

    /// The store's metadata, with its key counters as they are now (as the SQLite and LMDB stores report theirs), so
    /// a copy does not hand out again the keys of records deleted here.
    public var metadata: StoreMetadata {
        storage.state.withLock { s in
            var metadata = s.metadata
            if !s.nextKey.isEmpty { metadata.primaryKeyCounters = s.nextKey }
            return metadata
        }
    }

    private var schema: Schema { metadata.schema }

    /// An immutable view of a whole store, for writing it out.
    public struct Snapshot: Sendable, AtomicStoreContents {
        public let metadata: StoreMetadata
        let tables: [String: [Int64: Record]]
        public let history: [HistoryTransaction]

        public func forEachRecord(_ body: (Record) throws -> Void) throws {
            for entity in metadata.schema.entities {
                guard let table = tables[entity.rootName] else { continue }
                for key in table.keys.sorted() {
                    if let r = table[key], r.entity == entity.name { try body(r) }
                }
            }
        }

        public func forEachHistoryTransaction(_ body: (HistoryTransaction) throws -> Void) throws {
            for t in history { try body(t) }
        }

        /// The number of records.
        public var recordCount: Int { tables.values.reduce(0) { $0 + $1.count } }
    }

    /// An independent in-memory copy of the store as of now (a consistent snapshot for backups and transfers).
    public func detachedCopy() -> MemoryStore {
        MemoryStore(url: nil, storage: Storage(storage.state.withLock { $0 }), willCommit: nil)
    }

    /// The whole store as of now.
    public func snapshot() -> Snapshot {
        storage.state.withLock { Snapshot(metadata: $0.metadata, tables: $0.tables, history: $0.history) }
    }

    private func checkOpen() throws {
        if isClosed.withLock({ $0 }) {
            throw StoreError.io(url, operation: "using the store", reason: "the store is closed")
        }
    }

    private func candidates(for request: FetchRequest, in s: State) throws -> [Record] {
        let entity = try s.metadata.schema.requireEntity(request.entity)
        let names = request.includesSubentities ? Set(entity.hierarchyNames) : [entity.name]
        return (s.tables[entity.rootName] ?? [:]).values.filter { names.contains($0.entity) }
    }

    private func evaluator(_ s: State) -> PredicateEvaluator {
        let tables = s.tables
        return PredicateEvaluator(schema: s.metadata.schema) { root, keys in
            let t = tables[root] ?? [:]
            return keys.compactMap { t[$0] }
        }
    }

    public func fetch(_ request: FetchRequest) throws -> [Record] {
        try checkOpen()
        let s = storage.state.withLock { $0 }
        return try evaluator(s).execute(request, candidates: try candidates(for: request, in: s))
    }

    public func count(_ request: FetchRequest) throws -> Int {
        var r = request
        r.sortDescriptors = []
        return try fetch(r).count
    }

    public func records(withKeys keys: [Int64], root: String) throws -> [Record] {
        try storage.state.withLock { s in
            try checkOpen()
            let t = s.tables[root] ?? [:]
            return keys.compactMap { t[$0] }
        }
    }

    public func scan(entity: String, after primaryKey: Int64?, limit: Int) throws -> [Record] {
        try storage.state.withLock { s in
            try checkOpen()
            let e = try s.metadata.schema.requireEntity(entity)
            let t = s.tables[e.rootName] ?? [:]
            let lower = primaryKey ?? .min
            return t.values.filter { $0.entity == entity && $0.primaryKey > lower }
                .sorted { $0.primaryKey < $1.primaryKey }
                .prefix(limit).map { $0 }
        }
    }

    public func save(_ changes: StoreChanges) throws {
        try storage.state.withLock { s in
            try checkOpen()
            var next = s
            try Self.apply(changes, to: &next, url: url)
            if let willCommit {
                var metadata = next.metadata
                metadata.primaryKeyCounters = next.nextKey
                try willCommit(Snapshot(metadata: metadata, tables: next.tables, history: next.history))
            }
            s = next
        }
    }

    static func apply(_ changes: StoreChanges, to s: inout State, url: URL?) throws {
        if let m = changes.metadata { s.metadata = m }
        let schema = s.metadata.schema
        for key in changes.deleted {
            let root = try schema.requireEntity(key.entity).rootName
            s.tables[root]?.removeValue(forKey: key.primaryKey)
        }
        for r in changes.updated {
            let root = try schema.requireEntity(r.entity).rootName
            guard s.tables[root]?[r.primaryKey] != nil else {
                throw StoreError.objectNotFound(ObjectID(storeUUID: s.metadata.storeUUID, entity: r.entity, primaryKey: r.primaryKey))
            }
            s.tables[root, default: [:]][r.primaryKey] = r
        }
        for r in changes.inserted {
            let root = try schema.requireEntity(r.entity).rootName
            if s.tables[root]?[r.primaryKey] != nil {
                throw StoreError.io(url, operation: "insert", reason: "primary key \(r.primaryKey) of \(root) is already used")
            }
            s.tables[root, default: [:]][r.primaryKey] = r
            s.nextKey[root] = max(s.nextKey[root] ?? 1, r.primaryKey + 1)
        }
        var last = s.history.last?.token ?? 0
        for var t in changes.history {
            if t.token == HistoryTransaction.assignToken { t.token = last + 1 }
            guard t.token > last else {
                throw StoreError.io(url, operation: "appending history", reason: "token \(t.token) is not after \(last)")
            }
            last = t.token
            s.history.append(t)
        }
    }

    public func allocatePrimaryKeys(root: String, count: Int) throws -> Int64 {
        try storage.state.withLock { s in
            try checkOpen()
            let first = s.nextKey[root] ?? 1
            s.nextKey[root] = first + Int64(max(count, 0))
            return first
        }
    }

    public func history(after token: Int64?) throws -> [HistoryTransaction] {
        try storage.state.withLock { s in
            try checkOpen()
            return s.history.filter { $0.token > (token ?? .min) }
        }
    }

    public func close() throws {
        let wasOpen = isClosed.withLock { closed in
            defer { closed = true }
            return !closed
        }
        if wasOpen { onClose?() }
    }

    /// Loads records and history into a new state (used by atomic backends after reading a file).
    static func loadState(metadata: StoreMetadata, records: [Record], history: [HistoryTransaction], url: URL?) throws -> State {
        var s = State(metadata: metadata)
        try apply(StoreChanges(inserted: records, history: history), to: &s, url: url)
        // Keys of records deleted before the last save stay used.
        for (root, next) in metadata.primaryKeyCounters ?? [:] { s.nextKey[root] = max(s.nextKey[root] ?? 1, next) }
        return s
    }
}
