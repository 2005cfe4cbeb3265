import Foundation
import LMDBBackend
import SQLiteBackend
@_spi(BackendKit) import StoreAPI
import StoreTestSupport
import Testing
import XMLBackend
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Every persistent backend, in a registry of the tests' own.
enum Backends {
    static let registry = BackendRegistry(backends: [InMemoryBackend(), SQLiteStoreBackend(), LMDBStoreBackend(), XMLStoreBackend()])

    static let types = ["sqlite", "lmdb", "xml"]

    static var operations: StoreOperations { StoreOperations(registry: registry) }

    static func backend(_ type: String) throws -> any StoreBackend { try registry.backend(for: type) }

    /// The type of the store at `url`, or `nil` when no backend recognises one there.
    static func storeType(at url: URL) -> String? {
        for type in types {
            if let b = try? registry.backend(for: type), b.sniff(url) == .store { return type }
        }
        return nil
    }

    static func open(_ url: URL, readOnly: Bool = true) throws -> any PersistentStore {
        let backend = try registry.detectBackend(at: url)
        return try backend.open(at: url, options: StoreOptions(isReadOnly: readOnly, createIfMissing: false), creating: nil)
    }
}

/// The stores the tests start from, built once per test process and never written afterwards (tests copy them).
enum Fixtures {
    private static let lock = NSLock()
    nonisolated(unsafe) private static var built: [String: URL] = [:]

    /// The directory of this process's fixtures; directories left by earlier, dead test processes are removed.
    static let directory: URL = {
        let fm = FileManager.default
        let tmp = fm.temporaryDirectory
        for name in (try? fm.contentsOfDirectory(atPath: tmp.path)) ?? [] where name.hasPrefix("reliability-fixtures-") {
            if let pid = Int32(name.dropFirst("reliability-fixtures-".count)), pid != getpid(), !processExists(pid) {
                try? fm.removeItem(at: tmp.appendingPathComponent(name))
            }
        }
        let dir = tmp.appendingPathComponent("reliability-fixtures-\(getpid())")
        try? fm.createDirectory(at: dir, withIntermediateDirectories: true)
        // Removed when the test process exits (a killed one leaves it for the next run to remove, above).
        atexit {
            let dir = FileManager.default.temporaryDirectory.appendingPathComponent("reliability-fixtures-\(getpid())")
            try? FileManager.default.removeItem(at: dir)
        }
        return dir
    }()

    static let schema: Schema? = try? Schema(xcodeModelAt: PackagePaths.libraryModel)

    private static func cached(_ key: String, _ make: (URL) throws -> Void) throws -> URL {
        lock.lock()
        defer { lock.unlock() }
        if let url = built[key] { return url }
        let url = directory.appendingPathComponent(key)
        if FileManager.default.fileExists(atPath: url.path) { try FileManager.default.removeItem(at: url) }
        try make(url)
        built[key] = url
        return url
    }

    /// The sample library (2,770 records and an import history transaction) as a store of `type`. The SQLite one
    /// also holds a hot write-ahead log: a writer was killed after five more saves, so part of its data lives only
    /// in `-wal` — the case where copying the main file alone loses data.
    static func library(_ type: String) throws -> URL {
        if type != "sqlite" {
            let sqlite = try library("sqlite")
            return try cached("library.\(type)") { url in
                try Backends.operations.copyStore(from: sqlite, to: url, type: type)
            }
        }
        return try cached("library.sqlite") { url in
            let schema = try #require(schema, "Samples/Library.xcdatamodeld does not load")
            let store = try Backends.backend("sqlite").open(
                at: url, options: StoreOptions(historyTracking: true), creating: StoreMetadata(storeType: "sqlite", schema: schema))
            do {
                try NDJSONImporter(historyAuthor: "import").importRecords(fromFileAt: PackagePaths.libraryData, into: store)
                try store.close()
            } catch {
                try? store.close()
                throw error
            }
            let writer = try Child.storestress(["saves", url.path, "--writer", "hot", "--history"])
            #expect(writer.waitForOutput("saved 5"), "\(writer.summary)")
            writer.kill()
            let wal = url.deletingLastPathComponent().appendingPathComponent(url.lastPathComponent + "-wal")
            let size = (try? FileManager.default.attributesOfItem(atPath: wal.path)[.size] as? Int) ?? 0
            #expect(size > 0, "the library fixture should have a hot -wal")
        }
    }

