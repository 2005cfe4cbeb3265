import CSQLite
import Foundation
@_spi(BackendKit) import StoreAPI

/// An open Core Data store, read-only or writable, that reads and writes its tables on demand.
///
/// Opening reads the metadata, the model and the tables' columns, nothing proportional to the number of records.
/// Fetches and counts run SQL: the entity's `Z_ENT` values, and the predicate as far as ``CoreDataPredicateSQL``
/// translates it (the rest is evaluated over the rows it selects), and the sort descriptors as far as
/// ``CoreDataSortSQL`` translates them exactly; scans and key lookups read by `Z_PK`. Each page of
/// records reads its relationships with one query per relationship (``CoreDataRowReader``).
///
/// A read-only store reads through ``ReadOnlyDatabase`` (never a checkpoint of someone's `-wal`); saves and key
/// allocation throw ``StoreError/readOnly(_:reason:)``. A writable store reads through its read-write connection,
/// so it sees its own saves, and a save writes only the rows its changes touch, in one SQLite transaction
/// (``CoreDataRowWriter``):
///
/// - `Z_OPT`: 1 for an inserted record, the stored value + 1 for an updated one, unchanged otherwise.
/// - `Z_PRIMARYKEY.Z_MAX` of each root entity is kept at or above every key in its table, and
///   ``allocatePrimaryKeys(root:count:)`` advances it in its own transaction.
/// - Global identifiers that are not the derived ones are kept in ``CoreDataGlobalIDTable``.
/// - History: a save's history transactions become Core Data's `ATRANSACTION`/`ACHANGE` rows
///   (``CoreDataHistoryWriter``); ``history(after:)`` reads them back.
/// - Another process's commit since this store last read or wrote the file makes the next save fail with
///   ``StoreError/modifiedOnDisk(_:)`` rather than write over it (`PRAGMA data_version`).
/// - A save that fails (a uniqueness index, a full disk) is rolled back: the file and the open store stay as they
///   were.
final class CoreDataStore: PersistentStore, PageScanningStore, PageInsertingStore, @unchecked Sendable {
    // @unchecked: every mutable member is used under `lock` only.
    private let fileURL: URL
    let lock = NSLock()
    private let schema: Schema
    private var currentMetadata: StoreMetadata
    /// Converts values and reads history; holds the read-only connection, so it goes when the store closes.
    private var values: CoreDataRecordReader?
    /// Where each entity's rows are read from: a read-only store's made as it opens; a writable store's on its first
    /// read (``plannedReads()``), since making one asks SQLite for every table's columns and a store opened to be
    /// filled by a transfer never reads.
    private var readPlan: CoreDataReadPlan?
    private var makeReadPlan: (() throws -> CoreDataReadPlan)?
    private var connection: CoreDataConnection?
    private let writer: Writer?
    private var pending = CoreDataPendingLinks()
    /// See ``finishesBulkLoadInFull``.
    private var finishesInFull = false
    private var dataVersion: Int64 = 0
    /// The `CREATE INDEX` statements a bulk load dropped, to run when it finishes (see `CoreDataStore+BulkLoad`).
    var deferredIndexes: [String]?
    /// The records' kept global identifiers: whether the store has the table, and its writes.
    let globalIDs: CoreDataGlobalIDWriter

    /// What only a writable store has.
    struct Writer {
        let db: CoreDataWritableDatabase
        let plan: CoreDataWritePlan
        let layout: CoreDataLayout
    }
    /// The metadata plist as stored (a writable store's).
    private var plist: CoreDataMetadata?

    /// A read-only store over `db`.
    init(url: URL, readOnly db: ReadOnlyDatabase, metadata: StoreMetadata, model: CoreDataModel, tables: Set<String>) throws {
        fileURL = url
        schema = metadata.schema
        currentMetadata = metadata
        let connection = CoreDataConnection(url: url, handle: db.handle, owner: db)
        self.connection = connection
        values = CoreDataRecordReader(url: url, db: db, model: model, schema: metadata.schema,
                                      storeUUID: metadata.storeUUID, tables: tables)
        readPlan = try CoreDataReadPlan(
            url: url, model: model, schema: metadata.schema, storeUUID: metadata.storeUUID, tables: tables,
            connection: connection)
        writer = nil
        globalIDs = CoreDataGlobalIDWriter(storeUUID: metadata.storeUUID, tableExists: tables.contains(CoreDataGlobalIDTable.name))
    }

