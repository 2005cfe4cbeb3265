import CSQLite
import Foundation
@_spi(BackendKit) import StoreAPI
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The Core Data backend (`coredata`): Core Data's own SQLite stores (`NSSQLiteStoreType`), the `Name.sqlite` with
/// `-wal` and `-shm` every iOS and macOS app keeps, read without the app's model (or with it, when given).
///
/// ``open(at:options:creating:)`` reads an existing store read-only when ``StoreOptions/isReadOnly`` is set (reading
/// never changes the store's files; see ``CoreDataStoreFile`` for how a `-wal` is read without a checkpoint), opens
/// it writable otherwise, and creates a new store from `creating`'s schema in Core Data's layout. Saves write Core
/// Data's rows in one SQLite transaction (`CoreDataStore`): values in Core Data's encodings, `Z_OPT`,
/// `Z_PRIMARYKEY.Z_MAX`, foreign keys, `Z_FOK_` order (spaced by 1024) and join tables; derived-attribute triggers
/// run with no-op stand-ins for the functions Core Data registers. A store converted away from `coredata` and back
/// keeps its records, keys, global identifiers and relationship order.
///
/// What writing cannot do:
/// - keep the tombstones of the framework's history (the uniqueness-constrained values of a deleted record): Core
///   Data's history has no place for them (see `CoreDataHistoryWriter`);
/// - write a store with CloudKit tables (`ANSCK*`) unless ``allowCloudKitWritesOption`` says so.
///
/// - **Schema**: decoded from `Z_MODELCACHE`, the compiled model Core Data keeps in the store. Stores older than
///   the cache (before 2012) get a model inferred from `Z_PRIMARYKEY` and their tables: entities, hierarchy and
///   column types are the store's, property names (lower-cased columns) and exact types are guesses, and the
///   inferred schema cannot reproduce the stored version hashes (``CoreDataModelSource`` reports the differing
///   entities, a warning only). Or the **app's model** (``modelOptionKey`` in `StoreOptions.backend`, or
///   ``modelURL``) is used instead of either, once its version hashes are the store's; a model of another version
///   is refused with ``StoreError/incompatibleSchema(_:entities:)`` naming each entity that differs.
/// - **Records**: entities map by the `Z_ENT` numbers computed from the model (``CoreDataModel/entityNumbers()``),
///   never by `Z_PRIMARYKEY.Z_NAME`, which a rename leaves stale. The primary key is `Z_PK`.
/// - **Identity**: the store UUID is `Z_UUID`. Core Data has no global identifiers; each record's is a name-based
///   (version 5) UUID of the store UUID, the hierarchy's root entity and `Z_PK`, the same on every read. A record
///   saved with another identifier keeps it in one extra table, `STOREKIT_GLOBALID` (`CoreDataGlobalIDTable`),
///   created by the first save that needs it.
/// - **Metadata**: the store type is `coredata`; the app's own keys in Core Data's metadata plist are the custom
///   metadata (dates become ISO 8601 strings and data base64 strings, which `MetadataValue` has no case for).
///
/// A Core Data store is only ever found by sniffing (``fileExtensions`` is empty): a new `.sqlite` path stays the
/// `sqlite` backend's unless the `coredata` type is named.
public struct CoreDataStoreBackend: StoreBackend {
    /// The type identifier, `coredata`.
    public static let typeIdentifier = "coredata"

    /// Why a read-only open refuses writes, for errors.
    static let readOnlyReason = "the store was opened read-only"

    /// The app's model every store is read with when the open's options name none (``modelOptionKey``); `nil`
    /// reads each store with the model it keeps, or one inferred from its tables.
    public let modelURL: URL?

    /// The option (in `StoreOptions.backend`) naming the app's model a store is read with: a path to an
    /// `.xcdatamodel`, an `.xcdatamodeld` (its current version) or a compiled `.mom`.
    public static let modelOptionKey = CoreDataAppModel.optionKey

    /// Creates the backend; `model` is the app's model to read every store with (see ``modelURL``).
    public init(model: URL? = nil) {
        modelURL = model
    }

    /// `coredata`.
    public var typeIdentifier: String { Self.typeIdentifier }

    /// None: Core Data stores use `.sqlite` like the framework's own SQLite stores, so they are recognised by their
    /// tables, never by name.
    public var fileExtensions: [String] { [] }

