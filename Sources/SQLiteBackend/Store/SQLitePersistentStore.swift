import CSQLite
import Foundation
import Logging
@_spi(BackendKit) import StoreAPI
import Synchronization

/// An open SQLite store: the ``PersistentStore`` of ``SQLiteStoreBackend``.
///
/// One connection per store for writing, used under a lock (SQLite connections are not shared between threads);
/// in WAL mode, fetches, counts and lookups by key that find it busy (a save under way, another read) run on reader
/// connections (`SQLiteReaders`) instead of waiting. Every read
/// runs in one read transaction, so a fetch and the queries that fill its to-many relationships see one snapshot;
/// every save, key allocation and metadata change runs in one `BEGIN IMMEDIATE` transaction, which is what makes
/// them atomic and safe against other connections and processes.
final class SQLitePersistentStore: PersistentStore, PageScanningStore, PageInsertingStore, Sendable {
    struct State: Sendable {
        var connection: SQLiteConnection?
        var metadata: StoreMetadata
        var metadataJSON: Data
        var dataVersion: Int64?
        /// Keys reserved in the database but not handed out yet, per hierarchy: `next..<end`.
        var reservedKeys: [String: Range<Int64>] = [:]
        /// The `CREATE INDEX` statements a bulk load dropped, to run when it finishes (see
        /// ``BulkLoadingStore``); `nil` outside a bulk load.
        var deferredIndexes: [String]?
        /// During a bulk load, the many-to-many links not written yet because their other side writes them (see
        /// ``DeferredLinks``); `nil` once the load's saves write every side (or outside a bulk load).
        var deferredLinks: [String: DeferredLinks]?
    }

    /// Keys reserved per database transaction when fewer are asked for: a context allocates one key per insert,
    /// and a write transaction per key would dominate bulk inserts. Keys reserved and never used leave a gap,
    /// which key allocation allows.
    static let keyReservation: Int64 = 256

    let fileURL: URL
    let layout: SQLiteLayout
    let isReadOnly: Bool
    /// Whether closing removes the `-wal`/`-shm` files this read-only open made SQLite create.
    private let cleansSidecarsOnClose: Bool
    private let state: Mutex<State>
    /// Connections for fetches beside a save under way (WAL stores opened read-write); `nil` otherwise.
    private let readers: SQLiteReaders?

    var url: URL? { fileURL }

    init(
        url: URL, connection: SQLiteConnection, metadata: StoreMetadata, metadataJSON: Data, layout: SQLiteLayout,
        cleansSidecarsOnClose: Bool, readers: SQLiteReaders? = nil
    ) {
        self.fileURL = url
        self.layout = layout
        self.isReadOnly = connection.isReadOnly
        self.cleansSidecarsOnClose = cleansSidecarsOnClose
        self.readers = readers
        self.state = Mutex(State(connection: connection, metadata: metadata, metadataJSON: metadataJSON))
    }

    var metadata: StoreMetadata {
        state.withLock { s in
            // Another connection (another process, or writeMetadata) may have replaced the metadata.
            if let c = s.connection, let v = try? c.int64("PRAGMA data_version"), v != s.dataVersion {
                s.dataVersion = v
                if let json = try? Self.readMetadataJSON(c), json != s.metadataJSON,
                    let m = try? StoreMetadata.decode(json, url: fileURL)
                {
                    s.metadata = m
                    s.metadataJSON = json
                }
            }
            return s.metadata
        }
    }

    var schema: Schema { layout.schema }

    /// Runs `body` with the open connection, under the store's lock.
    func withConnection<T: Sendable>(_ body: (SQLiteConnection, inout State) throws -> T) throws -> T {
        try state.withLock { s in
            guard let c = s.connection else {
                throw StoreError.io(fileURL, operation: "using the store", reason: "the store is closed")
            }
            return try body(c, &s)
        }
    }

    /// Runs a read on the store's connection when it is free (its page cache is the warmest: it wrote last), else
    /// on a reader beside the save that holds it, else — not in WAL mode — on the store's connection once free.
    func read<T: Sendable>(_ body: (SQLiteConnection) throws -> T) throws -> T {
        if let readers {
            let done: Result<T, any Error>? = state.withLockIfAvailable { s in
                guard let c = s.connection else {
                    return .failure(StoreError.io(fileURL, operation: "using the store", reason: "the store is closed"))
                }
                return Result { try body(c) }
            }
            if let done { return try done.get() }
            if let value = try readers.read(body) { return value }
        }
        return try withConnection { c, _ in try body(c) }
    }

