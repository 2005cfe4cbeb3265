import Foundation
import LMDBBackend
import SQLiteBackend
import StoreAPI
import StoreTestSupport
import Testing
import XMLBackend

extension TemporaryDirectory {
    /// Entry names in the directory, hidden ones included, but not the `-wal`/`-shm` files SQLite keeps beside a
    /// database after a read-only connection (they belong to that store, which owns them).
    func entries() -> [String] {
        listing().filter { !(($0.hasSuffix("-wal") || $0.hasSuffix("-shm")) && $0.contains(".sqlite")) }
    }
}

/// Every backend storectl knows, in a registry of the tests' own.
enum Backends {
    static let registry = BackendRegistry(backends: [InMemoryBackend(), SQLiteStoreBackend(), LMDBStoreBackend(), XMLStoreBackend()])

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
}

/// Runs the built `storectl` binary in a test's directory.
enum Storectl {
    /// Runs `storectl` with `arguments` in `directory` and waits for it; standard input from `stdin` when given.
    @discardableResult
    static func run(_ arguments: [String], in directory: TemporaryDirectory, stdin: URL? = nil) throws -> Child {
        try Child.storectl(arguments, in: directory, stdin: stdin)
    }

    /// Starts `storectl` without waiting.
    static func start(_ arguments: [String], in directory: TemporaryDirectory) throws -> Child {
        try Child.storectl(arguments, in: directory, waiting: false)
    }
}
