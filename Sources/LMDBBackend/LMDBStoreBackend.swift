import CLMDB
import Foundation
import StoreAPI

/// The LMDB backend (`lmdb`): an incremental store on the system's liblmdb.
///
/// ## On-disk form
/// A store is an LMDB environment in one of liblmdb's two layouts, told apart by what exists at the URL:
/// - **Directory form** (the default for new stores): the URL is a directory, such as `app.lmdb/`, holding
///   `data.mdb` and `lock.mdb`.
/// - **File form** (`MDB_NOSUBDIR`): the URL is the data file itself, such as `app.mdb`, and the lock file is
///   `app.mdb-lock`. New stores get it when the URL ends in `.mdb` or the option `lmdb.noSubdir` is `true`.
///
/// The environment holds named databases:
/// - `storeapi.meta`: the format magic (`storeapi.lmdb`) and version, the ``StoreMetadata`` JSON and the entity ID
///   table;
/// - `records:<Root>`, one per hierarchy root: primary key (big-endian, sign bit flipped, so keys sort
///   numerically) → the record in a compact binary form (entity ID, global ID, type-tagged attribute values
///   bit-exact, relationship keys in order);
/// - `unique:<Entity>:<attributes>`, one per uniqueness constraint: the constrained values → primary key
///   (records with a nil constrained value are not entered);
/// - `storeapi.globalIDs`: global ID → entity and primary key;
/// - `storeapi.keys`: hierarchy root → next primary key;
/// - `storeapi.history`: token → ``HistoryTransaction`` JSON.
///
/// ## Behaviour
/// A save is one write transaction. Readers use read-only transactions and never block the writer, in this or any
/// other process (liblmdb's own locking). Writers take turns: a save waits for another writer — in this process,
/// or in another process using this framework — for at most ``StoreOptions/timeout`` seconds, then fails with
/// ``StoreError/locked(_:reason:)`` and writes nothing. Between processes this works through an advisory `flock`
/// on the data file, held for the length of each write transaction (liblmdb's own writer lock cannot be waited on
/// with a timeout); programs that do not use this framework (such as `mdb_load`) do not take it, so a save that
/// meets one of them waits until it is done. The memory map starts at 64 MiB (option `lmdb.mapSize`, e.g. `"256M"`)
/// and doubles by itself when it fills, up to `lmdb.maxMapSize` (default 1 TiB). Stores opened on the same files in
/// one process share one environment, as lmdb.h requires. ``copyStore(from:to:)`` uses `mdb_env_copyfd2` with
/// compaction and works while a writer is active.
///
/// Every file is validated before liblmdb maps it (meta pages, page size, committed size against file length), so
/// a damaged or truncated file is a ``StoreError/corruptStore(_:reason:)``, never a crash.
public struct LMDBStoreBackend: StoreBackend {
    /// The type identifier, `lmdb`.
    public static let typeIdentifier = "lmdb"

    /// Creates the backend.
    public init() {}

    /// `lmdb`.
    public var typeIdentifier: String { Self.typeIdentifier }
    /// `lmdb` (a store directory) and `mdb` (a data file, the file form).
    public var fileExtensions: [String] { ["lmdb", "mdb"] }
    /// Persistent, transactional, multi-process, with history, ordered relationships, an online fast copy, and pages
    /// of records inserted as they are (the page form is the stored form).
    public var capabilities: BackendCapabilities {
        [.persistent, .transactions, .multiProcess, .history, .orderedRelationships, .onlineBackup, .fastCopy, .recordPages]
    }

    // MARK: Looking at paths

    /// ``SniffResult/store`` for one of our stores; ``SniffResult/foreign(_:)`` for a valid LMDB environment without
    /// our metadata (or a damaged one); ``SniffResult/none`` otherwise. Reads the meta pages as bytes first and opens
    /// an environment read-only, without creating a lock file where there is none.
    public func sniff(_ url: URL) -> SniffResult {
        switch LMDBStoreInspector.inspect(url) {
        case .missing, .directoryWithoutStore, .notLMDB, .unreadable: return .none
        case .damaged(_, let why): return .foreign("damaged LMDB environment (\(why))")
        case .foreign: return .foreign(LMDBStoreInspector.foreignDescription)
        case .store: return .store
        }
    }