    func reader(_ c: SQLiteConnection) -> SQLiteRecordReader {
        SQLiteRecordReader(layout: layout, url: fileURL, connection: c)
    }

    // MARK: Reading

    func fetch(_ request: FetchRequest) throws -> [Record] {
        try read { c in try c.transaction(write: false) { try fetchLocked(request, c) } }
    }

    func count(_ request: FetchRequest) throws -> Int {
        try read { c in try countLocked(request, c) }
    }

    /// Counts on `c`, which the caller holds (the store's connection under its lock, or a reader).
    private func countLocked(_ request: FetchRequest, _ c: SQLiteConnection) throws -> Int {
        do {
            return try c.transaction(write: false) {
                let entity = try schema.requireEntity(request.entity)
                try evaluator(reader(c)).validate(request)
                guard let table = layout.tables[entity.rootName] else { throw missingTable(entity.rootName) }
                let (q, translated) = translate(request, entity: entity)
                var unsorted = request
                unsorted.sortDescriptors = []
                guard let fragment = translated else { return try fetchLocked(unsorted, c).count }
                let (whereSQL, bindings) = whereClause(entity: entity, request: request, table: table, fragment)
                let from = "FROM \(SQLiteLayout.quote(table.name)) AS t \(q.joins.joined(separator: " ")) \(whereSQL)"
                let sql: String
                var all = bindings
                if request.offset > 0 || request.limit != nil {
                    sql = "SELECT COUNT(*) FROM (SELECT 1 \(from) LIMIT ? OFFSET ?)"
                    all += limitBindings(request)
                } else {
                    sql = "SELECT COUNT(*) \(from)"
                }
                guard Self.prepares(sql, fragment, c) else { return try fetchLocked(unsorted, c).count }
                return try c.withStatement(sql) { s in
                    try s.bind(all)
                    guard try s.step() else { return 0 }
                    return Int(s.int64(0))
                }
            }
        }
    }

    func records(withKeys keys: [Int64], root: String) throws -> [Record] {
        try read { c in
            // One query needs no transaction; several (to-many relationships) share one snapshot.
            guard layout.rootsWithToMany.contains(root) else { return try reader(c).records(withKeys: keys, root: root) }
            return try c.transaction(write: false) { try reader(c).records(withKeys: keys, root: root) }
        }
    }

    /// The table holding the records of exactly entity `name`, its layout, and the condition that keeps that
    /// entity's rows (empty when the table holds no other entity).
    private func scanTarget(_ name: String) throws -> (table: TableLayout, entity: EntityLayout, filter: String) {
        let entity = try schema.requireEntity(name)
        guard let table = layout.tables[entity.rootName], let el = layout.entities[name] else {
            throw missingTable(entity.rootName)
        }
        return (table, el, table.hasSubentities ? "t._ent = \(el.code) AND " : "")
    }

    func scan(entity name: String, after primaryKey: Int64?, limit: Int) throws -> [Record] {
        try withConnection { c, _ in
            let (table, el, filter) = try scanTarget(name)
            guard limit > 0 else { return [] }
            let sql = "SELECT \(table.selectList) FROM \(SQLiteLayout.quote(table.name)) AS t WHERE \(filter)t._pk > ? ORDER BY t._pk LIMIT ?"
            let bindings: [SQLValue] = [.integer(primaryKey ?? .min), .integer(Int64(limit))]
            guard el.hasToMany else { return try reader(c).records(sql, bindings: bindings, table: table) }
            return try c.transaction(write: false) { try reader(c).records(sql, bindings: bindings, table: table) }
        }
    }

    func scanPage(entity name: String, after primaryKey: Int64?, limit: Int) throws -> RecordPage {
        try withConnection { c, _ in
            let (table, el, filter) = try scanTarget(name)
            guard limit > 0 else { return RecordPage(entity: name) }
            let sql = "SELECT \(table.selectList) FROM \(SQLiteLayout.quote(table.name)) AS t WHERE \(filter)t._pk > ? ORDER BY t._pk LIMIT ?"
            let bindings: [SQLValue] = [.integer(primaryKey ?? .min), .integer(Int64(limit))]
            let capacity = min(limit, 1 << 16)
            guard el.hasToMany else { return try reader(c).page(sql, bindings: bindings, table: table, entity: el, capacity: capacity) }
            return try c.transaction(write: false) {
                try reader(c).page(sql, bindings: bindings, table: table, entity: el, capacity: capacity)
            }
        }
    }