    /// Persistent, transactional (a failed save leaves the store as it was), ordered relationships keep their
    /// order; ``copyStore(from:to:)`` copies the file with SQLite's backup API (`fastCopy`); stores read pages of
    /// records (`recordPages`: a conversion to a store that inserts pages moves them without making records);
    /// `history`: a save's history transactions are written as Core Data's persistent history (a store without
    /// the history tables gets them from its first save with history) and read back, without the tombstones of
    /// deleted records, which Core Data's tables have no place for. Not `multiProcess` (a save refuses when another
    /// process committed since this store last read or wrote the file) or `onlineBackup` (a backup of a loaded
    /// store is copied from its records).
    public var capabilities: BackendCapabilities {
        [.persistent, .transactions, .orderedRelationships, .fastCopy, .recordPages, .history]
    }

    static let sidecarSuffixes = ["-wal", "-shm", "-journal"]

    // MARK: Files

    /// A SQLite database (by its header) whose schema has `Z_METADATA` and `Z_PRIMARYKEY` is a store; another
    /// SQLite database is foreign; anything else is nothing.
    ///
    /// The tables are read with an immutable, read-only connection to the main file: it takes no locks, reads no
    /// `-wal` and creates no file. Core Data writes its tables' definitions before any record, so they are in the main
    /// file even when the data is all in the `-wal`; a main file with no tables at all beside a non-empty `-wal` (its
    /// schema still in the log) is read through the read-only path of ``CoreDataStoreFile`` instead.
    public func sniff(_ url: URL) -> SniffResult {
        var info = stat()
        guard stat(url.path, &info) == 0, info.st_mode & S_IFMT == S_IFREG, info.st_size > 0 else { return .none }
        switch Self.tables(ofMainFile: url) {
        case .notSQLite:
            return .none
        case .unreadable(let why):
            return .foreign("SQLite database, but unreadable (\(why))")
        case .tables(let tables):
            if CoreDataStoreFile.isCoreDataStore(tables: tables) { return .store }
            let wal = Self.sidecar(url, "-wal")
            var walInfo = stat()
            if tables.isEmpty, stat(wal.path, &walInfo) == 0, walInfo.st_size > 0,
                let db = try? ReadOnlyDatabase.open(url), let all = try? db.tableNames(),
                CoreDataStoreFile.isCoreDataStore(tables: all)
            {
                return .store
            }
            return .foreign("SQLite database, but not a Core Data store (no Z_METADATA and Z_PRIMARYKEY tables)")
        }
    }

    enum MainFileTables {
        case notSQLite
        case unreadable(String)
        case tables(Set<String>)
    }

    /// The table names in the main file's schema, read without locks, the `-wal` or any new file.
    static func tables(ofMainFile url: URL) -> MainFileTables {
        var c = URLComponents()
        c.scheme = "file"
        c.path = url.path
        c.queryItems = [URLQueryItem(name: "mode", value: "ro"), URLQueryItem(name: "immutable", value: "1")]
        var handle: OpaquePointer?
        let rc = sqlite3_open_v2(c.string ?? url.path, &handle, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, nil)
        defer { sqlite3_close_v2(handle) }
        guard rc == SQLITE_OK, let db = handle else { return .unreadable(String(cString: sqlite3_errstr(rc))) }
        var statement: OpaquePointer?
        let prepared = sqlite3_prepare_v2(db, "SELECT name FROM sqlite_master WHERE type = 'table'", -1, &statement, nil)
        defer { sqlite3_finalize(statement) }
        guard prepared == SQLITE_OK, let stmt = statement else {
            return sqlite3_errcode(db) == SQLITE_NOTADB ? .notSQLite : .unreadable(String(cString: sqlite3_errmsg(db)))
        }
        var names: Set<String> = []
        while true {
            let step = sqlite3_step(stmt)
            if step == SQLITE_DONE { return .tables(names) }
            guard step == SQLITE_ROW else {
                return step == SQLITE_NOTADB ? .notSQLite : .unreadable(String(cString: sqlite3_errmsg(db)))
            }
            if let text = sqlite3_column_text(stmt, 0) { names.insert(String(cString: text)) }
        }
    }

    static func sidecar(_ url: URL, _ suffix: String) -> URL {
        url.deletingLastPathComponent().appendingPathComponent(url.lastPathComponent + suffix)
    }

