import CSQLite
import Foundation
@_spi(BackendKit) import StoreAPI

extension CoreDataMetadata {
    /// The metadata Core Data writes into a new store for `model`: its entities' version hashes with the model's
    /// digest and checksum, the model's version identifiers, store type `SQLite`, hashes version 3, auto-vacuum
    /// level `"2"`, and `frameworkVersion` (by default the newest framework version seen in real stores).
    ///
    /// - Throws: `SchemaError` when the model does not make a valid schema (the hashes are computed from it).
    public init(newStoreFor model: CoreDataModel, frameworkVersion: Int64? = nil) throws(SchemaError) {
        let hashes = try model.schema().coreDataVersionHashes
        self.init(
            versionHashes: hashes.entityHashes, versionHashesVersion: 3, versionIdentifiers: model.versionIdentifiers,
            frameworkVersion: frameworkVersion ?? CoreDataLayoutGuesses.frameworkVersion,
            versionHashesDigest: hashes.digest, versionChecksum: hashes.checksum, autoVacuumLevel: "2")
    }
}

extension CoreDataLayout {
    /// Creates an empty Core Data store for `model` at `url`, as Core Data lays one out: page size 4096,
    /// `auto_vacuum` incremental, WAL journal, the model's tables and indexes, `Z_PRIMARYKEY` with one row per entity
    /// (`Z_MAX` 0), `Z_METADATA` (`Z_VERSION` 1, `uuid` in uppercase, `metadata` as a binary plist) and
    /// `Z_MODELCACHE`.
    ///
    /// The store is built under a temporary name beside `url` and renamed into place once complete and closed, so
    /// `url` either does not exist or is a whole store; SQLite checkpoints and removes the `-wal` when the
    /// connection closes, so only the main file remains.
    ///
    /// - Parameters:
    ///   - url: the store's main file; neither it nor a sidecar of it may exist.
    ///   - model: the model to lay out.
    ///   - uuid: the store UUID (`Z_METADATA.Z_UUID`, written in uppercase).
    ///   - metadata: the metadata plist; by default ``CoreDataMetadata/init(newStoreFor:frameworkVersion:)``.
    ///   - modelCache: the compressed model cache to store in `Z_MODELCACHE` (a store's `Z_MODELCACHE.Z_CONTENT`,
    ///     or ``CoreDataModelCache/encode(_:)`` of `model`); without one the table is created empty. [unverified:
    ///     whether Core Data accepts a store whose cache is empty; stores from before 2012 have none at all]
    ///   - persistentHistory: whether to add the persistent-history tables (``historyStatements``), as Core Data
    ///     does for a store opened with history tracking.
    /// - Throws: `StoreError.storeExists` when `url` or one of its sidecar files exists,
    ///   `StoreError.invalidSchema` when the model cannot be laid out or hashed, `StoreError.io` when SQLite fails.
    @discardableResult
    public static func createEmptyStore(
        at url: URL, model: CoreDataModel, uuid: UUID = UUID(), metadata: CoreDataMetadata? = nil,
        modelCache: [UInt8]? = nil, persistentHistory: Bool = false
    ) throws(StoreError) -> CoreDataLayout {
        let layout: CoreDataLayout
        let meta: CoreDataMetadata
        do throws(CoreDataFormatError) {
            layout = try CoreDataLayout(model: model)
        } catch {
            throw .invalidSchema(.unreadableModel(file: url.lastPathComponent, reason: error.description))
        }
        if let metadata {
            meta = metadata
        } else {
            do throws(SchemaError) {
                meta = try CoreDataMetadata(newStoreFor: model)
            } catch {
                throw .invalidSchema(error)
            }
        }
        let fm = FileManager.default
        for suffix in ["", "-wal", "-shm", "-journal"] where fm.fileExists(atPath: url.path + suffix) {
            throw .storeExists(URL(fileURLWithPath: url.path + suffix))
        }
        let staging = url.deletingLastPathComponent()
            .appendingPathComponent(".\(url.lastPathComponent).creating-\(UUID().uuidString)")
        func removeStaging() {
            for suffix in ["", "-wal", "-shm", "-journal"] { try? fm.removeItem(atPath: staging.path + suffix) }
        }
        do throws(StoreError) {
            let db = try CreatingDatabase(staging, reportAs: url)
            // Nothing waits for the disk while the file is built: it is not the store until it is moved into place,
            // and it is synced once before that (a crash before leaves a staging file, never a half-made store).
            try db.execute("PRAGMA synchronous = OFF")
            // Page size and auto-vacuum take effect only before the first table exists.
            try db.execute("PRAGMA page_size = 4096")
            try db.execute("PRAGMA auto_vacuum = 2")
            try db.execute("PRAGMA journal_mode = WAL")
            try db.execute("BEGIN EXCLUSIVE")
            for statement in layout.statements(persistentHistory: persistentHistory) { try db.execute(statement) }
            for row in layout.primaryKeyRows + (persistentHistory ? historyPrimaryKeyRows : []) {
                try db.run(
                    "INSERT INTO Z_PRIMARYKEY (Z_ENT, Z_NAME, Z_SUPER, Z_MAX) VALUES (?, ?, ?, ?)",
                    [.integer(row.entityNumber), .text(row.name), .integer(row.superNumber), .integer(row.maxPrimaryKey)])
            }
            try db.run(
                "INSERT INTO Z_METADATA (Z_VERSION, Z_UUID, Z_PLIST) VALUES (1, ?, ?)",
                [.text(uuid.uuidString.uppercased()), .blob(BinaryPropertyListWriter.write(meta.propertyList))])
            if let modelCache {
                try db.run("INSERT INTO Z_MODELCACHE (Z_CONTENT) VALUES (?)", [.blob(modelCache)])
            }
            try db.execute("COMMIT")
            try db.close()
            try CreatingDatabase.sync(staging, reportAs: url)
            do {
                try fm.moveItem(at: staging, to: url)
            } catch {
                throw StoreError.io(url, operation: "moving the new store into place", reason: error.localizedDescription)
            }
        } catch {
            removeStaging()
            throw error
        }
        return layout
    }
}

