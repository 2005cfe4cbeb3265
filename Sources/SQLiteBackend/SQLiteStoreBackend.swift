import CSQLite
import Foundation
import Logging
@_spi(BackendKit) import StoreAPI
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The SQLite backend (`sqlite`): an incremental store with a real relational layout — one table per entity
/// hierarchy, typed columns, foreign keys, join tables and indexes (see `SQLiteLayout.swift` for the layout).
///
/// Options read from ``StoreOptions/backend``:
/// - `sqlite.journal_mode`: `WAL` (default), `DELETE`, `TRUNCATE`, `PERSIST` or `MEMORY`.
/// - `sqlite.synchronous`: `OFF`, `NORMAL` (default in WAL mode), `FULL` (default otherwise) or `EXTRA`.
///
/// ``StoreOptions/timeout`` is the busy timeout: how long a writer waits for another connection (in this process or
/// another) before failing with ``StoreError/locked(_:reason:)``. ``StoreOptions/isReadOnly`` opens the file with
/// `SQLITE_OPEN_READONLY`.
///
/// A store is recognised without SQLite from its file header: the `SQLite format 3` magic and the application ID
/// `0x53415049` ("SAPI"); `PRAGMA user_version` holds the layout version. Other SQLite databases (Core Data stores
/// among them) are reported as foreign and never modified.
public struct SQLiteStoreBackend: StoreBackend {
    /// The type identifier, `sqlite`.
    public static let typeIdentifier = "sqlite"

    /// Creates the backend.
    public init() {}

    /// `sqlite`.
    public var typeIdentifier: String { Self.typeIdentifier }
    /// `sqlite`, `sqlite3` and `db`.
    public var fileExtensions: [String] { ["sqlite", "sqlite3", "db"] }
    /// Persistent, transactional, shared between processes (SQLite's locking), with history and ordered
    /// relationships, an online fast copy (the backup API), and pages of records read without making records.
    public var capabilities: BackendCapabilities {
        [.persistent, .transactions, .multiProcess, .history, .orderedRelationships, .onlineBackup, .fastCopy, .recordPages]
    }

    /// The sidecar suffixes SQLite may create next to a database.
    static let sidecarSuffixes = ["-wal", "-shm", "-journal"]

    // MARK: Files

    /// Reads the 100-byte file header with plain file I/O (SQLite never opens the file): the magic tells an SQLite
    /// database, the application ID one of ours.
    public func sniff(_ url: URL) -> SniffResult {
        switch SQLiteHeader.read(url) {
        case .missing, .directory, .unreadable, .empty, .notSQLite:
            return .none
        case .truncated:
            return .foreign("SQLite database, but truncated (shorter than its 100-byte header)")
        case .damaged:
            return .foreign("SQLite database, but its header is damaged")
        case .sqlite(let applicationID, _):
            if applicationID == SQLiteLayout.applicationID { return .store }
            return .foreign(
                "SQLite database, but not a store (no StoreAPI application id; application id is \(applicationID))")
        }
    }

    /// The database file, then whichever of `-wal`, `-shm` and `-journal` exist beside it.
    public func ownedFiles(ofStoreAt url: URL) -> [URL] {
        let fm = FileManager.default
        var isDirectory: ObjCBool = false
        // A directory is never a store's main file (nor are its neighbours a store's sidecars).
        guard fm.fileExists(atPath: url.path, isDirectory: &isDirectory), !isDirectory.boolValue else { return [] }
        return [url] + Self.sidecarSuffixes.map { Self.sidecar(url, $0) }.filter { fm.fileExists(atPath: $0.path) }
    }

    static func sidecar(_ url: URL, _ suffix: String) -> URL {
        url.deletingLastPathComponent().appendingPathComponent(url.lastPathComponent + suffix)
    }

