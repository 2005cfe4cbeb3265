import CLMDB
import Foundation
@_spi(BackendKit) import StoreAPI
import Synchronization

/// An open LMDB store (see ``LMDBStoreBackend`` for the on-disk form).
///
/// Every read runs in its own read-only transaction — a consistent snapshot that never blocks the writer or other
/// processes — and every save in one write transaction, so a save is stored entirely or not at all. Stores opened
/// on the same files in one process share one liblmdb environment. Methods may be called from any thread.
final class LMDBPersistentStore: PersistentStore, PageScanningStore, PageInsertingStore, Sendable {
    /// The store URL: the directory, or the data file in the file form.
    public let url: URL?
    /// The store URL (directory, or data file in the file form).
    let storeURL: URL
    let env: LMDBEnvironment
    /// Saves are refused (read-only description or read-only files).
    public let isReadOnly: Bool
    /// Seconds a save waits for other writers before failing with ``StoreError/locked(_:reason:)``
    /// (``StoreOptions/timeout``).
    let writeTimeout: Double
    private let initialLayout: LMDBLayout
    private let closed = Mutex(false)
    /// During a bulk load: the global-ID entries saved but not yet written (see ``beginBulkLoad()``).
    let bulkGlobalIDs = Mutex<GlobalIDBatch?>(nil)

    init(url: URL, env: LMDBEnvironment, layout: LMDBLayout, readOnly: Bool, timeout: Double) {
        self.writeTimeout = timeout
        self.url = url
        self.storeURL = url
        self.env = env
        self.initialLayout = layout
        self.isReadOnly = readOnly
    }

    deinit {
        // A store dropped without close() still gives its reference back.
        if !closed.withLock({ $0 }) { EnvironmentRegistry.release(env) }
    }

    /// The data file, named in errors about the store's contents.
    var dataFile: URL { env.location.dataFile }

    /// The current layout (shared with the other stores on the environment, so a metadata change shows in all).
    var layout: LMDBLayout { env.layout ?? initialLayout }

    /// The metadata as of the last save (a change another process made is noticed at the next save).
    public var metadata: StoreMetadata { layout.metadata }

    /// The current size of the memory map in bytes (it grows by doubling as the store fills).
    public var mapSize: Int { env.mapSize }

    // MARK: Errors

    /// Runs `body` on an open store and turns engine failures into typed errors naming the store.
    func run<T>(_ body: () throws -> T) throws -> T {
        if closed.withLock({ $0 }) {
            throw StoreError.io(storeURL, operation: "using the store", reason: "the store is closed")
        }
        do {
            return try body()
        } catch let f as LMDBFailure {
            throw f.storeError(storeURL)
        } catch let m as ByteReader.Malformed {
            throw StoreError.corruptStore(dataFile, reason: m.reason)
        }
    }

    func entityIDs(for entity: Entity, includesSubentities: Bool, in layout: LMDBLayout) -> Set<UInt32> {
        let names = includesSubentities ? entity.hierarchyNames : [entity.name]
        return Set(names.compactMap { layout.entityIDs[$0] })
    }

    // MARK: Reading

    /// What a fetch or count reads with, inside one read transaction.
    private struct Query {
        let layout: LMDBLayout
        let entity: Entity
        /// The entity IDs of the records asked for (the entity's, and its sub-entities' when they are included).
        let ids: Set<UInt32>
        let reader: LMDBRecordReader

        /// An evaluator that follows relationships through this transaction.
        var evaluator: PredicateEvaluator {
            let reader = reader
            return PredicateEvaluator(schema: layout.schema) { root, keys in try reader.records(keys, root: root) }
        }

        /// The records a uniqueness index names for `plan`'s keys, among the asked-for entities.
        func indexed(_ plan: IndexPlanner.Plan) throws -> [Record] {
            var candidates: [Record] = []
            for key in plan.keys {
                guard let pk = try reader.indexedKey(plan.index, key: key),
                    let r = try reader.record(pk, root: entity.rootName),
                    let id = layout.entityIDs[r.entity], ids.contains(id)
                else { continue }
                candidates.append(r)
            }
            return candidates
        }
    }