    /// A store of `type` with only the schema: the start of every save loop.
    static func empty(_ type: String) throws -> URL {
        try cached("empty.\(type)") { url in
            let schema = try #require(schema, "Samples/Library.xcdatamodeld does not load")
            try Backends.backend(type).open(at: url, options: StoreOptions(), creating: StoreMetadata(storeType: type, schema: schema)).close()
        }
    }

    /// A small store of `type` that is not the library (another UUID, three saves of its own): what a destination
    /// holds before it is replaced.
    static func other(_ type: String) throws -> URL {
        let empty = try empty(type)
        return try cached("other.\(type)") { url in
            try StoreBytes.copy(empty, to: url)
            // A copy of the files would share the empty store's UUID; give it its own.
            var metadata = try Backends.backend(type).readMetadata(at: url)
            metadata.storeUUID = UUID()
            try Backends.backend(type).writeMetadata(metadata, at: url)
            let writer = try Child.storestress(["saves", url.path, "--writer", "other", "--count", "3"])
            writer.wait()
            #expect(writer.status == 0, "\(writer.summary)")
        }
    }
}

/// Copies, compares and fingerprints a store's files directly, beside the API.
enum StoreBytes {
    /// The files that hold a store's data: every regular file it owns except lock files and SQLite's `-shm`
    /// (shared memory, rebuilt from the others). Directories are walked.
    static func dataFiles(of url: URL) -> [URL] {
        guard let type = Backends.storeType(at: url), let backend = try? Backends.backend(type) else {
            return rawDataFiles(at: url)
        }
        var seen: Set<String> = []
        return backend.ownedFiles(ofStoreAt: url).flatMap { file -> [URL] in
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: file.path, isDirectory: &isDirectory) else { return [] }
            if isDirectory.boolValue {
                return ((try? FileManager.default.contentsOfDirectory(atPath: file.path)) ?? []).sorted()
                    .map { file.appendingPathComponent($0) }
            }
            return [file]
        }
        .filter { !isLockOrShared($0) && seen.insert($0.standardizedFileURL.path).inserted }
    }

    /// The data files at `url` when no store is recognised there (a store being destroyed, say).
    static func rawDataFiles(at url: URL) -> [URL] {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory) else { return [] }
        if isDirectory.boolValue {
            return ((try? FileManager.default.contentsOfDirectory(atPath: url.path)) ?? []).sorted()
                .map { url.appendingPathComponent($0) }.filter { !isLockOrShared($0) }
        }
        let wal = sidecar(url, "-wal")
        return [url] + (FileManager.default.fileExists(atPath: wal.path) ? [wal] : [])
    }

    static func isLockOrShared(_ url: URL) -> Bool {
        let n = url.lastPathComponent
        return n == "lock.mdb" || n.hasSuffix("-lock") || n.hasSuffix(".lock") || n.hasSuffix("-shm")
    }

    static func sidecar(_ url: URL, _ suffix: String) -> URL {
        url.deletingLastPathComponent().appendingPathComponent(url.lastPathComponent + suffix)
    }

    /// Copies the data files of the store at `source` to `destination` (no lock or shared-memory files), so the
    /// copy is the same store, byte for byte — a hot SQLite `-wal` included.
    static func copy(_ source: URL, to destination: URL) throws {
        let fm = FileManager.default
        var isDirectory: ObjCBool = false
        guard fm.fileExists(atPath: source.path, isDirectory: &isDirectory) else { throw StoreError.storeNotFound(source) }
        if isDirectory.boolValue {
            try fm.createDirectory(at: destination, withIntermediateDirectories: false)
            for f in dataFiles(of: source) {
                try fm.copyItem(at: f, to: destination.appendingPathComponent(f.lastPathComponent))
            }
        } else {
            try fm.copyItem(at: source, to: destination)
            let wal = sidecar(source, "-wal")
            if fm.fileExists(atPath: wal.path) { try fm.copyItem(at: wal, to: sidecar(destination, "-wal")) }
        }
    }

    /// Removes whatever is at `url` and the SQLite sidecars and lock files beside it, without asking any backend —
    /// and a store a killed placement set aside for `url` (staging names with `-<name>-old-`): the next operation
    /// would put that one back as the store at `url` (`PlacementRecovery`), so leaving it would not leave the path
    /// empty. (A kill between a replace's renames, then a reset to "no destination", found the replaced store
    /// restored at the path by the next copy.)
    static func removeAll(at url: URL) {
        for u in [url] + ["-wal", "-shm", "-journal", ".lock", "-lock"].map({ sidecar(url, $0) }) {
            try? FileManager.default.removeItem(at: u)
        }
        let directory = url.deletingLastPathComponent()
        let marker = "-\(url.lastPathComponent)-old-"
        for name in staging(in: directory) where name.contains(marker) {
            try? FileManager.default.removeItem(at: directory.appendingPathComponent(name))
        }
    }

    /// The data files' contents by name (an empty `-wal` counts as none: a reader may create one).
    static func contents(of url: URL) -> [String: Data] {
        var out: [String: Data] = [:]
        for f in dataFiles(of: url) {
            guard let data = try? Data(contentsOf: f) else { continue }
            if f.lastPathComponent.hasSuffix("-wal") && data.isEmpty { continue }
            // Keyed by the name relative to the store, so a copy elsewhere compares equal.
            let name = f.path.hasPrefix(url.path + "/") ? String(f.path.dropFirst(url.path.count)) : String(f.lastPathComponent.dropFirst(url.lastPathComponent.count))
            out[name] = data
        }
        return out
    }

    /// Identifies the exact files of a store without reading them: a rename, rewrite or append changes it.
    static func fingerprint(of url: URL) -> [String] {
        dataFiles(of: url).map { f in
            var st = stat()
            guard stat(f.path, &st) == 0 else { return "\(f.path): missing" }
            return "\(f.path): \(st.st_ino) \(st.st_size) \(st.st_mtim.tv_sec).\(st.st_mtim.tv_nsec)"
        }
    }

    /// The space the store's data files take on a tmpfs (whole pages, plus a page per file for its entry).
    static func usage(of url: URL) -> Int {
        dataFiles(of: url).reduce(0) { total, f in
            let size = (try? FileManager.default.attributesOfItem(atPath: f.path)[.size] as? Int) ?? 0
            return total + (size + 4095) / 4096 * 4096 + 4096
        }
    }

    static func isSymbolicLink(_ url: URL) -> Bool {
        var st = stat()
        return lstat(url.path, &st) == 0 && (st.st_mode & S_IFMT) == S_IFLNK
    }

    /// Entries in `directory` that carry the staging prefix.
    static func staging(in directory: URL) -> Set<String> {
        Set(((try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []).filter { $0.hasPrefix(AtomicFile.stagingPrefix) })
    }
}