    /// Throws the typed error for anything at `url` that is not a store of this backend.
    func requireStore(_ url: URL) throws {
        switch SQLiteHeader.read(url) {
        case .missing:
            throw StoreError.storeNotFound(url)
        case .directory:
            throw StoreError.unrecognizedStore(url, reason: "it is a directory, not an SQLite database")
        case .unreadable(let why):
            throw StoreError.io(url, operation: "reading the file header", reason: why)
        case .empty:
            throw StoreError.unrecognizedStore(url, reason: "the file is empty")
        case .notSQLite:
            throw StoreError.unrecognizedStore(url, reason: "not an SQLite database (no SQLite header)")
        case .truncated:
            throw StoreError.corruptStore(url, reason: "truncated: shorter than the 100-byte SQLite header")
        case .damaged:
            throw StoreError.corruptStore(url, reason: "the SQLite header is damaged (impossible page size or payload fractions)")
        case .sqlite(let applicationID, let version):
            guard applicationID == SQLiteLayout.applicationID else {
                throw StoreError.wrongStoreType(
                    url, expected: typeIdentifier,
                    found: "SQLite database, but not a store (no StoreAPI application id)")
            }
            guard version <= SQLiteLayout.layoutVersion else {
                throw StoreError.unsupported(
                    "\(url.path): SQLite store layout version \(version) (this version reads up to \(SQLiteLayout.layoutVersion))")
            }
        }
    }

    // MARK: Metadata

    /// Reads the metadata row through a read-only connection (leaving no `-wal`/`-shm` behind).
    public func readMetadata(at url: URL) throws -> StoreMetadata {
        try requireStore(url)
        return try withReadConnection(url) { c in
            try requireMetadataTable(c)
            return try StoreMetadata.decode(SQLitePersistentStore.readMetadataJSON(c), url: url)
        }
    }

    /// Replaces the metadata row in one write transaction. Refuses (``StoreError/incompatibleSchema(_:entities:)``)
    /// metadata whose schema would lay records out differently from the store's tables.
    public func writeMetadata(_ metadata: StoreMetadata, at url: URL) throws {
        try requireStore(url)
        let c = try SQLiteConnection.open(url, readOnly: false, timeout: StoreOptions().timeout)
        defer { c.close() }
        if sqlite3_db_readonly(c.db, "main") == 1 {
            throw StoreError.readOnly(url, reason: "the file is not writable")
        }
        try requireMetadataTable(c)
        try c.transaction(write: true) {
            let current = try StoreMetadata.decode(SQLitePersistentStore.readMetadataJSON(c), url: url)
            try checkLayoutCompatible(metadata, url: url, current: SQLiteLayout(schema: current.schema))
            try SQLitePersistentStore.writeMetadataJSON(metadata.encoded(), c)
        }
    }

    /// Runs `body` with a read-only connection, then closes it and removes the `-wal`/`-shm` files the read created
    /// (SQLite creates them even for readers of a WAL database), so reading leaves no trace.
    func withReadConnection<T>(_ url: URL, timeout: Double = StoreOptions().timeout, _ body: (SQLiteConnection) throws -> T)
        throws -> T
    {
        let hadSidecars = Self.hasWALSidecars(url)
        let c = try openForReading(url, timeout: timeout)
        defer {
            c.close()
            if !hadSidecars { Self.removeSidecarsIfUnused(url) }
        }
        return try body(c)
    }

    /// The size of a non-empty `-wal` that no connection has open: one left by a process that crashed or was
    /// killed (the last connection to close checkpoints and removes it). Zero when there is none or it is in use.
    static func walLeftByAnEndedConnection(_ url: URL) -> Int64 {
        var info = stat()
        guard stat(sidecar(url, "-wal").path, &info) == 0, info.st_size > 0 else { return 0 }
        return (try? SQLiteStoreBackend().isInUse(at: url)) == false ? Int64(info.st_size) : 0
    }

    static func hasWALSidecars(_ url: URL) -> Bool {
        ["-wal", "-shm"].contains { FileManager.default.fileExists(atPath: sidecar(url, $0).path) }
    }

    /// Deletes `-wal` and `-shm` if no connection uses them, the way SQLite itself does: the last read-write
    /// connection to close checkpoints (a no-op for an empty log, leaving the database file untouched) and removes
    /// them. Another open connection keeps them; a file that cannot be written keeps them too.
    static func removeSidecarsIfUnused(_ url: URL) {
        guard hasWALSidecars(url), let c = try? SQLiteConnection.open(url, readOnly: false, timeout: 0) else { return }
        if sqlite3_db_readonly(c.db, "main") == 0 { _ = try? c.int64("SELECT count(*) FROM sqlite_schema") }
        c.close()
    }

