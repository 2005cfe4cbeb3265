import Foundation
@_spi(BackendKit) import StoreAPI

/// The PostgreSQL backend (`postgres`): an incremental store in one schema of a PostgreSQL database, shared by
/// every process and machine that can reach the server.
///
/// A store is named by a URL, `postgres://[user[:password]@]host[:port]/database?schema=NAME`, plus libpq
/// parameters in the query (`host=` a socket directory, `sslmode`, `connect_timeout`, …) and `statement_timeout`
/// (seconds). It lives in its own PostgreSQL schema — its tables, indexes, metadata and history, nothing outside
/// it — laid out as the <doc:PostgreSQL> article describes. Sniffing a URL asks the server whether that schema holds a
/// store; destroying one drops exactly that schema, and refuses a schema that is not a store.
///
/// Saves are transactions; updates are checked against each row's version (optimistic locking), so two writers
/// changing one record never lose an update: the later one fails with ``StoreError/conflict(_:object:reason:)``.
/// ``StoreOptions/timeout`` bounds the connect; ``connectTimeoutOptionKey`` and ``statementTimeoutOptionKey`` set the
/// connect and statement timeouts as description options.
///
/// The client library is libpq, through the `CLibPQ` system-library target: the backend protocols are
/// synchronous, libpq speaks the protocol (COPY included) directly, and it adds no event-loop framework to the
/// build. Only applications that import this module link libpq.
public struct PostgresStoreBackend: ServerStoreBackend {
    /// The type identifier, `postgres`.
    public static let typeIdentifier = "postgres"

    /// Creates the backend.
    public init() {}

    /// `postgres`.
    public var typeIdentifier: String { Self.typeIdentifier }
    /// None: stores are named by `postgres://` URLs, not files.
    public var fileExtensions: [String] { [] }
    /// Persistent, transactional, shared between processes, with history and ordered relationships; copies on one
    /// server are made inside it (``copyStore(from:to:)``); stores read record pages, so a conversion off the
    /// server to a store that inserts pages makes no record on the way.
    public var capabilities: BackendCapabilities {
        [.persistent, .transactions, .multiProcess, .history, .orderedRelationships, .fastCopy, .recordPages]
    }

    /// The description option (``StoreAPI/StoreOptions/backend``) giving the seconds a connect may take, when the URL
    /// has no `connect_timeout` (default: ``StoreAPI/StoreOptions/timeout``).
    public static let connectTimeoutOptionKey = "postgres.connect_timeout"

    /// The description option (``StoreAPI/StoreOptions/backend``) giving the seconds any statement of the store's
    /// connections may run before the server cancels it, when the URL has no `statement_timeout` (default: none).
    public static let statementTimeoutOptionKey = "postgres.statement_timeout"

    /// How long a sniff waits for the server: it runs for every store type detection.
    static let sniffTimeout: Double = 5

    /// Whether `url` is a `postgres://` or `postgresql://` URL.
    public func handles(_ url: URL) -> Bool { PostgresLocation.isPostgresURL(url) }

    // MARK: Connections

    static func connect(_ location: PostgresLocation, timeout: Double) throws -> PostgresConnection {
        try connect(location, PostgresSessionOptions(connectTimeout: timeout))
    }

    static func connect(_ location: PostgresLocation, _ session: PostgresSessionOptions) throws -> PostgresConnection {
        let c = try PostgresConnection(location, connectTimeout: session.connectTimeout,
                                       statementTimeoutMilliseconds: session.statementTimeoutMilliseconds)
        // Unqualified names resolve in the store's schema only (pg_catalog aside, which no store name shadows).
        try c.execute("SELECT set_config('search_path', $1, false)", [PostgresLayout.quote(location.schema)])
        return c
    }

    /// What the server holds at the location's schema.
    enum Presence { case none, schemaWithoutStore, store }

    static func presence(_ c: PostgresConnection) throws -> Presence {
        let rows = try c.execute(
            """
            SELECT n.oid IS NOT NULL, EXISTS (SELECT 1 FROM pg_catalog.pg_class k WHERE k.relnamespace = n.oid AND k.relname = $2)
            FROM (SELECT $1::name AS name) AS q LEFT JOIN pg_catalog.pg_namespace n ON n.nspname = q.name
            """, [c.location.schema, PostgresLayout.metadataTable])
        guard rows.text(0, 0) == "t" else { return .none }
        return rows.text(0, 1) == "t" ? .store : .schemaWithoutStore
    }

