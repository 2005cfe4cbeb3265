import Foundation
import Synchronization

/// A backend of the atomic family: it reads and writes whole store files and nothing else.
///
/// Adopt this instead of implementing ``StoreBackend/open(at:options:creating:)``: the framework loads the file into
/// a ``MemoryStore`` (queries, relationships and history then work as in memory) and on every save writes the whole
/// store back — into a staging file that is fsynced and renamed over the old one, so a crash never leaves a partial
/// file. A save fails with ``StoreError/modifiedOnDisk(_:)`` if the file changed since it was loaded, and a
/// second writer fails with ``StoreError/locked(_:reason:)`` while the first holds the store's lock file.
///
/// Default implementations cover ``StoreBackend/ownedFiles(ofStoreAt:)`` (the file and its lock file),
/// ``StoreBackend/readMetadata(at:)``, ``StoreBackend/writeMetadata(_:at:)``, ``StoreBackend/destroyStore(at:)``
/// and ``StoreBackend/copyStore(from:to:)``; override them when you can do better (reading metadata without
/// reading the records, for one).
public protocol AtomicStoreBackend: StoreBackend {
    /// Reads the store at `url`, streaming: ``AtomicStoreElement/metadata(_:)`` first, then every record and
    /// history transaction. `body` may throw to stop early. Must not trust the file: anything malformed is
    /// ``StoreError/corruptStore(_:reason:)`` naming what is wrong.
    func readStore(at url: URL, _ body: (AtomicStoreElement) throws -> Void) throws

    /// Writes `contents` as a complete store file at `url` (a fresh staging path; the framework does the rest).
    func writeStore(_ contents: any AtomicStoreContents, to url: URL) throws

    /// Calls `body` with the entity and primary key of every record of the store at `url`, in the order
    /// ``readStore(at:_:)`` delivers records, without decoding their values — for the passes a writer makes to learn
    /// which records exist (an upgrade streams the file once for them). The default reads whole records.
    func readPrimaryKeys(at url: URL, _ body: (_ entity: String, _ primaryKey: Int64) throws -> Void) throws

    /// Calls `body` with every history transaction of the store at `url`, in token order, without decoding records.
    /// The default reads the whole file.
    func readHistory(at url: URL, _ body: (HistoryTransaction) throws -> Void) throws
}

/// One element of an atomic store file, in the order ``AtomicStoreBackend/readStore(at:_:)`` delivers them.
public enum AtomicStoreElement: Sendable {
    case metadata(StoreMetadata)
    case record(Record)
    case history(HistoryTransaction)
}

/// A whole store to write: metadata, then records and history streamed in order.
public protocol AtomicStoreContents: Sendable {
    /// The store's metadata.
    var metadata: StoreMetadata { get }
    /// Calls `body` with every record, grouped by entity in schema order, in primary-key order within an entity.
    func forEachRecord(_ body: (Record) throws -> Void) throws
    /// Calls `body` with the entity and primary key of every record, in the order of ``forEachRecord(_:)``.
    /// For writers that must know which records exist before writing them; the default reads the records.
    func forEachPrimaryKey(_ body: (_ entity: String, _ primaryKey: Int64) throws -> Void) throws
    /// Calls `body` with every history transaction in token order.
    func forEachHistoryTransaction(_ body: (HistoryTransaction) throws -> Void) throws
}

extension AtomicStoreContents {
    /// Reads every record and passes on its entity and key.
    public func forEachPrimaryKey(_ body: (_ entity: String, _ primaryKey: Int64) throws -> Void) throws {
        try forEachRecord { try body($0.entity, $0.primaryKey) }
    }
}

private struct StopReading: Error {}

extension AtomicStoreBackend {
    /// The lock file a writer holds while the store is open for writing.
    public func lockFileURL(for url: URL) -> URL {
        url.deletingLastPathComponent().appendingPathComponent(url.lastPathComponent + ".lock")
    }

    public func ownedFiles(ofStoreAt url: URL) -> [URL] {
        [url, lockFileURL(for: url)].filter { FileManager.default.fileExists(atPath: $0.path) }
    }

    public func readPrimaryKeys(at url: URL, _ body: (_ entity: String, _ primaryKey: Int64) throws -> Void) throws {
        try readStore(at: url) { element in
            if case .record(let r) = element { try body(r.entity, r.primaryKey) }
        }
    }

    public func readHistory(at url: URL, _ body: (HistoryTransaction) throws -> Void) throws {
        try readStore(at: url) { element in
            if case .history(let t) = element { try body(t) }
        }
    }

    public func readMetadata(at url: URL) throws -> StoreMetadata {
        guard FileManager.default.fileExists(atPath: url.path) else { throw StoreError.storeNotFound(url) }
        var found: StoreMetadata?
        do {
            try readStore(at: url) { element in
                if case .metadata(let m) = element { found = m }
                throw StopReading()
            }
        } catch is StopReading {}
        guard let found else { throw StoreError.corruptStore(url, reason: "no metadata found") }
        return found
    }