    func scanKeys(entity name: String, after primaryKey: Int64?, limit: Int) throws -> [Int64] {
        try withConnection { c, _ in
            let (table, _, filter) = try scanTarget(name)
            guard limit > 0 else { return [] }
            let sql = "SELECT t._pk FROM \(SQLiteLayout.quote(table.name)) AS t WHERE \(filter)t._pk > ? ORDER BY t._pk LIMIT ?"
            return try c.withStatement(sql) { s in
                s.bind(1, primaryKey ?? .min)
                s.bind(2, Int64(limit))
                var keys: [Int64] = []
                keys.reserveCapacity(min(limit, 1 << 16))
                while try s.step() { keys.append(s.int64(0)) }
                return keys
            }
        }
    }

    func history(after token: Int64?) throws -> [HistoryTransaction] {
        try withConnection { c, _ in
            try c.transaction(write: false) {
                try c.withStatement("SELECT token, json FROM \(SQLiteLayout.quote(SQLiteLayout.historyTable)) WHERE token > ? ORDER BY token") { s in
                    s.bind(1, token ?? .min)
                    var result: [HistoryTransaction] = []
                    while try s.step() {
                        var t = try HistoryTransaction.decode(s.blob(1), url: fileURL)
                        t.token = s.int64(0)
                        result.append(t)
                    }
                    return result
                }
            }
        }
    }

    // MARK: Fetch

    /// The request's predicate as SQL (`.alwaysTrue` without one; `nil` beyond what translation takes, where the
    /// reference evaluator runs), with the translator that holds the joins it needs.
    func translate(_ request: FetchRequest, entity: Entity) -> (QueryTranslator, QueryTranslator.Fragment?) {
        var q = QueryTranslator(layout: layout)
        guard let p = request.predicate else { return (q, .alwaysTrue) }
        let fragment = q.translateWithinLimits(p, entity: entity)
        return (q, fragment)
    }

    func fetchLocked(_ request: FetchRequest, _ c: SQLiteConnection) throws -> [Record] {
        let entity = try schema.requireEntity(request.entity)
        guard let table = layout.tables[entity.rootName] else { throw missingTable(entity.rootName) }
        let reader = reader(c)
        // Errors about the request must not depend on which records exist or which path runs.
        try evaluator(reader).validate(request)
        let (translator, fragment) = translate(request, entity: entity)
        var q = translator
        let select = "SELECT \(table.selectList) FROM \(SQLiteLayout.quote(table.name)) AS t"
        func inMemory() throws -> [Record] {
            // Not translatable: load the candidates and let the reference evaluator do everything.
            Self.logInMemory(request)
            let (whereSQL, bindings) = whereClause(entity: entity, request: request, table: table, .alwaysTrue)
            let candidates = try reader.records("\(select) \(whereSQL) ORDER BY t._pk", bindings: bindings, table: table)
            return try evaluator(reader).execute(request, candidates: candidates)
        }
        guard let fragment else { return try inMemory() }
        var sorted = q
        let order = sorted.orderBy(request.sortDescriptors, entity: entity)
        if order != nil { q = sorted }
        let (whereSQL, bindings) = whereClause(entity: entity, request: request, table: table, fragment)
        let base = "\(select) \(q.joins.joined(separator: " ")) \(whereSQL)"
        guard let order else {
            // Filter in SQL, sort and slice with the evaluator (a sort key it cannot translate, such as a decimal).
            guard Self.prepares("\(base) ORDER BY t._pk", fragment, c) else { return try inMemory() }
            var matched = try reader.records("\(base) ORDER BY t._pk", bindings: bindings, table: table)
            try evaluator(reader).sort(&matched, by: request.sortDescriptors)
            return PredicateEvaluator.slice(matched, offset: request.offset, limit: request.limit)
        }
        if request.offset <= 0, request.limit == nil, PredicateEvaluator.sortsByNumbers(request.sortDescriptors, of: entity) {
            // Every match is returned: the evaluator's sort of the decoded records costs less than SQLite's sorter,
            // which builds, compares and takes apart a sorter record per row; its order is the reference the
            // translated ORDER BY reproduces.
            guard Self.prepares("\(base) ORDER BY t._pk", fragment, c) else { return try inMemory() }
            var matched = try reader.records("\(base) ORDER BY t._pk", bindings: bindings, table: table)
            try evaluator(reader).sort(&matched, by: request.sortDescriptors)
            return matched
        }
        let orderSQL = (order + ["t._pk ASC"]).joined(separator: ", ")
        if request.offset > 0 || request.limit != nil {
            let sql = "\(base) ORDER BY \(orderSQL) LIMIT ? OFFSET ?"
            guard Self.prepares(sql, fragment, c) else { return try inMemory() }
            return try reader.records(sql, bindings: bindings + limitBindings(request), table: table)
        }
        guard Self.prepares("\(base) ORDER BY \(orderSQL)", fragment, c) else { return try inMemory() }
        return try reader.records("\(base) ORDER BY \(orderSQL)", bindings: bindings, table: table)
    }

