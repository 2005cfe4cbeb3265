import Foundation
@_spi(BackendKit) import StoreAPI
import Synchronization

/// An open PostgreSQL store: the ``PersistentStore`` of ``PostgresStoreBackend``.
///
/// One connection per store, used under a lock, and reader connections for fetches and counts that find it taken
/// (a `ReaderConnectionPool`), so reads run beside a save instead of waiting for it. Every read runs in one
/// `REPEATABLE READ READ ONLY` transaction, so a fetch and the queries that fill its to-many relationships see one
/// snapshot; every save runs in one transaction. A connection that breaks (the server restarted, the backend process was terminated) fails the
/// operation in progress — the server rolls its transaction back — and the next operation reconnects.
///
/// Predicates, sorts and slices run as SQL where ``PostgresQueryTranslator`` can translate them exactly, and
/// through ``PredicateEvaluator`` otherwise, so every fetch answers exactly as the reference does.
final class PostgresPersistentStore: PersistentStore, Sendable {
    struct State: Sendable {
        var connection: PostgresConnection?
        var isClosed = false
        var metadata: StoreMetadata
        /// Keys reserved in the keys table but not handed out yet, per hierarchy.
        var reservedKeys: [String: Range<Int64>] = [:]
    }

    /// Keys reserved per round trip when fewer are asked for: a context allocates one key per insert.
    static let keyReservation: Int64 = 256

    let location: PostgresLocation
    let layout: PostgresLayout
    let isReadOnly: Bool
    let session: PostgresSessionOptions
    private let state: Mutex<State>
    /// Readers for fetches, counts and aggregates that find the store's connection busy; a broken one is closed.
    private let readers: ReaderConnectionPool<PostgresConnection>
    /// The version of every row this store read or wrote, per hierarchy (optimistic locking). Under a lock of its
    /// own, so that a read beside a save notes what it read without waiting for the save.
    private let versions = Mutex<[String: [Int64: Int64]]>([:])
    /// What ``changeToken()`` has heard: its listener, made by the first probe, and the saves it reported.
    let changeProbe = Mutex<ChangeProbe>(ChangeProbe())

    var url: URL? { location.url }

    init(location: PostgresLocation, connection: PostgresConnection, metadata: StoreMetadata, layout: PostgresLayout,
         isReadOnly: Bool, session: PostgresSessionOptions) {
        self.location = location
        self.layout = layout
        self.isReadOnly = isReadOnly
        self.session = session
        connection.uniqueIndexes = layout.uniqueIndexes
        self.state = Mutex(State(connection: connection, metadata: metadata))
        self.readers = ReaderConnectionPool(open: { [location, session, layout] in
            let c = try PostgresStoreBackend.connect(location, session)
            c.uniqueIndexes = layout.uniqueIndexes
            return c
        }, isReusable: { !$0.isBroken }, close: { $0.close() })
    }

    var metadata: StoreMetadata {
        state.withLock { s in
            // Another process may have replaced the metadata.
            if let c = try? connection(&s), let m = try? PostgresStoreBackend.readMetadata(c) { s.metadata = m }
            return s.metadata
        }
    }

    var schema: Schema { layout.schema }

    /// The open connection, reconnecting when the last one broke.
    private func connection(_ s: inout State) throws -> PostgresConnection {
        guard !s.isClosed else {
            throw StoreError.io(location.url, operation: "using the store", reason: "the store is closed")
        }
        if let c = s.connection, !c.isBroken { return c }
        s.connection?.close()
        s.connection = nil
        let c = try PostgresStoreBackend.connect(location, session)
        c.uniqueIndexes = layout.uniqueIndexes
        s.connection = c
        return c
    }

    func withConnection<T>(_ body: (PostgresConnection, inout State) throws -> T) throws -> T {
        try state.withLock { s in try body(try connection(&s), &s) }
    }

    /// Runs a read on the store's connection when it is free, else on a reader beside whatever holds it.
    func withReadConnection<T>(_ body: (PostgresConnection) throws -> T) throws -> T {
        if let result = try state.withLockIfAvailable({ s in try body(try connection(&s)) }) { return result }
        if let result = try readers.read(body) { return result }
        return try withConnection { c, _ in try body(c) }
    }

    func reader(_ c: PostgresConnection) -> PostgresRecordReader {
        PostgresRecordReader(layout: layout, connection: c, url: location.url)
    }

