import Foundation
import LMDBBackend
import SQLiteBackend
import StoreAPI
import StoreTestSupport
import XMLBackend

/// Every backend, in a registry of the tests' own.
enum Backends {
    static let registry = BackendRegistry(backends: [InMemoryBackend(), SQLiteStoreBackend(), LMDBStoreBackend(), XMLStoreBackend()])

    static let persistentTypes = ["sqlite", "lmdb", "xml"]

    /// Creates an empty store of `type` at `url` with `schema`.
    static func create(_ type: String, at url: URL, schema: Schema) throws -> any PersistentStore {
        try registry.backend(for: type).open(at: url, options: StoreOptions(), creating: StoreMetadata(storeType: type, schema: schema))
    }

    /// Opens the existing store at `url`.
    static func open(_ url: URL, readOnly: Bool = false) throws -> any PersistentStore {
        try registry.detectBackend(at: url).open(at: url, options: StoreOptions(isReadOnly: readOnly, createIfMissing: false), creating: nil)
    }

    /// Every record of a store, by global ID.
    static func records(of store: any PersistentStore) throws -> [UUID: Record] {
        Dictionary(try allRecords(of: store).map { ($0.globalID, $0) }, uniquingKeysWith: { _, last in last })
    }
}