    /// Fragments nested at most this deep always fit SQLite's parser stack; deeper ones are prepared first.
    static let shallowDepth = 24

    /// Whether SQLite prepares `sql` (which stays in the statement cache for the fetch that follows). A deeply
    /// nested translation — `NOT (… OR NOT (… OR ANY …))`, where each `EXISTS` subquery takes more of the parser's
    /// stack — can overflow SQLite's parser stack, whose use depends on the tokens rather than on the expression
    /// depth the translator limits; such a predicate is evaluated in memory instead of failing.
    static func prepares(_ sql: String, _ fragment: QueryTranslator.Fragment, _ c: SQLiteConnection) -> Bool {
        guard fragment.depth > shallowDepth else { return true }
        return (try? c.withStatement(sql) { _ in }) != nil
    }

    /// Says that a predicate runs in memory over every candidate record — what to look for when a fetch is slow
    /// (see the "Which predicates run in the engine" article).
    static func logInMemory(_ request: FetchRequest) {
        guard let predicate = request.predicate else { return }
        Logger.current.debug("predicate evaluated in memory", metadata: [
            "entity": "\(request.entity)", "predicate": "\(predicate)",
        ])
    }

    /// `WHERE <entity filter> AND <predicate>` and its parameters.
    func whereClause(
        entity: Entity, request: FetchRequest, table: TableLayout, _ fragment: QueryTranslator.Fragment
    ) -> (String, [SQLValue]) {
        let names = request.includesSubentities ? entity.hierarchyNames : [entity.name]
        let codes = names.compactMap { layout.entities[$0]?.code }
        var parts: [String] = []
        if Set(codes) != Set(table.entityCodes) {
            parts.append(codes.count == 1 ? "t._ent = \(codes[0])" : "t._ent IN (\(codes.map(String.init).joined(separator: ", ")))")
        }
        if fragment.sql != "1" { parts.append(fragment.sql) }
        return (parts.isEmpty ? "" : "WHERE " + parts.joined(separator: " AND "), fragment.bindings)
    }

    /// `LIMIT ? OFFSET ?` parameters with the evaluator's slicing rules (a negative limit is zero).
    private func limitBindings(_ request: FetchRequest) -> [SQLValue] {
        [.integer(request.limit.map { Int64(max(0, $0)) } ?? -1), .integer(Int64(max(0, request.offset)))]
    }

    /// The reference evaluator, following relationships through this connection (the caller holds the lock).
    func evaluator(_ reader: SQLiteRecordReader) -> PredicateEvaluator {
        let memo = ResolverMemo()
        return PredicateEvaluator(schema: schema) { root, keys in
            var found: [Record] = []
            var missing: [Int64] = []
            for k in keys {
                if let r = memo.records["\(root)\u{0}\(k)"] { found.append(r) } else { missing.append(k) }
            }
            if !missing.isEmpty {
                for r in try reader.records(withKeys: missing, root: root) {
                    memo.records["\(root)\u{0}\(r.primaryKey)"] = r
                    found.append(r)
                }
            }
            return found
        }
    }