    /// Runs `body` with `request`'s entity and a reader, in one read transaction.
    private func withQuery<T>(_ request: FetchRequest, _ body: (Query) throws -> T) throws -> T {
        try run {
            let layout = self.layout
            let entity = try layout.schema.requireEntity(request.entity)
            let ids = entityIDs(for: entity, includesSubentities: request.includesSubentities, in: layout)
            return try env.read { txn in
                try body(Query(layout: layout, entity: entity, ids: ids, reader: LMDBRecordReader(txn: txn, env: env, layout: layout, file: dataFile)))
            }
        }
    }

    /// Evaluates the request in one read transaction. Equalities on uniquely constrained attributes are answered
    /// from their index; without sort descriptors records stream in key order and the scan stops at the limit.
    public func fetch(_ request: FetchRequest) throws -> [Record] {
        try withQuery(request) { q in
            let evaluator = q.evaluator
            // Schema errors in the request are reported whatever records exist, as the reference does.
            try evaluator.validate(request)
            if let plan = IndexPlanner.plan(request.predicate, entity: q.entity, layout: q.layout) {
                return try evaluator.execute(request, candidates: q.indexed(plan))
            }
            // The predicate is tested while scanning, on records decoded only as far as it reads.
            let predicate = try request.predicate.map { try evaluator.prepare($0, entity: q.entity.name) }
            if request.sortDescriptors.isEmpty {
                return try streamInKeyOrder(request, q, predicate: predicate)
            }
            var matches: [Record] = []
            try q.reader.scan(root: q.entity.rootName, entityIDs: q.ids, matching: predicate) { matches.append($0); return true }
            var ordering = request
            ordering.predicate = nil
            return try evaluator.execute(ordering, candidates: matches)
        }
    }

    /// Without sort descriptors key order is the result order: filter while scanning and stop once the slice is
    /// full, so a small page of a large store reads little.
    private func streamInKeyOrder(_ request: FetchRequest, _ q: Query, predicate: PreparedPredicate?) throws -> [Record] {
        if let limit = request.limit, limit <= 0 { return [] }
        var out: [Record] = []
        var skipped = 0
        try q.reader.scan(root: q.entity.rootName, entityIDs: q.ids, matching: predicate) { record in
            if skipped < request.offset {
                skipped += 1
                return true
            }
            out.append(record)
            if let limit = request.limit, out.count >= limit { return false }
            return true
        }
        return out
    }

    /// Counts without decoding records when there is no predicate, and without decoding the matches when there is
    /// one (each record is tested on its partial decode, as ``fetch(_:)`` tests it) unless a uniqueness index
    /// answers it.
    public func count(_ request: FetchRequest) throws -> Int {
        let total = try withQuery(request) { q -> Int in
            guard let predicate = request.predicate else {
                // A root without sub-entities is its whole hierarchy whether or not they are asked for.
                let wholeHierarchy = q.entity.name == q.entity.rootName
                    && (request.includesSubentities || q.entity.hierarchyNames.count == 1)
                if wholeHierarchy, let dbi = q.reader.recordsDatabase(q.entity.rootName) { return try q.reader.txn.count(dbi) }
                return try q.reader.count(root: q.entity.rootName, entityIDs: q.ids)
            }
            let evaluator = q.evaluator
            let prepared = try evaluator.prepare(predicate, entity: q.entity.name)
            if let plan = IndexPlanner.plan(predicate, entity: q.entity, layout: q.layout) {
                return try q.indexed(plan).filter { try prepared.matches($0) }.count
            }
            var matches = 0
            try q.reader.scan(root: q.entity.rootName, entityIDs: q.ids, matching: prepared, decodingMatches: false) { _ in
                matches += 1
                return true
            }
            return matches
        }
        var n = max(0, total - max(0, request.offset))
        if let limit = request.limit { n = min(n, max(0, limit)) }
        return n
    }

    /// Point lookups in one read transaction, in the order asked.
    public func records(withKeys keys: [Int64], root: String) throws -> [Record] {
        try run {
            let layout = self.layout
            return try env.read { txn in
                try LMDBRecordReader(txn: txn, env: env, layout: layout, file: dataFile).records(keys, root: root)
            }
        }
    }