    /// Notes the versions of rows read for the first time since this store last wrote them. A later read does
    /// not move a version forward: the save path itself reads (the uniqueness checks fetch the records being
    /// saved), and a context holding what it read first must still meet the conflict.
    /// The rows are of hierarchy `root` (one read reads one table).
    private func remember(_ rows: [(Record, Int64)], root: String) -> [Record] {
        guard !rows.isEmpty else { return [] }
        versions.withLock { all in
            // Taken out while it grows, so that it is not copied.
            var known = all.removeValue(forKey: root) ?? [:]
            for (r, v) in rows where known[r.primaryKey] == nil { known[r.primaryKey] = v }
            all[root] = known
        }
        return rows.map(\.0)
    }

    // MARK: Reading

    func fetch(_ request: FetchRequest) throws -> [Record] {
        let root = try schema.requireEntity(request.entity).rootName
        let rows = try withReadConnection { c in try c.transaction(readOnly: true) { try fetchLocked(request, c) } }
        return remember(rows, root: root)
    }

    func count(_ request: FetchRequest) throws -> Int {
        try withReadConnection { c in
            try c.transaction(readOnly: true) {
                let entity = try schema.requireEntity(request.entity)
                try evaluator(reader(c)).validate(request)
                let (table, filter, parameters) = try candidates(entity, request.includesSubentities)
                var q = PostgresQueryTranslator(layout: layout, parameters: parameters)
                guard let fragment = request.predicate.map({ q.translateWithinLimits($0, entity: entity) })
                        ?? PostgresQueryTranslator.Fragment.alwaysTrue else {
                    var unsorted = request
                    unsorted.sortDescriptors = []
                    return try fetchLocked(unsorted, c).count
                }
                let from = "FROM \(PostgresLayout.quote(table.name)) AS t \(q.joins.joined(separator: " ")) \(Self.whereClause(filter, fragment))"
                let sql = request.offset > 0 || request.limit != nil
                    ? "SELECT count(*) FROM (SELECT 1 \(from) \(limitClause(request))) AS s"
                    : "SELECT count(*) \(from)"
                return Int(try c.execute(sql, q.parameters).int64(0, 0) ?? 0)
            }
        }
    }

    /// `WHERE` with the entity filter and the translated predicate.
    static func whereClause(_ filter: String, _ fragment: PostgresQueryTranslator.Fragment) -> String {
        let predicate = fragment.sql == "TRUE" ? "" : fragment.sql
        switch (filter.isEmpty, predicate.isEmpty) {
        case (true, true): return ""
        case (false, true): return "WHERE \(filter)"
        case (true, false): return "WHERE \(predicate)"
        case (false, false): return "WHERE \(filter) AND \(predicate)"
        }
    }

    /// `LIMIT … OFFSET …` with the evaluator's slicing rules (negative values count as zero); integers only.
    private func limitClause(_ request: FetchRequest) -> String {
        let limit = request.limit.map { "LIMIT \(max(0, $0))" } ?? ""
        return request.offset > 0 ? "\(limit) OFFSET \(request.offset)" : limit
    }

    /// The hierarchy table of `entity` and the condition that keeps the requested entities' rows (empty when the
    /// table holds no other entity), with its parameters.
    func candidates(_ entity: Entity, _ includesSubentities: Bool) throws -> (PGTable, String, [String?]) {
        guard let table = layout.tables[entity.rootName] else {
            throw StoreError.corruptStore(location.url, reason: "no table for the \(entity.rootName) hierarchy")
        }
        let names = includesSubentities ? entity.hierarchyNames : [entity.name]
        let codes = names.compactMap { layout.entities[$0]?.code }
        guard Set(codes) != Set(table.entityCodes) else { return (table, "", []) }
        return (table, "t._ent = ANY($1::integer[])", ["{" + codes.map(String.init).joined(separator: ",") + "}"])
    }