    public func writeMetadata(_ metadata: StoreMetadata, at url: URL) throws {
        let state = try loadState(at: url)
        let snapshot = MemoryStore.Snapshot(metadata: metadata, tables: state.tables, history: state.history)
        try AtomicFile.write(to: url) { try writeStore(snapshot, to: $0) }
    }

    public func destroyStore(at url: URL) throws {
        switch sniff(url) {
        case .store: break
        case .foreign(let what): throw StoreError.wrongStoreType(url, expected: typeIdentifier, found: what)
        case .none:
            if FileManager.default.fileExists(atPath: url.path) {
                throw StoreError.wrongStoreType(url, expected: typeIdentifier, found: "a file of another kind")
            }
            throw StoreError.storeNotFound(url)
        }
        for file in ownedFiles(ofStoreAt: url).reversed() {
            do { try FileManager.default.removeItem(at: file) } catch {
                throw StoreError.io(file, operation: "delete", reason: error.localizedDescription)
            }
        }
        try AtomicFile.fsyncDirectory(of: url)
    }

    public func copyStore(from source: URL, to destination: URL) throws {
        guard sniff(source) == .store else { throw StoreError.storeNotFound(source) }
        guard !FileManager.default.fileExists(atPath: destination.path) else { throw StoreError.storeExists(destination) }
        try AtomicFile.write(to: destination) { staging in
            try AtomicFile.copyContents(of: source, to: staging, reporting: destination)
        }
    }

    public func open(at url: URL?, options: StoreOptions, creating: StoreMetadata?) throws -> any PersistentStore {
        guard let url else {
            throw StoreError.unsupported("\(typeIdentifier) stores need a file URL")
        }
        return try AtomicStoreAdapter(backend: self, url: url, options: options, creating: creating).open()
    }

    /// Reads a whole store into memory.
    func loadState(at url: URL) throws -> MemoryStore.State {
        var metadata: StoreMetadata?
        var records: [Record] = []
        var history: [HistoryTransaction] = []
        try readStore(at: url) { element in
            switch element {
            case .metadata(let m): metadata = m
            case .record(let r): records.append(r)
            case .history(let t): history.append(t)
            }
        }
        guard let metadata else { throw StoreError.corruptStore(url, reason: "no metadata found") }
        return try MemoryStore.loadState(metadata: metadata, records: records, history: history, url: url)
    }
}

/// Opens atomic stores: takes the writer lock, loads the file, and wires saves to whole-file writes.
struct AtomicStoreAdapter<Backend: AtomicStoreBackend> {
    let backend: Backend
    let url: URL
    let options: StoreOptions
    let creating: StoreMetadata?

    func open() throws -> MemoryStore {
        let exists = FileManager.default.fileExists(atPath: url.path)
        if !exists {
            guard let creating, options.createIfMissing else { throw StoreError.storeNotFound(url) }
            guard !options.isReadOnly else { throw StoreError.readOnly(url, reason: "store does not exist and the description is read-only") }
            try AtomicFile.checkDirectory(of: url)
            let empty = MemoryStore.Snapshot(metadata: creating, tables: [:], history: [])
            try AtomicFile.write(to: url) { try backend.writeStore(empty, to: $0) }
        } else {
            switch backend.sniff(url) {
            case .store: break
            case .foreign(let what): throw StoreError.wrongStoreType(url, expected: backend.typeIdentifier, found: what)
            case .none: throw StoreError.wrongStoreType(url, expected: backend.typeIdentifier, found: "a file of another kind")
            }
        }
        let lock: FileLock? = options.isReadOnly ? nil
            : try FileLock.acquire(backend.lockFileURL(for: url), timeout: options.timeout)
        do {
            // The writer's lock is ours: staging files for this path are a killed writer's unfinished saves.
            if lock != nil { AtomicFile.removeStaleStaging(near: url) }
            let state = try backend.loadState(at: url)
            let fingerprint = Mutex(FileFingerprint(url))
            let backend = self.backend
            let url = self.url
            let readOnly = options.isReadOnly
            return MemoryStore(url: url, storage: MemoryStore.Storage(state), willCommit: { snapshot in
                guard !readOnly else { throw StoreError.readOnly(url, reason: "opened read-only") }
                try fingerprint.withLock { current in
                    guard FileFingerprint(url) == current else { throw StoreError.modifiedOnDisk(url) }
                    try AtomicFile.write(to: url) { try backend.writeStore(snapshot, to: $0) }
                    current = FileFingerprint(url)
                }
            }, onClose: { lock?.release() })
        } catch {
            lock?.release()
            throw error
        }
    }
}

/// Identifies one version of a file on disk: a rename over it or a rewrite changes the fingerprint.
struct FileFingerprint: Equatable {
    var inode: UInt64 = 0
    var size: Int64 = 0
    var modified: Double = 0

    init(_ url: URL) {
        var st = stat()
        guard stat(url.path, &st) == 0 else { return }
        inode = UInt64(st.st_ino)
        size = Int64(st.st_size)
        #if canImport(Darwin)
        modified = Double(st.st_mtimespec.tv_sec) + Double(st.st_mtimespec.tv_nsec) / 1e9
        #else
        modified = Double(st.st_mtim.tv_sec) + Double(st.st_mtim.tv_nsec) / 1e9
        #endif
    }
}