    /// A read-only connection; on read-only media without a `-shm`, falls back to an immutable open when no
    /// `-wal` holds data.
    func openForReading(_ url: URL, timeout: Double = StoreOptions().timeout) throws -> SQLiteConnection {
        let c = try SQLiteConnection.open(url, readOnly: true, timeout: timeout)
        do {
            _ = try c.int64("SELECT count(*) FROM sqlite_schema")
            return c
        } catch let error as StoreError {
            c.close()
            // An empty -wal holds no data either (a reader that had the store open when it was copied, or that
            // crashed, leaves one), so the main file is the whole store.
            let wal = Self.sidecar(url, "-wal")
            var walStat = stat()
            let walBytes = stat(wal.path, &walStat) == 0 ? Int64(walStat.st_size) : 0
            guard case .io = error, walBytes == 0 else {
                throw error
            }
            let immutable = try SQLiteConnection.open(url, readOnly: true, timeout: timeout, immutable: true)
            _ = try immutable.int64("SELECT count(*) FROM sqlite_schema")
            return immutable
        }
    }

    func requireMetadataTable(_ c: SQLiteConnection) throws {
        let n = try c.withStatement("SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = ?") { s in
            try s.bind(1, SQLiteLayout.metadataTable)
            return try s.step() ? s.int64(0) : 0
        }
        guard n == 1 else { throw StoreError.corruptStore(c.url, reason: "the metadata table is missing") }
    }

    // MARK: Open

    /// Opens the store at `url`, or creates it from `creating` in a staging file linked into place only when
    /// complete. An existing store is always opened with its own stored schema.
    public func open(at url: URL?, options: StoreOptions, creating: StoreMetadata?) throws -> any PersistentStore {
        guard let url else { throw StoreError.unsupported("an SQLite store without a file URL") }
        let settings = try ConnectionSettings(options)
        if SQLiteHeader.read(url) == .missing {
            guard let creating, options.createIfMissing else { throw StoreError.storeNotFound(url) }
            guard !options.isReadOnly else {
                throw StoreError.readOnly(url, reason: "no store exists, and a read-only open does not create one")
            }
            let created = try SQLiteStoreCreator(url: url).create(creating)
            do {
                return try openExisting(url, options: options, settings: settings)
            } catch {
                if created {
                    for f in ownedFiles(ofStoreAt: url).reversed() { try? FileManager.default.removeItem(at: f) }
                }
                throw error
            }
        }
        return try openExisting(url, options: options, settings: settings)
    }

    private func openExisting(_ url: URL, options: StoreOptions, settings: ConnectionSettings) throws -> SQLitePersistentStore {
        try requireStore(url)
        let hadSidecars = Self.hasWALSidecars(url)
        let recoveredWALBytes = !options.isReadOnly && hadSidecars ? Self.walLeftByAnEndedConnection(url) : 0
        let c = options.isReadOnly
            ? try openForReading(url, timeout: options.timeout)
            : try SQLiteConnection.open(url, readOnly: false, timeout: options.timeout)
        do {
            if !options.isReadOnly, sqlite3_db_readonly(c.db, "main") == 1 {
                throw StoreError.readOnly(url, reason: "the file is not writable (open it read-only to read it)")
            }
            // Check everything before the first write (the journal mode switch), so a damaged file is not touched.
            try requireMetadataTable(c)
            let json = try SQLitePersistentStore.readMetadataJSON(c)
            let metadata = try StoreMetadata.decode(json, url: url)
            let layout = SQLiteLayout(schema: metadata.schema)
            let problems = try SQLiteLayoutVerifier.problems(c, layout)
            guard problems.isEmpty else {
                throw StoreError.corruptStore(url, reason: problems.joined(separator: "; "))
            }
            if !options.isReadOnly { try settings.apply(to: c) }
            let store = SQLitePersistentStore(
                url: url, connection: c, metadata: metadata, metadataJSON: json, layout: layout,
                cleansSidecarsOnClose: options.isReadOnly && !hadSidecars,
                readers: !options.isReadOnly && settings.journalMode == "WAL"
                    ? SQLiteReaders(url: url, timeout: options.timeout) : nil)
            OpenStores.register(store)
            if recoveredWALBytes > 0 {
                // SQLite rebuilt its index of the log on the first read above; the committed transactions in it are
                // part of the store, and the next checkpoint moves them into the database file.
                Logger.current.info("recovered the -wal of a connection that ended without closing", metadata: [
                    "store": .string(url.path), "wal_bytes": "\(recoveredWALBytes)",
                ])
            }
            return store
        } catch {
            c.close()
            if options.isReadOnly, !hadSidecars { Self.removeSidecarsIfUnused(url) }
            throw error
        }
    }