    /// A writable store over `db`; `history` reads the store's persistent history when asked for it.
    init(
        url: URL, writer db: CoreDataWritableDatabase, history: ReadOnlyDatabase, metadata: StoreMetadata,
        plist: CoreDataMetadata, model: CoreDataModel, layout: CoreDataLayout, tables: Set<String>
    ) throws {
        fileURL = url
        schema = metadata.schema
        currentMetadata = metadata
        guard let handle = db.handle else {
            throw StoreError.io(url, operation: "opening the store for writing", reason: "the connection is closed")
        }
        let connection = CoreDataConnection(url: url, handle: handle, owner: db)
        self.connection = connection
        values = CoreDataRecordReader(url: url, db: history, model: model, schema: metadata.schema,
                                      storeUUID: metadata.storeUUID, tables: tables)
        makeReadPlan = {
            try CoreDataReadPlan(
                url: url, model: model, schema: metadata.schema, storeUUID: metadata.storeUUID, tables: tables,
                connection: connection)
        }
        writer = Writer(db: db, plan: try CoreDataWritePlan(url: url, layout: layout, schema: metadata.schema), layout: layout)
        self.plist = plist
        globalIDs = CoreDataGlobalIDWriter(storeUUID: metadata.storeUUID, tableExists: tables.contains(CoreDataGlobalIDTable.name))
        dataVersion = try Self.dataVersion(connection)
    }

    var url: URL? { fileURL }

    var metadata: StoreMetadata { lock.withLock { currentMetadata } }

    // MARK: Reading

    func open() throws(StoreError) -> CoreDataConnection {
        guard let connection else { throw .io(fileURL, operation: "using the store", reason: "the store is closed") }
        return connection
    }

    /// A reader of the open store's rows.
    private func openReader() throws(StoreError) -> CoreDataRowReader {
        guard let connection, let values else {
            throw .io(fileURL, operation: "using the store", reason: "the store is closed")
        }
        return CoreDataRowReader(plan: try plannedReads(), values: values, connection: connection, storeUUID: currentMetadata.storeUUID,
                                 keepsGlobalIDs: globalIDs.tableExists)
    }

    /// The read plan, made now if the store has not read yet (the caller holds the lock).
    private func plannedReads() throws(StoreError) -> CoreDataReadPlan {
        if let readPlan { return readPlan }
        guard let makeReadPlan else { throw .io(fileURL, operation: "using the store", reason: "the store is closed") }
        let plan: CoreDataReadPlan
        do { plan = try makeReadPlan() } catch let error as StoreError { throw error } catch {
            throw .io(fileURL, operation: "reading the store's tables", reason: "\(error)")
        }
        readPlan = plan
        self.makeReadPlan = nil
        return plan
    }

    /// Follows relationships for the in-memory evaluator (the caller holds the lock).
    private func evaluator(_ reader: CoreDataRowReader) -> PredicateEvaluator {
        let box = UncheckedBox(reader)
        return PredicateEvaluator(schema: schema) { root, keys in
            guard let table = box.value.plan.entities[root]?.table else { return [] }
            return try box.value.records(in: table, keys: keys)
        }
    }

    func fetch(_ request: FetchRequest) throws -> [Record] {
        try lock.withLock { try fetchLocked(request) }
    }

    private func fetchLocked(_ request: FetchRequest) throws -> [Record] {
        let reader = try openReader()
        let evaluator = evaluator(reader)
        try evaluator.validate(request)
        guard let (ep, sql) = try query(request) else { return [] }
        let exact = sql.fragment.isExact
        // Sorted in SQL where that order is exactly the evaluator's (CoreDataSortSQL).
        if exact, let order = request.sortDescriptors.isEmpty ? "Z_PK" : CoreDataSortSQL.orderBy(request.sortDescriptors, ep) {
            let limit = request.limit.map { max(0, $0) } ?? -1
            return try reader.records(in: ep.table, where: sql.condition, sql.bindings, orderBy: order,
                                      suffix: " LIMIT \(limit) OFFSET \(max(0, request.offset))")
        }
        var candidates = try reader.records(in: ep.table, where: sql.condition, sql.bindings)
        if exact {
            try evaluator.sort(&candidates, by: request.sortDescriptors)
            return PredicateEvaluator.slice(candidates, offset: request.offset, limit: request.limit)
        }
        return try evaluator.execute(request, candidates: candidates)
    }