    /// `.Name_SUPPORT` beside `Name.sqlite`: Core Data's folder for external binary data (`_EXTERNAL_DATA`).
    ///
    /// A store being built under a staging name (``AtomicFile/stagingURL(for:)``) keeps it as `<staging name>-SUPPORT`
    /// instead, a name the framework's staging cleanup recognises as that store's; ``placedLocation(of:staged:destination:)``
    /// renames it to the real store's `.Name_SUPPORT` when the store is moved into place.
    static func supportFolder(of url: URL) -> URL {
        if isStaging(url) { return sidecar(url, "-SUPPORT") }
        let name = url.deletingPathExtension().lastPathComponent
        return url.deletingLastPathComponent().appendingPathComponent(".\(name)_SUPPORT")
    }

    /// Whether `url` is a store being built under a staging name (``AtomicFile/stagingURL(for:)``).
    static func isStaging(_ url: URL) -> Bool { url.lastPathComponent.hasPrefix(AtomicFile.stagingPrefix) }

    /// The staged store's support folder becomes `destination`'s `.Name_SUPPORT`, and its CloudKit asset folder
    /// the one of the same kind beside `destination`; its other files keep their suffix after the store's name
    /// (`-wal`, `-shm`).
    ///
    /// An asset folder is placed only where nothing is: a store being replaced has had its own moved aside by
    /// then, so a folder still there belongs to something else (`ckAssetFiles` is not named after a store), and
    /// it is never merged into. The staged folder then stays under its staging name, for the staging cleanup.
    public func placedLocation(of file: URL, staged: URL, destination: URL) -> URL? {
        let target = file.standardizedFileURL
        if target == Self.supportFolder(of: staged).standardizedFileURL { return Self.supportFolder(of: destination) }
        for (from, to) in zip(Self.cloudKitAssetFolders(of: staged), Self.cloudKitAssetFolders(of: destination))
        where target == from.standardizedFileURL {
            return FileManager.default.fileExists(atPath: to.path) ? nil : to
        }
        let stagedName = staged.lastPathComponent
        let name = file.lastPathComponent
        guard name.hasPrefix(stagedName) else { return nil }
        return destination.deletingLastPathComponent()
            .appendingPathComponent(destination.lastPathComponent + name.dropFirst(stagedName.count))
    }

    /// The folders CloudKit mirroring may keep assets in beside a store. [unverified: the corpus has no CloudKit
    /// store; app developers report both `ckAssetFiles` and `Name_ckAssets`. Both are matched, and only for a store
    /// with CloudKit's `ANSCK*` tables, so an unrelated folder of that name beside a plain store is never touched.]
    ///
    /// A store being built under a staging name keeps them as `<staging name>-ckAssetFiles` and
    /// `<staging name>-ckAssets`, placed like its support folder (``placedLocation(of:staged:destination:)``).
    static func cloudKitAssetFolders(of url: URL) -> [URL] {
        if isStaging(url) { return [sidecar(url, "-ckAssetFiles"), sidecar(url, "-ckAssets")] }
        let dir = url.deletingLastPathComponent()
        let name = url.deletingPathExtension().lastPathComponent
        return [dir.appendingPathComponent("ckAssetFiles"), dir.appendingPathComponent("\(name)_ckAssets")]
    }

    /// The main file, then whichever of `-wal`, `-shm`, `-journal`, the `.Name_SUPPORT` folder and (for a store with
    /// CloudKit tables) CloudKit's asset folder exist.
    public func ownedFiles(ofStoreAt url: URL) -> [URL] {
        let fm = FileManager.default
        var isDirectory: ObjCBool = false
        guard fm.fileExists(atPath: url.path, isDirectory: &isDirectory), !isDirectory.boolValue else { return [] }
        var files = [url] + Self.sidecarSuffixes.map { Self.sidecar(url, $0) }.filter { fm.fileExists(atPath: $0.path) }
        let support = Self.supportFolder(of: url)
        if fm.fileExists(atPath: support.path, isDirectory: &isDirectory), isDirectory.boolValue { files.append(support) }
        let assets = Self.cloudKitAssetFolders(of: url).filter {
            fm.fileExists(atPath: $0.path, isDirectory: &isDirectory) && isDirectory.boolValue
        }
        if !assets.isEmpty, Self.hasCloudKitTables(url) { files += assets }
        return files
    }

    static func hasCloudKitTables(_ url: URL) -> Bool {
        let tables: Set<String>
        if case .tables(let main) = Self.tables(ofMainFile: url) {
            tables = main
        } else {
            return false
        }
        return tables.contains { $0.hasPrefix("ANSCK") }
    }