    /// A cursor positioned after `primaryKey` (`MDB_SET_RANGE`), reading only what the page needs.
    public func scan(entity: String, after primaryKey: Int64?, limit: Int) throws -> [Record] {
        try collect(entity, limit: limit) { reader, root, id, add in
            try reader.scan(root: root, entityIDs: [id], after: primaryKey, add)
        }
    }

    /// The records ``scan(entity:after:limit:)`` returns, as a page: the stored values are checked as a scan
    /// checks them and copied as they are (the stored form is the page form).
    public func scanPage(entity: String, after primaryKey: Int64?, limit: Int) throws -> RecordPage {
        try run {
            let layout = self.layout
            let e = try layout.schema.requireEntity(entity)
            // Room for the values sized by the entity's attribute count: a page started at the default size is
            // copied each time it outgrows its buffer, several times over for a wide entity.
            var page = RecordPage(entity: e.name, capacity: min(max(limit, 0), 4096),
                                  bytesPerRecord: 16 * max(1, e.attributes.count))
            guard limit > 0, let id = layout.entityIDs[e.name] else { return page }
            return try env.read { txn in
                try LMDBRecordReader(txn: txn, env: env, layout: layout, file: dataFile)
                    .scanRaw(root: e.rootName, entityIDs: [id], after: primaryKey) { pk, bytes in
                        do {
                            try RecordCodec.append(bytes, primaryKey: pk, entity: e, entityID: id, to: &page)
                        } catch let m as ByteReader.Malformed {
                            throw StoreError.corruptStore(dataFile, reason: "record \(e.rootName)/p\(pk): \(m.reason)")
                        }
                        return page.count < limit
                    }
                return page
            }
        }
    }

    public func scanKeys(entity: String, after primaryKey: Int64?, limit: Int) throws -> [Int64] {
        try collect(entity, limit: limit) { reader, root, id, add in
            try reader.scanKeys(root: root, entityIDs: [id], after: primaryKey, add)
        }
    }

    /// Up to `limit` of what `walk` hands `add` for `entity`'s records (hierarchy `root`, entity ID `id`), in one
    /// read transaction; `add` says whether to go on.
    private func collect<Item>(
        _ entity: String, limit: Int,
        _ walk: (LMDBRecordReader, _ root: String, _ id: UInt32, _ add: (Item) -> Bool) throws -> Void
    ) throws -> [Item] {
        try run {
            let layout = self.layout
            let e = try layout.schema.requireEntity(entity)
            guard limit > 0, let id = layout.entityIDs[e.name] else { return [] }
            return try env.read { txn in
                var out: [Item] = []
                out.reserveCapacity(min(limit, 4096))
                try walk(LMDBRecordReader(txn: txn, env: env, layout: layout, file: dataFile), e.rootName, id) { item in
                    out.append(item)
                    return out.count < limit
                }
                return out
            }
        }
    }

    /// The record with a global identifier, found through the global-ID index.
    public func record(globalID: UUID) throws -> Record? {
        try run {
            let layout = self.layout
            return try env.read { txn in
                guard let dbi = env.database(DatabaseName.globalIDs) else { return nil }
                let located: (entity: Entity, primaryKey: Int64)? = try withUnsafeBytes(of: globalID.uuid) { key in
                    guard let v = try txn.get(dbi, key) else { return nil }
                    return GlobalIDEntry.decode(v, layout: layout)
                }
                guard let located else { return nil }
                return try LMDBRecordReader(txn: txn, env: env, layout: layout, file: dataFile)
                    .record(located.primaryKey, root: located.entity.rootName)
            }
        }
    }