/// A read-write connection used only to create a new store; closed explicitly so that SQLite checkpoints and
/// removes the `-wal` before the file is moved into place.
final class CreatingDatabase {
    typealias Value = SQLiteValue

    private var db: OpaquePointer?
    private let url: URL

    init(_ file: URL, reportAs url: URL) throws(StoreError) {
        self.url = url
        var handle: OpaquePointer?
        let rc = sqlite3_open_v2(file.path, &handle, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nil)
        guard rc == SQLITE_OK, let handle else {
            let message = handle.map { String(cString: sqlite3_errmsg($0)) } ?? String(cString: sqlite3_errstr(rc))
            if let handle { sqlite3_close_v2(handle) }
            throw .io(url, operation: "creating the store", reason: message)
        }
        db = handle
    }

    deinit {
        if let db { sqlite3_close_v2(db) }
    }

    private func fail(_ sql: String) -> StoreError {
        let message = db.map { String(cString: sqlite3_errmsg($0)) } ?? "closed"
        return .io(url, operation: "creating the store: \(sql)", reason: message)
    }

    func execute(_ sql: String) throws(StoreError) {
        guard let db, sqlite3_exec(db, sql, nil, nil, nil) == SQLITE_OK else { throw fail(sql) }
    }

    func run(_ sql: String, _ values: [Value]) throws(StoreError) {
        guard let db else { throw fail(sql) }
        var statement: OpaquePointer?
        guard sqlite3_prepare_v2(db, sql, -1, &statement, nil) == SQLITE_OK, let stmt = statement else {
            sqlite3_finalize(statement)
            throw fail(sql)
        }
        defer { sqlite3_finalize(stmt) }
        guard SQLiteValue.bind(values, to: stmt) == SQLITE_OK else { throw fail(sql) }
        guard sqlite3_step(stmt) == SQLITE_DONE else { throw fail(sql) }
    }

    /// Writes the closed file at `file` to the disk (`fsync`), before it is moved into place.
    static func sync(_ file: URL, reportAs url: URL) throws(StoreError) {
        do {
            let handle = try FileHandle(forUpdating: file)
            defer { try? handle.close() }
            try handle.synchronize()
        } catch {
            throw .io(url, operation: "writing the new store to the disk", reason: error.localizedDescription)
        }
    }

    /// Closes the connection, reporting a failure (a close that fails leaves the `-wal` behind).
    func close() throws(StoreError) {
        guard let handle = db else { return }
        db = nil
        let rc = sqlite3_close(handle)
        guard rc == SQLITE_OK else {
            sqlite3_close_v2(handle)
            throw .io(url, operation: "closing the new store", reason: String(cString: sqlite3_errstr(rc)))
        }
    }
}