    func missingTable(_ root: String) -> StoreError {
        .corruptStore(fileURL, reason: "no table for the \(root) hierarchy")
    }

    // MARK: Writing

    /// Inserts a page's records in one transaction. During a bulk load (a transfer) the rows are bound from the
    /// page's bytes; otherwise the page is saved as its records.
    func insert(_ page: RecordPage) throws {
        let isBulkLoad = try withConnection { _, s in s.deferredIndexes != nil }
        guard isBulkLoad else { return try save(StoreChanges(inserted: try page.records(in: schema))) }
        try withConnection { c, s in
            guard !isReadOnly else { throw StoreError.readOnly(fileURL, reason: "the store was opened read-only") }
            guard !page.isEmpty else { return }
            var links = s.deferredLinks
            try c.transaction(write: true) {
                var writer = SQLiteSaveWriter(
                    layout: layout, connection: c, url: fileURL, storeUUID: s.metadata.storeUUID,
                    isBulkLoad: s.deferredIndexes != nil, deferredLinks: s.deferredLinks)
                try writer.insert(page)
                links = writer.deferredLinks
            }
            if s.deferredIndexes != nil { s.deferredLinks = links }
            if let root = layout.entities[page.entity]?.root { Self.keepAbove(page.primaryKeys, root: root, &s) }
        }
    }

    /// Inserts the pages in one transaction, each as ``insert(_:)`` inserts one (so outside a bulk load each
    /// page becomes its records for the save's path, one page at a time).
    func insertPages(count: Int, page: (Int) throws -> RecordPage) throws {
        guard count > 0 else { return }
        try withConnection { c, s in
            guard !isReadOnly else { throw StoreError.readOnly(fileURL, reason: "the store was opened read-only") }
            var links = s.deferredLinks
            var highest: [String: Int64] = [:]
            try c.transaction(write: true) {
                var writer = SQLiteSaveWriter(
                    layout: layout, connection: c, url: fileURL, storeUUID: s.metadata.storeUUID,
                    isBulkLoad: s.deferredIndexes != nil, deferredLinks: s.deferredLinks)
                for i in 0..<count {
                    let page = try page(i)
                    guard !page.isEmpty else { continue }
                    try writer.insert(page)
                    if let root = layout.entities[page.entity]?.root, let top = page.primaryKeys.max() {
                        highest[root] = max(highest[root] ?? top, top)
                    }
                }
                links = writer.deferredLinks
            }
            if s.deferredIndexes != nil { s.deferredLinks = links }
            // Only the largest key of each hierarchy decides where its reserved block starts again.
            for (root, key) in highest { Self.keepAbove(CollectionOfOne(key), root: root, &s) }
        }
    }

    /// Records inserted with their own keys (a transfer) may sit inside a reserved block: hand out only keys
    /// above them, as the stored high-water mark does.
    private static func keepAbove(_ keys: some Sequence<Int64>, root: String, _ s: inout State) {
        for key in keys {
            guard let block = s.reservedKeys[root], key >= block.lowerBound else { continue }
            s.reservedKeys[root] = key < block.upperBound - 1 ? (key + 1)..<block.upperBound : nil
        }
    }

    func save(_ changes: StoreChanges) throws {
        try withConnection { c, s in
            guard !isReadOnly else { throw StoreError.readOnly(fileURL, reason: "the store was opened read-only") }
            guard !changes.isEmpty else { return }
            var newMetadata: (StoreMetadata, Data)?
            var links = s.deferredLinks
            var inserted: [String: Int64] = [:]
            try c.transaction(write: true) {
                if let m = changes.metadata {
                    try checkLayoutCompatible(m, url: fileURL, current: layout)
                    let json = try m.encoded()
                    try Self.writeMetadataJSON(json, c)
                    newMetadata = (m, json)
                }
                var writer = SQLiteSaveWriter(
                    layout: layout, connection: c, url: fileURL,
                    storeUUID: (newMetadata?.0 ?? s.metadata).storeUUID, isBulkLoad: s.deferredIndexes != nil,
                    deferredLinks: s.deferredLinks)
                try writer.apply(changes)
                links = writer.deferredLinks
                inserted = writer.highestInserted
            }
            // Only a committed save's links count.
            if s.deferredIndexes != nil { s.deferredLinks = links }
            // Only the largest inserted key of each hierarchy decides where its reserved block starts again: a
            // save of many records is not gone over once more, record by record.
            for (root, key) in inserted { Self.keepAbove(CollectionOfOne(key), root: root, &s) }
            if let (m, json) = newMetadata {
                s.metadata = m
                s.metadataJSON = json
            }
        }
    }