    /// The history database from the first token after `token`.
    public func history(after token: Int64?) throws -> [HistoryTransaction] {
        try run {
            if let token, token == .max { return [] }
            return try env.read { txn in
                guard let dbi = env.database(DatabaseName.history) else { return [] }
                var out: [HistoryTransaction] = []
                try txn.withCursor(dbi) { cursor in
                    let start = try token.map { t in try OrderedKey.with(t + 1) { try cursor.seek(atLeast: $0) } } ?? cursor.move(MDB_FIRST)
                    try cursor.forEach(from: start) { _, value in
                        out.append(try HistoryTransaction.decode(Data(value), url: dataFile))
                        return true
                    }
                }
                return out
            }
        }
    }

    // MARK: Keys

    /// Reserves keys in a write transaction of its own, so other processes never get the same keys; the range
    /// also starts above every stored key of the hierarchy.
    public func allocatePrimaryKeys(root: String, count: Int) throws -> Int64 {
        try run {
            guard !isReadOnly else { throw StoreError.readOnly(storeURL, reason: "the store was opened read-only") }
            let layout = self.layout
            return try env.write(timeout: writeTimeout) { txn in
                let keys = try env.requireDatabase(DatabaseName.keys)
                let reader = LMDBRecordReader(txn: txn, env: env, layout: layout, file: dataFile)
                var first = try KeyAllocator.stored(txn, keys, root: root) ?? 1
                if let last = try reader.lastKey(root: root), last >= first {
                    guard last < .max else { throw StoreError.io(storeURL, operation: "allocating keys", reason: "the keys of \(root) are exhausted") }
                    first = last + 1
                }
                let (next, overflow) = first.addingReportingOverflow(Int64(max(0, count)))
                guard !overflow else { throw StoreError.io(storeURL, operation: "allocating \(count) keys", reason: "the keys of \(root) are exhausted") }
                try KeyAllocator.store(txn, keys, root: root, next: next)
                return first
            }
        }
    }

    // MARK: Closing

    /// Gives the environment back; the last store on the files closes it. Idempotent.
    public func close() throws {
        let wasOpen = closed.withLock { isClosed in
            defer { isClosed = true }
            return !isClosed
        }
        if wasOpen { EnvironmentRegistry.release(env) }
    }
}

/// The key allocator database: root name → next primary key.
enum KeyAllocator {
    static func stored(_ txn: LMDBTransaction, _ dbi: MDB_dbi, root: String) throws -> Int64? {
        let key = Array(root.utf8)
        return try key.withUnsafeBytes { k in try txn.get(dbi, k).flatMap { OrderedKey.decode($0) } }
    }

    static func store(_ txn: LMDBTransaction, _ dbi: MDB_dbi, root: String, next: Int64) throws {
        try txn.put(dbi, key: Array(root.utf8), value: OrderedKey.bytes(next))
    }
}

/// A global-ID index entry: entity ID (4 bytes, big-endian) + primary key (8 ordered bytes).
enum GlobalIDEntry {
    /// The 12 bytes of an entry, kept on the stack (the save path writes one per record).
    struct Bytes {
        private var storage: (UInt32, UInt32, UInt32) = (0, 0, 0)

        init(entityID: UInt32, primaryKey: Int64) {
            withUnsafeMutableBytes(of: &storage) { p in
                p.storeBytes(of: entityID.bigEndian, toByteOffset: 0, as: UInt32.self)
                p.storeBytes(of: OrderedKey.encode(primaryKey), toByteOffset: 4, as: UInt64.self)
            }
        }

        mutating func withBytes<T>(_ body: (UnsafeRawBufferPointer) throws -> T) rethrows -> T {
            try withUnsafeBytes(of: &storage) { try body(UnsafeRawBufferPointer(rebasing: $0[0..<12])) }
        }
    }

    static func decode(_ bytes: UnsafeRawBufferPointer, layout: LMDBLayout) -> (entity: Entity, primaryKey: Int64)? {
        guard bytes.count == 12 else { return nil }
        var id: UInt32 = 0
        withUnsafeMutableBytes(of: &id) { $0.copyMemory(from: UnsafeRawBufferPointer(rebasing: bytes[0..<4])) }
        guard let entity = layout.entity(id: UInt32(bigEndian: id)),
            let pk = OrderedKey.decode(UnsafeRawBufferPointer(rebasing: bytes[4..<12]))
        else { return nil }
        return (entity, pk)
    }
}