    // MARK: Destroy, copy, check

    /// Closes this process's connections to the store, then deletes its sidecars and finally its database file.
    public func destroyStore(at url: URL) throws {
        switch sniff(url) {
        case .store:
            break
        case .foreign(let what):
            throw StoreError.wrongStoreType(url, expected: typeIdentifier, found: what)
        case .none:
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory) else {
                throw StoreError.storeNotFound(url)
            }
            throw StoreError.wrongStoreType(
                url, expected: typeIdentifier, found: isDirectory.boolValue ? "a directory" : "a file of another kind")
        }
        OpenStores.invalidateAll(at: url)
        // Fold a hot -wal into the database first (closing the last connection checkpoints and removes it): a
        // destroy killed after deleting the -wal would otherwise leave a main file that looks whole but lacks the
        // commits the log held — and relocate, resuming, would copy that stale store over the complete new one.
        Self.removeSidecarsIfUnused(url)
        // Sidecars first: until the main file goes, the path is still a store and a retry finishes the job.
        for file in ownedFiles(ofStoreAt: url).reversed() {
            do {
                try FileManager.default.removeItem(at: file)
            } catch {
                if FileManager.default.fileExists(atPath: file.path) {
                    throw StoreError.io(file, operation: "deleting", reason: "\(error.localizedDescription)")
                }
            }
        }
        try? AtomicFile.fsyncDirectory(of: url)
    }

    /// Copies with SQLite's online backup API: a consistent snapshot including data still in the source's `-wal`,
    /// taken while writers keep going, staged beside `destination` and linked into place.
    public func copyStore(from source: URL, to destination: URL) throws {
        switch sniff(source) {
        case .store:
            break
        case .foreign(let what):
            throw StoreError.wrongStoreType(source, expected: typeIdentifier, found: what)
        case .none:
            guard FileManager.default.fileExists(atPath: source.path) else { throw StoreError.storeNotFound(source) }
            throw StoreError.wrongStoreType(source, expected: typeIdentifier, found: "a file of another kind")
        }
        try SQLiteStoreCopier(source: source, destination: destination).copy()
    }

    /// `PRAGMA integrity_check` and `PRAGMA foreign_key_check`, plus the metadata and the tables its layout needs.
    public func checkIntegrity(at url: URL) throws -> [String] {
        try requireStore(url)
        return try withReadConnection(url) { c in try integrityProblems(c, url) }
    }

    private func integrityProblems(_ c: SQLiteConnection, _ url: URL) throws -> [String] {
        var problems: [String] = []
        do {
            let rows = try c.textRows("PRAGMA integrity_check")
            if rows != ["ok"] { problems += rows }
            problems += try c.textRows("PRAGMA foreign_key_check").map { "foreign key violation in \($0)" }
        } catch let error as StoreError {
            if case .corruptStore(_, let reason) = error { return [reason] }
            throw error
        }
        do {
            try requireMetadataTable(c)
            let metadata = try StoreMetadata.decode(SQLitePersistentStore.readMetadataJSON(c), url: url)
            problems += try SQLiteLayoutVerifier.problems(c, SQLiteLayout(schema: metadata.schema))
        } catch let error as StoreError {
            if case .corruptStore(_, let reason) = error { return problems + [reason] }
            throw error
        }
        return problems
    }
}