    /// The table and SQL condition of a fetch, or `nil` when the entity has no table in this store.
    private func query(_ request: FetchRequest) throws
        -> (CoreDataReadPlan.EntityPlan, (condition: String, bindings: [SQLiteValue], fragment: CoreDataPredicateSQL.Fragment))?
    {
        let entity = try schema.requireEntity(request.entity)
        let readPlan = try plannedReads()
        guard let ep = readPlan.entities[entity.name] else { return nil }
        let numbers = request.includesSubentities
            ? readPlan.hierarchyNumbers[entity.name] ?? [ep.number] : [ep.number]
        let fragment = CoreDataPredicateSQL(plan: ep).translate(request.predicate)
        let condition = "Z_ENT IN (\(numbers.map(String.init).joined(separator: ", "))) AND (\(fragment.sql))"
        return (ep, (condition, fragment.bindings, fragment))
    }

    func count(_ request: FetchRequest) throws -> Int {
        try lock.withLock {
            let reader = try openReader()
            try evaluator(reader).validate(request)
            guard let (ep, sql) = try query(request) else { return 0 }
            guard sql.fragment.isExact else {
                var r = request
                r.sortDescriptors = []
                return try fetchLocked(r).count
            }
            let total = Int(try reader.connection.integer(
                "SELECT count(*) FROM \(CoreDataSQL.quoted(ep.table.name)) WHERE \(sql.condition)", sql.bindings) ?? 0)
            let afterOffset = max(0, total - max(0, request.offset))
            return request.limit.map { min(max(0, $0), afterOffset) } ?? afterOffset
        }
    }

    func records(withKeys keys: [Int64], root: String) throws -> [Record] {
        try lock.withLock {
            let reader = try openReader()
            let entity = try schema.requireEntity(root)
            guard let table = reader.plan.entities[entity.rootName]?.table ?? reader.plan.entities[entity.name]?.table else {
                return []
            }
            return try reader.records(in: table, keys: keys)
        }
    }

    func scan(entity: String, after primaryKey: Int64?, limit: Int) throws -> [Record] {
        try lock.withLock {
            let reader = try openReader()
            _ = try schema.requireEntity(entity)
            guard let ep = reader.plan.entities[entity] else { return [] }
            return try reader.scan(ep, after: primaryKey, limit: limit)
        }
    }

    func scanPage(entity: String, after primaryKey: Int64?, limit: Int) throws -> RecordPage {
        try lock.withLock {
            let reader = try openReader()
            _ = try schema.requireEntity(entity)
            guard let ep = reader.plan.entities[entity] else { return RecordPage(entity: entity) }
            return try reader.scanPage(ep, after: primaryKey, limit: limit)
        }
    }

    func scanKeys(entity: String, after primaryKey: Int64?, limit: Int) throws -> [Int64] {
        try lock.withLock {
            let reader = try openReader()
            _ = try schema.requireEntity(entity)
            guard let ep = reader.plan.entities[entity] else { return [] }
            return try reader.scanKeys(ep, after: primaryKey, limit: limit)
        }
    }

    func history(after token: Int64?) throws -> [HistoryTransaction] {
        try lock.withLock {
            guard let values else { throw StoreError.io(fileURL, operation: "using the store", reason: "the store is closed") }
            return try values.readHistory(after: token)
        }
    }

    func close() throws {
        lock.withLock {
            connection?.finalize()
            connection = nil
            makeReadPlan = nil
            // The read-only connection first: the writer's close, as the file's last connection, folds the -wal
            // into the main file and removes it and the -shm.
            values = nil
            writer?.db.close()
        }
    }

    // MARK: Writing

    private static func dataVersion(_ c: CoreDataConnection) throws -> Int64 {
        try c.integer("PRAGMA data_version") ?? 0
    }

    func requireWriter() throws -> (CoreDataConnection, Writer) {
        let c = try open()
        guard let writer else { throw StoreError.readOnly(fileURL, reason: CoreDataStoreBackend.readOnlyReason) }
        return (c, writer)
    }