    /// Connects to `url`'s server and checks that its schema holds a store.
    func connectToStore(_ url: URL, timeout: Double = StoreOptions().timeout) throws -> PostgresConnection {
        let location = try PostgresLocation(url)
        let c = try Self.connect(location, timeout: timeout)
        switch try Self.presence(c) {
        case .store: return c
        case .none: throw StoreError.storeNotFound(url)
        case .schemaWithoutStore:
            throw StoreError.wrongStoreType(url, expected: typeIdentifier, found: "a PostgreSQL schema that holds no store")
        }
    }

    // MARK: Files

    /// Asks the server whether the URL's schema holds a store (`.foreign` for a schema without one, or when the
    /// server cannot be asked, with the reason). Anything but a `postgres://` URL is `.none`.
    public func sniff(_ url: URL) -> SniffResult {
        guard handles(url) else { return .none }
        do {
            let c = try Self.connect(try PostgresLocation(url), timeout: Self.sniffTimeout)
            defer { c.close() }
            switch try Self.presence(c) {
            case .none: return .none
            case .schemaWithoutStore: return .foreign("a PostgreSQL schema that holds no store")
            case .store: return .store
            }
        } catch {
            return .foreign("a PostgreSQL URL whose server could not be asked: \(error)")
        }
    }

    /// None: a store on a server has no files.
    public func ownedFiles(ofStoreAt url: URL) -> [URL] { [] }

    // MARK: Metadata

    public func readMetadata(at url: URL) throws -> StoreMetadata {
        let c = try connectToStore(url)
        defer { c.close() }
        return try Self.readMetadata(c)
    }

    /// Replaces the metadata row in one transaction, refusing metadata whose schema would lay records out
    /// differently (``StoreError/incompatibleSchema(_:entities:)``).
    public func writeMetadata(_ metadata: StoreMetadata, at url: URL) throws {
        let c = try connectToStore(url)
        defer { c.close() }
        try c.transaction {
            let current = try Self.readMetadata(c)
            try Self.checkLayoutCompatible(metadata, url: url, current: PostgresLayout(schema: current.schema))
            try Self.writeMetadata(metadata, c)
        }
    }

    static func readMetadata(_ c: PostgresConnection) throws -> StoreMetadata {
        let rows = try c.execute("SELECT layout, json FROM \(PostgresLayout.quote(PostgresLayout.metadataTable)) WHERE id = 1")
        guard rows.count == 1, let layout = rows.int64(0, 0),
              let json = rows.bytes(0, 1, { PostgresValueCodec.bytes(fromHex: $0) }) ?? nil
        else { throw StoreError.corruptStore(c.url, reason: "the metadata row is missing") }
        guard layout <= PostgresLayout.layoutVersion else {
            throw StoreError.unsupported(
                "\(c.url.storeName): PostgreSQL store layout version \(layout) (this version reads up to \(PostgresLayout.layoutVersion))")
        }
        return try StoreMetadata.decode(json, url: c.url)
    }

    static func writeMetadata(_ metadata: StoreMetadata, _ c: PostgresConnection) throws {
        try c.execute(
            """
            INSERT INTO \(PostgresLayout.quote(PostgresLayout.metadataTable)) (id, layout, json) VALUES (1, $1, $2)
            ON CONFLICT (id) DO UPDATE SET layout = excluded.layout, json = excluded.json
            """, [String(PostgresLayout.layoutVersion), PostgresValueCodec.hex(try metadata.encoded())])
    }

    /// Refuses metadata whose schema would lay records out differently from the store's tables.
    static func checkLayoutCompatible(_ metadata: StoreMetadata, url: URL, current: PostgresLayout) throws {
        guard PostgresLayout(schema: metadata.schema).fingerprint != current.fingerprint else { return }
        var differing = metadata.incompatibleEntities(with: current.schema)
        if differing.isEmpty { differing = metadata.schema.entities.map(\.name) }
        throw StoreError.incompatibleSchema(url, entities: differing)
    }

    // MARK: Open

    /// Opens the store in the URL's schema, or creates it — schema, tables, indexes, metadata, key rows — in one
    /// transaction, so a failed or concurrent creation leaves nothing behind.
    public func open(at url: URL?, options: StoreOptions, creating: StoreMetadata?) throws -> any PersistentStore {
        guard let url else { throw StoreError.unsupported("a PostgreSQL store without a postgres:// URL") }
        guard handles(url) else {
            throw StoreError.unrecognizedStore(url, reason: "a PostgreSQL store is named by a postgres:// URL")
        }
        let location = try PostgresLocation(url)
        let session = try PostgresSessionOptions(options, location: location)
        let c = try Self.connect(location, session)
        do {
            switch try Self.presence(c) {
            case .store:
                break
            case .schemaWithoutStore:
                throw StoreError.wrongStoreType(url, expected: typeIdentifier, found: "a PostgreSQL schema that holds no store")
            case .none:
                guard let creating, options.createIfMissing else { throw StoreError.storeNotFound(url) }
                guard !options.isReadOnly else {
                    throw StoreError.readOnly(url, reason: "no store exists, and a read-only open does not create one")
                }
                try create(creating, location: location, c)
            }
            let metadata = try Self.readMetadata(c)
            if options.isReadOnly { try c.execute("SET default_transaction_read_only = on") }
            return PostgresPersistentStore(
                location: location, connection: c, metadata: metadata, layout: PostgresLayout(schema: metadata.schema),
                isReadOnly: options.isReadOnly, session: session)
        } catch {
            c.close()
            throw error
        }
    }