    /// The data file and lock file that exist (`data.mdb` and `lock.mdb`, or the file and `<file>-lock`), then the
    /// store's directory when creating the store created it. A directory is listed last, after its contents, so
    /// deleting in order works; moving or copying should treat the directory as the store.
    public func ownedFiles(ofStoreAt url: URL) -> [URL] {
        guard let location = LMDBLocation.existing(url) else { return [] }
        if !location.isDirectory {
            switch LMDBHeader.probe(location.dataFile) {
            case .valid, .damaged: break
            default: return FileProbe.exists(location.lockFile) ? [location.dataFile, location.lockFile] : []
            }
        }
        var files = [location.dataFile, location.lockFile].filter { FileProbe.exists($0) }
        if location.isDirectory, case .store(_, _, let info) = LMDBStoreInspector.inspect(url), info.createdDirectory {
            files.append(location.url)
        }
        return files
    }

    /// Reads the metadata in one read-only transaction, without opening the store for records.
    public func readMetadata(at url: URL) throws -> StoreMetadata {
        let inspection = LMDBStoreInspector.inspect(url)
        guard case .store(let location, _, let info) = inspection else {
            throw LMDBStoreInspector.refusal(inspection, url: url) ?? StoreError.storeNotFound(url)
        }
        return try LMDBStoreInspector.metadata(of: info, location: location)
    }

    /// Replaces the metadata in one write transaction (also seen at once by stores open on the files in this
    /// process). Never creates a store.
    public func writeMetadata(_ metadata: StoreMetadata, at url: URL) throws {
        let options = StoreOptions(createIfMissing: false)
        let opened = try LMDBStoreOpener.acquire(url, options: options, creating: nil)
        // The store takes over the environment reference and gives it back on close.
        let store = LMDBPersistentStore(
            url: url, env: opened.environment, layout: opened.layout, readOnly: opened.environment.isReadOnly, timeout: options.timeout)
        defer { try? store.close() }
        if store.isReadOnly { throw StoreError.readOnly(url, reason: "the store's files are not writable") }
        try store.save(StoreChanges(metadata: metadata))
    }

    // MARK: Opening

    /// Opens (or atomically creates) the store and returns the LMDB store. Reads the backend options
    /// `lmdb.mapSize`, `lmdb.maxMapSize` and `lmdb.noSubdir`. A description that is not read-only fails with
    /// ``StoreError/readOnly(_:reason:)`` when the files cannot be written.
    public func open(at url: URL?, options: StoreOptions, creating: StoreMetadata?) throws -> any PersistentStore {
        guard let url else { throw StoreError.unsupported("an LMDB store needs a URL (use the in-memory backend for anonymous stores)") }
        let opened = try LMDBStoreOpener.acquire(url, options: options, creating: creating)
        let env = opened.environment
        if env.isReadOnly && !options.isReadOnly {
            EnvironmentRegistry.release(env)
            throw StoreError.readOnly(url, reason: "the store's files are not writable; open it with a read-only description")
        }
        return LMDBPersistentStore(url: url, env: env, layout: opened.layout, readOnly: options.isReadOnly || env.isReadOnly, timeout: options.timeout)
    }

    // MARK: Operations

    /// Deletes the lock and data files, and the directory if the store created it and nothing else is in it. Such a
    /// directory is first renamed aside under a staging name, so the path is emptied in one atomic step (an
    /// interrupted destroy leaves staging that the next operation near the path removes). Refuses non-stores, and
    /// stores open in this process or another (``StoreError/locked(_:reason:)``).
    public func destroyStore(at url: URL) throws {
        try LMDBStoreFiles.destroy(url)
    }

    /// Copies with `mdb_env_copyfd2` and compaction into a staging path, fsyncs and renames it into place; works
    /// while writers keep going. A destination ending in `.mdb` gets the file form, any other the directory form.
    public func copyStore(from source: URL, to destination: URL) throws {
        try LMDBStoreFiles.copy(from: source, to: destination)
    }

    /// Decodes every record, index entry and history transaction and checks that they agree; returns the problems.
    public func checkIntegrity(at url: URL) throws -> [String] {
        try IntegrityChecker.check(url)
    }
}