    /// Begins a write transaction, refusing when another connection changed the file since this one last did.
    private func begin(_ c: CoreDataConnection) throws {
        try c.run("BEGIN IMMEDIATE")
        do {
            guard try Self.dataVersion(c) == dataVersion else { throw StoreError.modifiedOnDisk(fileURL) }
        } catch {
            _ = try? c.run("ROLLBACK")
            throw error
        }
    }

    /// Runs `body` in one write transaction; on failure rolls it back and restores the pending links.
    func transaction(_ body: (CoreDataConnection, Writer) throws -> Void) throws {
        let (c, writer) = try requireWriter()
        try begin(c)
        let saved = pending
        let hadGlobalIDTable = globalIDs.tableExists
        do {
            try body(c, writer)
            try c.run("COMMIT")
            dataVersion = try Self.dataVersion(c)
        } catch {
            _ = try? c.run("ROLLBACK")
            pending = saved
            globalIDs.tableExists = hadGlobalIDTable
            throw error
        }
    }

    func rowWriter(
        _ c: CoreDataConnection, _ w: Writer, external: CoreDataExternalDataWriter? = nil
    ) -> CoreDataRowWriter {
        CoreDataRowWriter(plan: w.plan, schema: schema, db: c, url: fileURL, storeUUID: currentMetadata.storeUUID,
                          isBulkLoad: deferredIndexes != nil, external: external, globalIDs: globalIDs)
    }

    func save(_ changes: StoreChanges) throws {
        try lock.withLock {
            _ = try requireWriter()
            if let m = changes.metadata, m.schema != schema {
                throw StoreError.unsupported("\(fileURL.path): changing the schema of a coredata store (a migration)")
            }
            guard var newPlist = plist else { throw StoreError.readOnly(fileURL, reason: CoreDataStoreBackend.readOnlyReason) }
            if let m = changes.metadata { newPlist = try Self.plist(newPlist, for: m, url: fileURL) }
            guard !changes.isEmpty else { return }
            let (_, w) = try requireWriter()
            // External binary data: files written before the commit, the ones no longer referred to removed after
            // it, this save's own removed after a rollback (see CoreDataExternalDataWriter).
            let external = CoreDataExternalDataWriter(store: fileURL, layout: w.layout, schema: schema)
            do {
                try transaction { c, w in
                    try external.loadReferences()
                    try rowWriter(c, w, external: external).save(changes, pending: &pending)
                    try CoreDataHistoryWriter(db: c, url: fileURL, schema: schema, plan: w.plan, globalIDs: globalIDs)
                        .write(changes.history)
                    if let m = changes.metadata { try Self.writeMetadataRow(c, uuid: m.storeUUID, plist: newPlist) }
                }
            } catch {
                external.discardWritten()
                throw error
            }
            external.removeUnreferenced()
            if let m = changes.metadata {
                currentMetadata = m
                plist = newPlist
            }
        }
    }

    func insert(_ page: RecordPage) throws {
        try insertPages(count: 1) { _ in page }
    }

    /// Inserts the pages in one transaction, one page at a time, each as ``CoreDataRowWriter/insert(_:pending:)``
    /// inserts it (from its bytes in a bulk load, as records otherwise).
    func insertPages(count: Int, page: (Int) throws -> RecordPage) throws {
        try lock.withLock {
            let (_, w) = try requireWriter()
            guard count > 0 else { return }
            let external = CoreDataExternalDataWriter(store: fileURL, layout: w.layout, schema: schema)
            do {
                try transaction { c, w in
                    try external.loadReferences()
                    let writer = rowWriter(c, w, external: external)
                    for i in 0..<count { try writer.insert(try page(i), pending: &pending) }
                }
            } catch {
                external.discardWritten()
                throw error
            }
            external.removeUnreferenced()
        }
    }

    func allocatePrimaryKeys(root: String, count: Int) throws -> Int64 {
        try lock.withLock {
            let (_, w) = try requireWriter()
            let entity = try schema.requireEntity(root)
            guard let number = w.plan.rootNumbers[entity.rootName], let table = w.plan.tables[entity.rootName]?.name else {
                throw StoreError.unknownEntity(root)
            }
            var first: Int64 = 0
            try transaction { c, _ in
                let stored = try c.integer("SELECT Z_MAX FROM Z_PRIMARYKEY WHERE Z_ENT = ?", [.integer(number)]) ?? 0
                let highest = try c.integer("SELECT max(Z_PK) FROM \(CoreDataSQL.quoted(table))") ?? 0
                first = max(stored, highest) + 1
                let last = first + Int64(max(count, 0)) - 1
                try c.run("UPDATE Z_PRIMARYKEY SET Z_MAX = ? WHERE Z_ENT = ?", [.integer(max(last, first - 1)), .integer(number)])
            }
            return first
        }
    }