    private func create(_ metadata: StoreMetadata, location: PostgresLocation, _ c: PostgresConnection) throws {
        let layout = PostgresLayout(schema: metadata.schema)
        do {
            try c.transaction {
                try c.execute("CREATE SCHEMA \(PostgresLayout.quote(location.schema))")
                for statement in layout.creationStatements { try c.execute(statement) }
                for root in metadata.schema.rootEntities {
                    try c.execute("INSERT INTO \(PostgresLayout.quote(PostgresLayout.keysTable)) (root, next) VALUES ($1, 1)", [root.name])
                }
                try Self.writeMetadata(metadata, c)
            }
        } catch let error as StoreError {
            // Another process created the schema first (duplicate_schema): that store is opened instead.
            if case .io(_, _, let reason) = error, reason.contains("SQLSTATE 42P06") || reason.contains("SQLSTATE 23505") {
                return
            }
            throw error
        }
    }

    // MARK: Destroy

    /// Drops the store's schema (and so everything in it) in one transaction, after checking that it is a store
    /// and holds nothing but the store's own tables: a schema with other tables, views, sequences or functions
    /// is refused.
    public func destroyStore(at url: URL) throws {
        let c = try connectToStore(url)
        defer { c.close() }
        try c.transaction {
            let metadata = try Self.readMetadata(c)
            let layout = PostgresLayout(schema: metadata.schema)
            let own = Set([PostgresLayout.metadataTable, PostgresLayout.keysTable, PostgresLayout.historyTable]
                          + layout.tables.values.map(\.name) + layout.joinTables.map(\.name))
            let rows = try c.execute(
                """
                SELECT k.relname, k.relkind FROM pg_catalog.pg_class k JOIN pg_catalog.pg_namespace n ON n.oid = k.relnamespace
                WHERE n.nspname = $1 AND k.relkind NOT IN ('i', 'I', 't')
                UNION ALL SELECT p.proname, 'f' FROM pg_catalog.pg_proc p JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace
                WHERE n.nspname = $1
                """, [c.location.schema])
            let foreign = (0..<rows.count).compactMap { i -> String? in
                guard let name = rows.text(i, 0), rows.text(i, 1) == "r", own.contains(name) else { return rows.text(i, 0) ?? "?" }
                return nil
            }
            guard foreign.isEmpty else {
                throw StoreError.refused(
                    url, reason: "the schema holds objects that are not the store's (\(foreign.prefix(5).joined(separator: ", "))); not dropping it")
            }
            try c.execute("DROP SCHEMA \(PostgresLayout.quote(c.location.schema)) CASCADE")
        }
    }

    // MARK: Staging

    /// A schema named `_stage_<random>_<schema>` in the same database.
    public func stagingLocation(for destination: URL) throws -> URL {
        let location = try PostgresLocation(destination)
        let prefix = "_stage_\(UUID().uuidString.prefix(8).lowercased())_"
        return location.withSchema(PostgresLayout.fit(prefix + location.schema, fallback: prefix))
    }

    /// In one transaction: drops the store at `destination` (when replacing), then renames the staged schema.
    public func placeStagedStore(_ staged: URL, at destination: URL, replacingExisting: Bool) throws {
        let from = try PostgresLocation(staged)
        let to = try PostgresLocation(destination)
        let c = try Self.connect(to, timeout: StoreOptions().timeout)
        defer { c.close() }
        try c.transaction {
            switch try Self.presence(c) {
            case .none: break
            case .store:
                guard replacingExisting else { throw StoreError.storeExists(destination) }
                try c.execute("DROP SCHEMA \(PostgresLayout.quote(to.schema)) CASCADE")
            case .schemaWithoutStore:
                throw StoreError.refused(destination, reason: "the schema exists and is not a store; not replacing it")
            }
            try c.execute("ALTER SCHEMA \(PostgresLayout.quote(from.schema)) RENAME TO \(PostgresLayout.quote(to.schema))")
        }
    }

    /// Drops the staged schema if it holds a store.
    public func discardStagedStore(_ staged: URL) {
        try? destroyStore(at: staged)
    }
}
