import Foundation
import LMDBBackend
import SQLiteBackend
import StoreAPI
import Testing
import XMLBackend

/// A directory under the system's temporary directory, removed by ``remove()``.
struct TemporaryDirectory {
    let url: URL

    init() throws {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("storectl-tests-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    func path(_ name: String) -> URL { url.appendingPathComponent(name) }

    func remove() { try? FileManager.default.removeItem(at: url) }

    /// Entry names in the directory, hidden ones included, but not the `-wal`/`-shm` files SQLite keeps beside a
    /// database after a read-only connection (they belong to that store, which owns them).
    func entries() -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: url.path)) ?? [])
            .filter { !(($0.hasSuffix("-wal") || $0.hasSuffix("-shm")) && $0.contains(".sqlite")) }
            .sorted()
    }
}

/// The package's files, found from this source file's location.
enum PackagePaths {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static let samples = root.appendingPathComponent("Samples")
    static let libraryModel = samples.appendingPathComponent("Library.xcdatamodeld")
    static let libraryData = samples.appendingPathComponent("library.ndjson")
}

/// Every backend storectl knows, in a registry of the tests' own.
enum Backends {
    static let registry: BackendRegistry = {
        let r = BackendRegistry(backends: [InMemoryBackend()])
        r.register(SQLiteStoreBackend())
        r.register(LMDBStoreBackend())
        r.register(XMLStoreBackend())
        return r
    }()

    static let persistentTypes = ["sqlite", "lmdb", "xml"]

    static func fileExtension(_ type: String) -> String { type }

    /// Creates an empty store of `type` at `url` with `schema`.
    static func create(_ type: String, at url: URL, schema: Schema, custom: [String: MetadataValue] = [:]) throws -> any PersistentStore {
        let backend = try registry.backend(for: type)
        return try backend.open(at: url, options: StoreOptions(), creating: StoreMetadata(storeType: type, schema: schema, custom: custom))
    }

    /// Opens the existing store at `url`.
    static func open(_ url: URL, readOnly: Bool = false) throws -> any PersistentStore {
        let backend = try registry.detectBackend(at: url)
        return try backend.open(at: url, options: StoreOptions(isReadOnly: readOnly, createIfMissing: false), creating: nil)
    }

    /// Every record of a store, by global ID.
    static func records(of store: any PersistentStore) throws -> [UUID: Record] {
        var out: [UUID: Record] = [:]
        for e in store.metadata.schema.entities where !e.isAbstract {
            for r in try store.fetch(FetchRequest(entity: e.name, includesSubentities: false)) { out[r.globalID] = r }
        }
        return out
    }

    static func count(_ store: any PersistentStore) throws -> Int { try StoreTransfer.countRecords(store) }
}

/// Runs the built `storectl` binary.
enum Storectl {
    struct Result {
        var status: Int32
        var stdout: String
        var stderr: String
        var terminatedBySignal: Bool
    }

    /// The binary: `STORECTL` from the environment, or the one beside the test bundle in the products directory.
    static let binary: URL? = {
        let fm = FileManager.default
        if let explicit = ProcessInfo.processInfo.environment["STORECTL"], fm.isExecutableFile(atPath: explicit) {
            return URL(fileURLWithPath: explicit)
        }
        var candidates: [URL] = []
        let bundle = Bundle.main.bundleURL
        candidates += [bundle.appendingPathComponent("storectl"), bundle.deletingLastPathComponent().appendingPathComponent("storectl")]
        for b in Bundle.allBundles {
            candidates.append(b.bundleURL.deletingLastPathComponent().appendingPathComponent("storectl"))
        }
        if let first = CommandLine.arguments.first {
            let exe = URL(fileURLWithPath: first).resolvingSymlinksInPath()
            candidates.append(exe.deletingLastPathComponent().appendingPathComponent("storectl"))
            // macOS: …/debug/Package.xctest/Contents/MacOS/Package
            candidates.append(exe.deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
                .deletingLastPathComponent().appendingPathComponent("storectl"))
        }
        candidates.append(PackagePaths.root.appendingPathComponent(".build/debug/storectl"))
        return candidates.first { fm.isExecutableFile(atPath: $0.path) }
    }()

    /// Runs `storectl` with `arguments` and waits for it; standard input from `stdin` when given.
    @discardableResult
    static func run(_ arguments: [String], in directory: TemporaryDirectory, stdin: URL? = nil) throws -> Result {
        let process = try start(arguments, in: directory, stdin: stdin)
        process.process.waitUntilExit()
        return process.result()
    }

    final class Running {
        let process: Process
        let stdoutURL: URL
        let stderrURL: URL

        init(process: Process, stdoutURL: URL, stderrURL: URL) {
            self.process = process
            self.stdoutURL = stdoutURL
            self.stderrURL = stderrURL
        }

        func result() -> Result {
            let out = (try? String(contentsOf: stdoutURL, encoding: .utf8)) ?? ""
            let err = (try? String(contentsOf: stderrURL, encoding: .utf8)) ?? ""
            try? FileManager.default.removeItem(at: stdoutURL)
            try? FileManager.default.removeItem(at: stderrURL)
            return Result(status: process.terminationStatus, stdout: out, stderr: err,
                          terminatedBySignal: process.terminationReason == .uncaughtSignal)
        }
    }

    /// Starts `storectl` without waiting. Output goes to files outside `directory`, so listings of it stay clean.
    static func start(_ arguments: [String], in directory: TemporaryDirectory, stdin: URL? = nil) throws -> Running {
        let binary = try #require(binary, "storectl binary not found next to the test bundle; build it (swift build) or set STORECTL")
        let process = Process()
        process.executableURL = binary
        process.arguments = arguments
        process.currentDirectoryURL = directory.url
        let tag = UUID().uuidString
        let outURL = FileManager.default.temporaryDirectory.appendingPathComponent("storectl-out-\(tag)")
        let errURL = FileManager.default.temporaryDirectory.appendingPathComponent("storectl-err-\(tag)")
        FileManager.default.createFile(atPath: outURL.path, contents: nil)
        FileManager.default.createFile(atPath: errURL.path, contents: nil)
        process.standardOutput = try FileHandle(forWritingTo: outURL)
        process.standardError = try FileHandle(forWritingTo: errURL)
        if let stdin { process.standardInput = try FileHandle(forReadingFrom: stdin) } else { process.standardInput = FileHandle.nullDevice }
        try process.run()
        return Running(process: process, stdoutURL: outURL, stderrURL: errURL)
    }
}