    func fetchLocked(_ request: FetchRequest, _ c: PostgresConnection) throws -> [(Record, Int64)] {
        let entity = try schema.requireEntity(request.entity)
        let reader = reader(c)
        // Errors about the request must not depend on which records exist or which path runs.
        try evaluator(reader).validate(request)
        let (table, filter, parameters) = try candidates(entity, request.includesSubentities)
        let select = "SELECT \(table.selectList) FROM \(PostgresLayout.quote(table.name)) AS t"
        var q = PostgresQueryTranslator(layout: layout, parameters: parameters)
        guard let fragment = request.predicate.map({ q.translateWithinLimits($0, entity: entity) })
                ?? PostgresQueryTranslator.Fragment.alwaysTrue else {
            // Not translatable: the reference evaluator does everything over the candidates.
            let rows = try reader.records("\(select) \(Self.whereClause(filter, .alwaysTrue)) ORDER BY t._pk", parameters, table: table)
            return try Self.evaluate(request, rows, evaluator(reader))
        }
        var sorted = q
        let order = sorted.orderBy(request.sortDescriptors, entity: entity)
        if order != nil { q = sorted }
        let base = "\(select) \(q.joins.joined(separator: " ")) \(Self.whereClause(filter, fragment))"
        guard let order else {
            // Filtered in SQL; sorted and sliced by the evaluator (a sort key it cannot translate, such as a decimal).
            let rows = try reader.records("\(base) ORDER BY t._pk", q.parameters, table: table)
            var unfiltered = request
            unfiltered.predicate = nil
            return try Self.evaluate(unfiltered, rows, evaluator(reader))
        }
        let orderSQL = (order + ["t._pk ASC"]).joined(separator: ", ")
        return try reader.records("\(base) ORDER BY \(orderSQL) \(limitClause(request))", q.parameters, table: table)
    }

    /// Runs `request` with the evaluator over `rows`, keeping each record's version.
    private static func evaluate(_ request: FetchRequest, _ rows: [(Record, Int64)], _ evaluator: PredicateEvaluator) throws
        -> [(Record, Int64)]
    {
        var versions: [Int64: Int64] = [:]
        for (r, v) in rows { versions[r.primaryKey] = v }
        let matched = try evaluator.execute(request, candidates: rows.map(\.0))
        return matched.map { ($0, versions[$0.primaryKey] ?? 0) }
    }

    /// The reference evaluator, following relationships through the connection of the read it serves.
    func evaluator(_ reader: PostgresRecordReader) -> PredicateEvaluator {
        PredicateEvaluator(schema: schema) { root, keys in try reader.records(withKeys: keys, root: root).map(\.0) }
    }

    func records(withKeys keys: [Int64], root: String) throws -> [Record] {
        let rows = try withReadConnection { c in
            try c.transaction(readOnly: true) { try reader(c).records(withKeys: keys, root: root) }
        }
        return remember(rows, root: root)
    }

    func scan(entity name: String, after primaryKey: Int64?, limit: Int) throws -> [Record] {
        try withConnection { c, _ in
            let (table, code) = try scanTarget(name)
            guard limit > 0 else { return [] }
            return try c.transaction(readOnly: true) {
                try reader(c).records(Self.scanSQL(table), Self.scanParameters(code, primaryKey, limit), table: table).map(\.0)
            }
        }
    }

    /// The rows of one entity after a key, in key order, at most a number of them: a page of a scan. Keyset
    /// paging, so each page is one index range whatever its position in the table.
    static func scanSQL(_ table: PGTable) -> String {
        "SELECT \(table.selectList) FROM \(PostgresLayout.quote(table.name)) AS t WHERE t._ent = $1 AND t._pk > $2 ORDER BY t._pk LIMIT $3"
    }

    static func scanParameters(_ code: Int64, _ after: Int64?, _ limit: Int) -> [String?] {
        [String(code), String(after ?? .min), String(limit)]
    }

    func scanKeys(entity name: String, after primaryKey: Int64?, limit: Int) throws -> [Int64] {
        try withConnection { c, _ in
            let (table, code) = try scanTarget(name)
            guard limit > 0 else { return [] }
            let rows = try c.execute(
                "SELECT _pk FROM \(PostgresLayout.quote(table.name)) WHERE _ent = $1 AND _pk > $2 ORDER BY _pk LIMIT $3",
                [String(code), String(primaryKey ?? .min), String(limit)])
            return (0..<rows.count).compactMap { rows.int64($0, 0) }
        }
    }

    func scanTarget(_ name: String) throws -> (PGTable, Int64) {
        _ = try schema.requireEntity(name)
        guard let el = layout.entities[name] else { throw StoreError.unknownEntity(name) }
        return (el.table, el.code)
    }

    func history(after token: Int64?) throws -> [HistoryTransaction] {
        try withConnection { c, _ in
            let rows = try c.execute(
                "SELECT token, json FROM \(PostgresLayout.quote(PostgresLayout.historyTable)) WHERE token > $1 ORDER BY token",
                [String(token ?? .min)])
            var result: [HistoryTransaction] = []
            for i in 0..<rows.count {
                guard let t = rows.int64(i, 0), let bytes = rows.bytes(i, 1, { PostgresValueCodec.bytes(fromHex: $0) }) ?? nil else {
                    throw StoreError.corruptStore(location.url, reason: "a history row is damaged")
                }
                var transaction = try HistoryTransaction.decode(bytes, url: location.url)
                transaction.token = t
                result.append(transaction)
            }
            return result
        }
    }