    /// The most ordered-list positions a bulk load keeps in memory before it spills them (tests lower it).
    var pendingPositionLimit: Int {
        get { lock.withLock { pending.positionLimit } }
        set { lock.withLock { pending.positionLimit = newValue } }
    }

    /// The highest member key whose waiting position a bulk load keeps by key (tests lower it).
    var pendingPositionKeyLimit: Int64 {
        get { lock.withLock { pending.waiting.keyLimit } }
        set { lock.withLock { pending.waiting.keyLimit = newValue } }
    }

    /// Drops what a bulk load kept for the rows it inserted: the ordered-list positions it spilled, each read when
    /// its member was inserted, and the entity numbers of its rows (the caller holds the lock, inside a transaction).
    func finishSpilledPositions(_ c: CoreDataConnection) throws {
        try pending.spilled.finish(c)
        pending.waiting.removeAll()
        pending.loadedEntities.removeAll()
    }

    /// The entity columns a bulk load left NULL (`nil`: any may be), taken (the caller holds the lock).
    func takeEntityColumnsLeftNull() -> Set<String>? {
        defer { pending.entityColumnsLeftNull = [] }
        return finishesInFull ? nil : pending.entityColumnsLeftNull
    }

    /// The many-to-many sides a bulk load deferred, each with what its table holds when the writing side's inserts
    /// are all it holds (`nil`: read the table), taken (the caller holds the lock).
    func pendingJoins() -> [(join: CoreDataDeferredJoin, written: PairSetChecksum?)] {
        defer {
            pending.deferredJoins = [:]
            pending.joinWriters = [:]
            pending.writtenJoins = [:]
            pending.rewrittenJoins = []
        }
        return pending.deferredJoins.values.sorted { $0.table < $1.table }.map { join in
            let known = !finishesInFull && !pending.rewrittenJoins.contains(join.table)
            return (join, known ? pending.writtenJoins[.init(join.table)] ?? PairSetChecksum() : nil)
        }
    }

    /// Whether a bulk load finishes the general way: its deferred many-to-many sides checked against their tables
    /// read back rather than against the pairs it wrote, and every entity column's NULLs filled rather than only
    /// those of the columns it left NULL (tests compare the two).
    var finishesBulkLoadInFull: Bool {
        get { lock.withLock { finishesInFull } }
        set { lock.withLock { finishesInFull = newValue } }
    }

    // MARK: Metadata

    /// `base` with `metadata`'s custom metadata as its app keys, and its sync options (the embedded schema and its
    /// model cache's digest kept).
    static func plist(_ base: CoreDataMetadata, for metadata: StoreMetadata, url: URL) throws(StoreError) -> CoreDataMetadata {
        var p = base
        let kept = [CoreDataStoreBackend.schemaMetadataKey, CoreDataStoreBackend.modelCacheDigestMetadataKey]
            .compactMap { key in base.custom[key].map { (key, $0) } }
        p.custom = metadata.custom.mapValues(CoreDataStoreBackend.propertyListValue)
        for (key, value) in kept { p.custom[key] = value }
        if let syncOptions = metadata.syncOptions {
            p.custom[CoreDataStoreBackend.syncOptionsMetadataKey] = try CoreDataStoreBackend.propertyListValue(syncOptions, url: url)
        }
        return p
    }

    static func writeMetadataRow(_ c: CoreDataConnection, uuid: UUID, plist: CoreDataMetadata) throws {
        try c.run(
            "UPDATE Z_METADATA SET Z_UUID = ?, Z_PLIST = ? WHERE Z_VERSION = 1",
            [.text(uuid.uuidString.uppercased()), .blob(BinaryPropertyListWriter.write(plist.propertyList))])
    }
}

/// Lets the evaluator's resolver (a `@Sendable` closure) use the store's reader; it runs only inside the store's
/// lock, on the calling thread.
private struct UncheckedBox<T>: @unchecked Sendable {
    let value: T
    init(_ value: T) { self.value = value }
}