/// Checks of a store's logical state.
enum StoreChecks {
    /// Why the store at `url` is not a complete, healthy store identical to `expected` — or `nil` when it is.
    /// Opens both read-only, runs the engine's integrity check and the verifier, and compares records, metadata
    /// and history.
    static func problems(at url: URL, type: String? = nil, identicalTo expected: URL) -> String? {
        guard let found = Backends.storeType(at: url) else { return "\(url.path): no store there" }
        if let type, found != type { return "\(url.path): a \(found) store, expected \(type)" }
        do {
            let backend = try Backends.backend(found)
            let integrity = try backend.checkIntegrity(at: url)
            if !integrity.isEmpty { return "\(url.path): integrity: \(integrity.prefix(5).joined(separator: "; "))" }
            let store = try Backends.open(url)
            defer { try? store.close() }
            let verified = try StoreVerifier().verify(store)
            if !verified.isEmpty { return "\(url.path): verify: \(verified.prefix(5).joined(separator: "; "))" }
            let reference = try Backends.open(expected)
            defer { try? reference.close() }
            let differences = try StoreComparison(listLimit: 5).compare(reference, store)
            if !differences.isIdentical { return "\(url.path) differs from \(expected.lastPathComponent): \(differences.summary)" }
            return nil
        } catch {
            return "\(url.path): \(error)"
        }
    }
}