    // MARK: Writing

    /// The connection for the bulk-load steps (see `PostgresPersistentStore+BulkLoad.swift`).
    func withConnectionForBulkLoad<T>(_ body: (PostgresConnection) throws -> T) throws -> T {
        try withConnection { c, _ in try body(c) }
    }

    func refuseIfReadOnlyForBulkLoad() throws { try refuseIfReadOnly() }

    private func refuseIfReadOnly() throws {
        if isReadOnly { throw StoreError.readOnly(location.url, reason: "the store was opened read-only") }
    }

    func save(_ changes: StoreChanges) throws {
        try refuseIfReadOnly()
        guard !changes.isEmpty else { return }
        try withConnection { c, s in
            var newMetadata: StoreMetadata?
            let known = versions.withLock { $0 }
            let uuid = (changes.metadata ?? s.metadata).storeUUID
            let written: [(root: String, key: Int64, version: Int64?)]
            do {
                written = try c.transaction {
                if let m = changes.metadata {
                    try PostgresStoreBackend.checkLayoutCompatible(m, url: location.url, current: layout)
                    try PostgresStoreBackend.writeMetadata(m, c)
                    newMetadata = m
                }
                var writer = PostgresSaveWriter(layout: layout, connection: c, url: location.url, storeUUID: uuid,
                                                knownVersions: known)
                try writer.apply(changes)
                try c.notifySave(schema: location.schema)
                return writer.newVersions
                }
            } catch StoreError.conflict(let u, let object, let reason) {
                // Reported once: the record is read afresh (and saved against that version) from now on.
                if let root = layout.entities[object.entity]?.entity.rootName {
                    versions.withLock { $0[root]?[object.primaryKey] = nil }
                }
                throw StoreError.conflict(u, object: object, reason: reason)
            }
            // Only a committed save's versions count.
            versions.withLock { all in
                for v in written {
                    if let version = v.version {
                        all[v.root, default: [:]][v.key] = version
                    } else {
                        all[v.root]?[v.key] = nil
                    }
                }
            }
            for r in changes.inserted {
                guard let root = layout.entities[r.entity]?.entity.rootName, let block = s.reservedKeys[root],
                      block.contains(r.primaryKey) else { continue }
                s.reservedKeys[root] = r.primaryKey < block.upperBound - 1 ? (r.primaryKey + 1)..<block.upperBound : nil
            }
            if let m = newMetadata { s.metadata = m }
        }
    }

    func allocatePrimaryKeys(root: String, count: Int) throws -> Int64 {
        try refuseIfReadOnly()
        return try withConnection { c, s in
            guard let table = layout.tables[root] else { throw StoreError.unknownEntity(root) }
            let wanted = Int64(max(0, count))
            if let block = s.reservedKeys[root], Int64(block.count) >= wanted {
                s.reservedKeys[root] = (block.lowerBound + wanted)..<block.upperBound
                return block.lowerBound
            }
            let reserve = max(wanted, Self.keyReservation)
            // One statement: the keys row stays locked until it commits, so two processes never get one key twice.
            let rows = try c.execute(
                """
                UPDATE \(PostgresLayout.quote(PostgresLayout.keysTable))
                SET next = GREATEST(next, (SELECT COALESCE(MAX(_pk), 0) + 1 FROM \(PostgresLayout.quote(table.name)))) + $2::bigint
                WHERE root = $1 RETURNING next - $2::bigint
                """, [root, String(reserve)])
            guard let first = rows.int64(0, 0) else {
                throw StoreError.corruptStore(location.url, reason: "the key allocator of \(root) is missing")
            }
            s.reservedKeys[root] = (first + wanted)..<(first + reserve)
            return first
        }
    }

    func close() throws {
        readers.close()
        changeProbe.withLock { $0.close() }
        state.withLock { s in
            s.connection?.close()
            s.connection = nil
            s.isClosed = true
        }
    }

    /// The server process of the store's connection (tests terminate it mid-save).
    var backendPID: Int32 {
        state.withLock { s in s.connection?.backendPID ?? 0 }
    }
}