    func allocatePrimaryKeys(root: String, count: Int) throws -> Int64 {
        try withConnection { c, s in
            guard !isReadOnly else { throw StoreError.readOnly(fileURL, reason: "the store was opened read-only") }
            guard let table = layout.tables[root] else { throw StoreError.unknownEntity(root) }
            let wanted = Int64(max(0, count))
            if let block = s.reservedKeys[root], Int64(block.count) >= wanted {
                s.reservedKeys[root] = (block.lowerBound + wanted)..<block.upperBound
                return block.lowerBound
            }
            let reserve = max(wanted, Self.keyReservation)
            let first: Int64 = try c.transaction(write: true) {
                let keys = SQLiteLayout.quote(SQLiteLayout.keysTable)
                let stored = try c.withStatement("SELECT next FROM \(keys) WHERE root = ?") { s in
                    try s.bind(1, root)
                    return try s.step() ? s.int64(0) : nil
                }
                let highest = try c.int64("SELECT MAX(_pk) FROM \(SQLiteLayout.quote(table.name))") ?? 0
                let (above, full) = highest.addingReportingOverflow(1)
                let first = max(stored ?? 1, above)
                let (next, overflow) = first.addingReportingOverflow(reserve)
                guard !overflow, !full else {
                    throw StoreError.io(fileURL, operation: "allocating keys", reason: "the \(root) key space is exhausted")
                }
                try c.withStatement("INSERT INTO \(keys) (root, next) VALUES (?, ?) ON CONFLICT (root) DO UPDATE SET next = excluded.next") { s in
                    try s.bind(1, root)
                    s.bind(2, next)
                    try s.step()
                }
                return first
            }
            s.reservedKeys[root] = (first + wanted)..<(first + reserve)
            return first
        }
    }

    func close() throws {
        readers?.close()
        let wasOpen = state.withLock { s -> Bool in
            guard let c = s.connection else { return false }
            c.close()
            s.connection = nil
            return true
        }
        if wasOpen {
            OpenStores.unregister(self)
            if cleansSidecarsOnClose { SQLiteStoreBackend.removeSidecarsIfUnused(fileURL) }
        }
    }

    /// Closes the connection because the store's files are going away (destroy); later calls fail.
    func invalidate() {
        readers?.close()
        state.withLock { s in
            s.connection?.close()
            s.connection = nil
        }
    }

    // MARK: Metadata rows

    static func readMetadataJSON(_ c: SQLiteConnection) throws -> Data {
        try c.withStatement("SELECT json FROM \(SQLiteLayout.quote(SQLiteLayout.metadataTable)) WHERE id = 1") { s in
            guard try s.step(), s.type(0) == SQLITE_BLOB || s.type(0) == SQLITE_TEXT else {
                throw StoreError.corruptStore(c.url, reason: "the metadata row is missing")
            }
            return s.blob(0)
        }
    }

    static func writeMetadataJSON(_ json: Data, _ c: SQLiteConnection) throws {
        try c.withStatement("INSERT INTO \(SQLiteLayout.quote(SQLiteLayout.metadataTable)) (id, json) VALUES (1, ?) ON CONFLICT (id) DO UPDATE SET json = excluded.json") { s in
            try s.bind(1, json)
            try s.step()
        }
    }
}

/// Related records already loaded during one in-memory evaluation (used only under the store's lock).
private final class ResolverMemo: @unchecked Sendable {
    var records: [String: Record] = [:]
}

/// Refuses metadata whose schema would lay records out differently from the store's tables.
func checkLayoutCompatible(_ metadata: StoreMetadata, url: URL, current: SQLiteLayout) throws {
    let proposed = SQLiteLayout(schema: metadata.schema)
    guard proposed.fingerprint != current.fingerprint else { return }
    var differing = metadata.incompatibleEntities(with: current.schema)
    if differing.isEmpty { differing = metadata.schema.entities.map(\.name) }
    throw StoreError.incompatibleSchema(url, entities: differing)
}