    /// Throws the typed error for anything at `url` that is not a Core Data store, or (unless `wholeWAL` is
    /// false) whose `-wal` was cut short (``CoreDataWALCheck``).
    func requireStore(_ url: URL, wholeWAL: Bool = true) throws(StoreError) {
        switch sniff(url) {
        case .store:
            if wholeWAL { try CoreDataWALCheck.requireWhole(url) }
            return
        case .foreign(let what):
            throw .wrongStoreType(url, expected: typeIdentifier, found: what)
        case .none:
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory) else {
                throw .storeNotFound(url)
            }
            throw .wrongStoreType(url, expected: typeIdentifier,
                                  found: isDirectory.boolValue ? "a directory" : "not a SQLite database")
        }
    }

    /// A read-only connection to the store at `url` and its bookkeeping, after the checks ``requireStore(_:wholeWAL:)``
    /// makes.
    ///
    /// Without a `-journal` and with no `-wal` or an empty one (what a closed store leaves), the connection reads
    /// what the main file holds, exactly what the sniff reads: a file whose tables there are Core Data's needs no
    /// separate sniff's opening and schema read (every operation opens its source this way, often more than once).
    /// Anything else, or any failure, takes the sniff first, so errors and the `-wal` checks are those of
    /// ``requireStore(_:wholeWAL:)``.
    func openForReading(_ url: URL) throws(StoreError) -> (db: ReadOnlyDatabase, file: CoreDataStoreFile) {
        var wal = stat()
        let walEmpty = stat(Self.sidecar(url, "-wal").path, &wal) != 0 || wal.st_size == 0
        if walEmpty, !FileManager.default.fileExists(atPath: Self.sidecar(url, "-journal").path),
            let db = try? ReadOnlyDatabase.open(url), let file = try? CoreDataStoreFile.read(db)
        {
            return (db, file)
        }
        try requireStore(url)
        let db = try ReadOnlyDatabase.open(url)
        return (db, try CoreDataStoreFile.read(db))
    }

    // MARK: Metadata

    /// The store's metadata: type `coredata`, UUID `Z_UUID`, the schema decoded from `Z_MODELCACHE`, and the app's
    /// keys in Core Data's metadata plist as custom metadata. Reads without changing any file.
    ///
    /// - Throws: ``StoreError/incompatibleSchema(_:entities:)`` when ``modelURL``'s version hashes are not the
    ///   store's; ``StoreError/unsupported(_:)`` for a store without a model cache whose tables the inference
    ///   cannot read soundly (join tables); ``StoreError/corruptStore(_:reason:)`` when the bookkeeping does not
    ///   decode.
    public func readMetadata(at url: URL) throws -> StoreMetadata {
        let file = try openForReading(url).file
        return try Self.metadata(of: file, appModel: modelURL).metadata
    }

    /// Where the model the store at `url` is read with comes from (the app's model of `options`, else of
    /// ``modelURL``, else the cache, else inferred), after the checks an open makes.
    public func modelSource(ofStoreAt url: URL, options: StoreOptions = StoreOptions()) throws -> CoreDataModelSource {
        try requireStore(url)
        let file = try CoreDataStoreFile.read(at: url)
        return try Self.metadata(of: file, appModel: appModel(options)).source
    }

    func appModel(_ options: StoreOptions) -> URL? {
        options.backend[Self.modelOptionKey].map { URL(fileURLWithPath: $0) } ?? modelURL
    }

    /// The store's metadata and the model its records are read with: the app's model when given (refused when its
    /// version hashes are not the store's), else the cache, else a model inferred from the tables.
    static func metadata(
        of file: CoreDataStoreFile, appModel: URL?
    ) throws(StoreError) -> (metadata: StoreMetadata, model: CoreDataModel, source: CoreDataModelSource) {
        let model: CoreDataModel, schema: Schema, source: CoreDataModelSource
        if let appModel {
            (model, schema) = try CoreDataAppModel.checked(appModel, for: file)
            source = .appModel(appModel)
        } else if let blob = file.modelCacheBlob, let written = file.metadata.custom[schemaMetadataKey],
            case .data(let json) = written, CoreDataModelMemos.writtenCaches.kept(for: blob) == Array(json),
            let embedded = try embeddedSchema(of: file)
        {
            // A store this process created, its cache and schema still the bytes it wrote: the cache was encoded
            // here from that schema's model, so it is not decoded back to be checked (creating a store and opening
            // it is every conversion to this type). Another process reads it as any store.
            (model, schema, source) = (CoreDataModel(schema: embedded), embedded, .embeddedSchema)
        } else if let blob = file.modelCacheBlob {
            // The cache is decoded even when the schema below is used: a damaged cache is a damaged store, whatever
            // else it keeps — unless it is, byte for byte, the cache this backend wrote beside that schema (its
            // digest kept with the schema). Only a cache whose schema is used has one derived from it.
            let embedded = try embeddedSchema(of: file)
            if embedded == nil || !Self.isModelCacheAsWritten(blob, in: file) { try file.checkModelCache() }
            if let embedded {
                // A store this backend created: the framework's schema it keeps is exact where the model cache is
                // not (see schemaMetadataKey), as long as the store's model has not changed since.
                (model, schema, source) = (CoreDataModel(schema: embedded), embedded, .embeddedSchema)
            } else if let (cached, cachedSchema) = try file.decodedModelCache() {
                (model, schema, source) = (cached, cachedSchema, .modelCache)
            } else {
                throw .corruptStore(file.url, reason: "Z_MODELCACHE could not be read")
            }
        } else if let embedded = try embeddedSchema(of: file) {
            // A store this backend created before it wrote model caches: the schema is all it keeps.
            (model, schema, source) = (CoreDataModel(schema: embedded), embedded, .embeddedSchema)
        } else {
            // Stores before 2012 have no cache: the model is inferred from the tables (names and exact types are
            // guesses, see CoreDataInferredModel).
            model = try CoreDataInferredModel.infer(file, db: try ReadOnlyDatabase.open(file.url))
            do throws(SchemaError) {
                schema = try model.schema()
            } catch {
                throw .corruptStore(file.url, reason: "the model inferred from the tables: \(error.description)")
            }
            source = .inferred(versionHashMismatches: CoreDataAppModel.mismatches(
                schema, storeHashes: file.metadata.versionHashes))
        }
        guard let uuid = UUID(uuidString: file.uuid) else {
            throw .corruptStore(file.url, reason: "Z_METADATA.Z_UUID '\(file.uuid)' is not a UUID")
        }
        var plistCustom = file.metadata.custom
        plistCustom[schemaMetadataKey] = nil
        plistCustom[modelCacheDigestMetadataKey] = nil
        let syncOptions = try Self.syncOptions(plistCustom.removeValue(forKey: syncOptionsMetadataKey), in: file.url)
        let custom = plistCustom.mapValues(Self.metadataValue)
        return (StoreMetadata(storeType: typeIdentifier, storeUUID: uuid, schema: schema, custom: custom,
                              syncOptions: syncOptions), model, source)
    }

    /// The metadata key under which a store keeps its ``StoreAPI/SyncOptions`` (JSON), the way every other store
    /// type keeps them in its own metadata. Core Data ignores metadata keys it does not know; the key is never shown
    /// as custom metadata.
    public static let syncOptionsMetadataKey = "StoreKitSwiftSyncOptions"

    /// The sync options a plist value under ``syncOptionsMetadataKey`` holds.
    private static func syncOptions(_ value: PropertyListValue?, in url: URL) throws(StoreError) -> SyncOptions? {
        guard let value else { return nil }
        guard case .data(let json) = value else {
            throw .corruptStore(url, reason: "Z_METADATA's \(syncOptionsMetadataKey) is \(value.summary), not JSON data")
        }
        do {
            return try JSONDecoder().decode(SyncOptions.self, from: json)
        } catch {
            throw .corruptStore(url, reason: "Z_METADATA's \(syncOptionsMetadataKey) holds unreadable sync options: \(error)")
        }
    }

    /// The plist value ``syncOptionsMetadataKey`` holds for `options`.
    static func propertyListValue(_ options: SyncOptions, url: URL) throws(StoreError) -> PropertyListValue {
        do {
            return .data(try JSONEncoder().encode(options))
        } catch {
            throw .io(url, operation: "encoding the sync options", reason: "\(error)")
        }
    }

    /// The metadata key under which a store this backend created keeps the framework's schema (JSON), beside the
    /// model cache it also writes (``CoreDataModelCache/encode(_:)``), which is what Core Data reads.
    ///
    /// The schema is kept because a compiled model cannot hold all of it: the relationship counts a schema written
    /// in code leaves undeclared, a relationship's read-only flag, a derivation's filtering predicate, a decimal
    /// default value beyond a double's precision, and a renaming identifier equal to the name. The store is read
    /// with this schema while its Core Data version hashes are the store's; once Core Data has migrated the store
    /// to another model they differ, and the model cache is read instead. The cache is decoded either way, so a
    /// damaged one is an error. Stores created before the cache was written have an empty `Z_MODELCACHE` and are
    /// read from here too. Core Data ignores metadata keys it does not know; the key is never shown as custom
    /// metadata.
    public static let schemaMetadataKey = "StoreKitSwiftSchema"

    /// The metadata key under which a store this backend created keeps the SHA-256 of the model cache it wrote
    /// (data), so that opening the store need not decode the cache to know it is undamaged while it is still those
    /// bytes. A cache Core Data (or anyone) rewrote no longer matches, and is decoded as any store's. Never shown as
    /// custom metadata.
    public static let modelCacheDigestMetadataKey = "StoreKitSwiftModelCacheDigest"

    /// Whether `blob`, the store's model cache, is the one whose digest the store keeps.
    private static func isModelCacheAsWritten(_ blob: [UInt8], in file: CoreDataStoreFile) -> Bool {
        guard case .data(let digest) = file.metadata.custom[modelCacheDigestMetadataKey] else { return false }
        return Array(digest) == StoreDigest.sha256(blob)
    }

    /// The schema under ``schemaMetadataKey``, when there is one and its Core Data version hashes are the store's.
    private static func embeddedSchema(of file: CoreDataStoreFile) throws(StoreError) -> Schema? {
        guard let value = file.metadata.custom[schemaMetadataKey] else { return nil }
        let data: Data
        switch value {
        case .data(let d): data = d
        case .string(let s): data = Data(s.utf8)
        default: throw .corruptStore(file.url, reason: "metadata key \(schemaMetadataKey) is \(value.summary), not data")
        }
        let (schema, hashes) = try CoreDataModelMemos.embeddedSchemas.value(for: Array(data)) { () throws(StoreError) in
            let schema: Schema
            do {
                schema = try Schema(jsonData: data, file: file.url.lastPathComponent)
            } catch {
                throw .corruptStore(file.url, reason: "metadata key \(schemaMetadataKey): \(error)")
            }
            return (schema, schema.coreDataVersionHashes.entityHashes)
        }
        return hashes == file.metadata.versionHashes ? schema : nil
    }

    /// Custom metadata as a property-list value (the inverse of ``metadataValue(_:)`` for the cases both have).
    static func propertyListValue(_ v: MetadataValue) -> PropertyListValue {
        switch v {
        case .null: return .null
        case .bool(let b): return .bool(b)
        case .integer(let i): return .integer(i)
        case .double(let d): return .real(d)
        case .string(let s): return .string(s)
        case .array(let a): return .array(a.map(propertyListValue))
        case .dictionary(let d):
            return .dictionary(d.sorted { $0.key < $1.key }.map { (key: $0.key, value: propertyListValue($0.value)) })
        }
    }

    /// A property-list value as custom metadata. `MetadataValue` has no date or data case: dates become ISO 8601
    /// text and data base64 text.
    static func metadataValue(_ v: PropertyListValue) -> MetadataValue {
        switch v {
        case .null: return .null
        case .bool(let b): return .bool(b)
        case .integer(let i): return .integer(i)
        case .unsignedInteger(let u): return Int64(exactly: u).map { .integer($0) } ?? .double(Double(u))
        case .real(let d): return .double(d)
        case .date(let d): return .string(ISO8601DateFormatter().string(from: d))
        case .data(let d): return .string(d.base64EncodedString())
        case .string(let s): return .string(s)
        case .uid(let u): return .integer(Int64(truncatingIfNeeded: u))
        case .array(let a), .set(let a): return .array(a.map(metadataValue))
        case .dictionary(let members):
            var out: [String: MetadataValue] = [:]
            for m in members { out[m.key] = metadataValue(m.value) }
            return .dictionary(out)
        }
    }

    /// Rewrites `Z_METADATA` in one transaction: `Z_UUID` = the metadata's store UUID, and the plist's app keys =
    /// its custom metadata (Core Data's own keys are kept as stored).
    ///
    /// - Throws: ``StoreError/unsupported(_:)`` when `metadata` has another schema (that is a migration),
    ///   ``StoreError/readOnly(_:reason:)`` for a store with CloudKit tables (see ``allowCloudKitWritesOption``).
    public func writeMetadata(_ metadata: StoreMetadata, at url: URL) throws {
        try requireStore(url)
        // A copy being made (a backup stamped, a restore unstamped) is nobody's live store yet.
        if !Self.isStaging(url) { try Self.refuseCloudKit(url, options: StoreOptions()) }
        let file = try CoreDataStoreFile.read(at: url)
        let current = try Self.metadata(of: file, appModel: modelURL).metadata
        guard current.schema == metadata.schema else {
            throw StoreError.unsupported("\(url.path): changing the schema of a coredata store (a migration)")
        }
        let db = try CoreDataWritableDatabase(url)
        defer { db.close() }
        guard let handle = db.handle else { throw StoreError.io(url, operation: "writing metadata", reason: "the connection is closed") }
        let connection = CoreDataConnection(url: url, handle: handle, owner: db)
        defer { connection.finalize() }
        try connection.run("BEGIN IMMEDIATE")
        do {
            try CoreDataStore.writeMetadataRow(
                connection, uuid: metadata.storeUUID, plist: try CoreDataStore.plist(file.metadata, for: metadata, url: url))
            try connection.run("COMMIT")
        } catch {
            _ = try? connection.run("ROLLBACK")
            throw error
        }
    }

    // MARK: Open

    /// The backend option (``StoreOptions/backend``) that lets a store with CloudKit mirroring tables (`ANSCK*`)
    /// be opened for writing: `coredata.allowCloudKitWrites` = `true`. Without it such a store opens read-only only,
    /// because records written behind CloudKit's back desynchronise the mirror.
    public static let allowCloudKitWritesOption = "coredata.allowCloudKitWrites"

    static func refuseCloudKit(_ url: URL, options: StoreOptions) throws(StoreError) {
        guard hasCloudKitTables(url), options.backend[allowCloudKitWritesOption]?.lowercased() != "true" else { return }
        throw .readOnly(url, reason: "a Core Data store with CloudKit mirroring tables (ANSCK*): writing it would "
            + "desynchronise CloudKit; open it read-only, or set the backend option \(allowCloudKitWritesOption)=true")
    }

    /// Opens the store at `url`, creating it first when nothing is there and `creating` is given.
    ///
    /// - A new store is laid out by ``CoreDataLayout/createEmptyStore(at:model:uuid:metadata:modelCache:persistentHistory:)``
    ///   from `CoreDataModel(schema:)`: Core Data's tables, indexes and triggers, store UUID = `creating`'s,
    ///   Core Data's metadata plist (version hashes, digest, checksum) with the custom metadata as app keys, plus
    ///   the schema under ``schemaMetadataKey``, and the model cache (``CoreDataModelCache/encode(_:)``; left empty
    ///   for a derivation the encoder cannot write). `historyTracking` adds Core Data's persistent-history tables.
    /// - ``StoreOptions/isReadOnly``: records are read on demand without changing any file; saves throw.
    /// - Otherwise the store is writable (see `CoreDataStore`), unless it has CloudKit tables
    ///   (``allowCloudKitWritesOption``) or its tables are not the ones its model lays out.
    ///
    /// - Throws: ``StoreError/storeNotFound(_:)`` when nothing is at `url` and nothing is to be created; the
    ///   errors of ``readMetadata(at:)``.
    public func open(at url: URL?, options: StoreOptions, creating: StoreMetadata?) throws -> any PersistentStore {
        guard let url else { throw StoreError.unsupported("a coredata store without a file URL") }
        if !FileManager.default.fileExists(atPath: url.path) {
            guard let creating, options.createIfMissing else { throw StoreError.storeNotFound(url) }
            try Self.create(at: url, metadata: creating, persistentHistory: options.historyTracking)
        }
        guard !options.isReadOnly else {
            let (db, file) = try openForReading(url)
            let (metadata, model, _) = try Self.metadata(of: file, appModel: appModel(options))
            return try CoreDataStore(url: url, readOnly: db, metadata: metadata, model: model, tables: file.tableNames)
        }
        try requireStore(url)
        try Self.refuseCloudKit(url, options: options)
        // The read-write connection first: it recovers a hot -wal the way any writer would.
        let writer = try CoreDataWritableDatabase(url)
        let file = try CoreDataStoreFile.read(at: url)
        let (metadata, model, _) = try Self.metadata(of: file, appModel: appModel(options))
        let layout: CoreDataLayout
        do throws(CoreDataFormatError) {
            layout = try CoreDataLayout(model: model)
        } catch {
            throw StoreError.corruptStore(url, reason: "the store's model cannot be laid out: \(error.description)")
        }
        try Self.requireLayout(layout, in: writer)
        return try CoreDataStore(
            url: url, writer: writer, history: try ReadOnlyDatabase.open(url), metadata: metadata, plist: file.metadata,
            model: model, layout: layout, tables: file.tableNames)
    }

    /// Refuses to write a store whose tables lack a column the model's layout has (a store laid out by a Core Data
    /// whose naming differs from ``CoreDataLayout``'s): writing it would misplace values.
    static func requireLayout(_ layout: CoreDataLayout, in db: CoreDataWritableDatabase) throws(StoreError) {
        for table in layout.tables {
            let names = Set(try db.run("PRAGMA table_info(\(CoreDataSQL.quoted(table.name)))").compactMap {
                if $0.count > 1, case .text(let name) = $0[1] { return name } else { return nil }
            })
            let missing = table.columns.map(\.name).filter { !names.contains($0) }
            guard missing.isEmpty else {
                throw StoreError.unsupported("\(db.url.path): writing it: table \(table.name) lacks the columns "
                    + "\(missing.joined(separator: ", ")) its model lays out (open it read-only)")
            }
        }
    }

    /// Creates an empty Core Data store for `metadata`'s schema at `url`.
    static func create(at url: URL, metadata: StoreMetadata, persistentHistory: Bool) throws(StoreError) {
        let model = CoreDataModel(schema: metadata.schema)
        var plist: CoreDataMetadata
        do throws(SchemaError) {
            plist = try CoreDataMetadata(newStoreFor: model)
        } catch {
            throw .invalidSchema(error)
        }
        plist = try CoreDataStore.plist(plist, for: metadata, url: url)
        let schemaJSON: Data
        do {
            schemaJSON = try metadata.schema.jsonData()
        } catch {
            throw .io(url, operation: "encoding the schema", reason: "\(error)")
        }
        plist.custom[schemaMetadataKey] = .data(schemaJSON)
        // Opening the new store reads this JSON back; it is this schema (the JSON form reads back to the schema it
        // was written from, hashes included), so this process does not parse it again.
        CoreDataModelMemos.embeddedSchemas.keep(
            (metadata.schema, metadata.schema.coreDataVersionHashes.entityHashes), for: Array(schemaJSON))
        // A derivation the encoder cannot write leaves the cache empty, as stores created before it had: this backend
        // reads them from the schema above.
        let cache = try? CoreDataModelCache.encode(model)
        if let cache {
            CoreDataModelMemos.writtenCaches.keep(Array(schemaJSON), for: cache)
            plist.custom[modelCacheDigestMetadataKey] = .data(Data(StoreDigest.sha256(cache)))
        }
        try CoreDataLayout.createEmptyStore(
            at: url, model: model, uuid: metadata.storeUUID, metadata: plist, modelCache: cache,
            persistentHistory: persistentHistory)
    }

    // MARK: Destroy

    /// Deletes every file ``ownedFiles(ofStoreAt:)`` lists, the main file last, and nothing else.
    ///
    /// A hot `-wal` is folded into the main file first (a read-write connection checkpoints it): a destroy killed
    /// after deleting the `-wal` would otherwise leave a main file that looks whole but lacks what the log held.
    /// Until the main file goes the path is still a store, so a retry finishes the job.
    public func destroyStore(at url: URL) throws {
        try requireStore(url, wholeWAL: false)
        Self.checkpoint(url)
        for file in ownedFiles(ofStoreAt: url).reversed() {
            do {
                try FileManager.default.removeItem(at: file)
            } catch {
                if FileManager.default.fileExists(atPath: file.path) {
                    throw StoreError.io(file, operation: "deleting", reason: error.localizedDescription)
                }
            }
        }
        try? AtomicFile.fsyncDirectory(of: url)
    }

    /// Checkpoints a `-wal` into the main file, when the files are writable; a failure leaves things as they were.
    static func checkpoint(_ url: URL) {
        guard FileManager.default.fileExists(atPath: sidecar(url, "-wal").path) else { return }
        var handle: OpaquePointer?
        guard sqlite3_open_v2(url.path, &handle, SQLITE_OPEN_READWRITE, nil) == SQLITE_OK, let db = handle else {
            sqlite3_close_v2(handle)
            return
        }
        sqlite3_busy_timeout(db, 1000)
        _ = sqlite3_wal_checkpoint_v2(db, nil, SQLITE_CHECKPOINT_TRUNCATE, nil, nil)
        sqlite3_close_v2(db)
    }
}
