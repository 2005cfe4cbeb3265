import Foundation
import StoreAPI

/// In-memory stores for tests that need some store: anonymous ones, or named ones a test destroys.
enum MemoryStores {
    static let registry = BackendRegistry(backends: [InMemoryBackend()])

    /// A URL no other test uses, for a named in-memory store (nothing is written to disk there).
    static func newURL(_ name: String = "store") -> URL {
        URL(fileURLWithPath: "/memory-stores/\(UUID().uuidString)/\(name)")
    }

    /// A new anonymous store with `schema`.
    static func create(schema: Schema) throws -> any PersistentStore {
        try InMemoryBackend().open(at: nil, options: StoreOptions(), creating: StoreMetadata(storeType: InMemoryBackend.typeIdentifier, schema: schema))
    }

    /// Opens the named store at `url`.
    static func open(_ url: URL, readOnly: Bool = false) throws -> any PersistentStore {
        try InMemoryBackend().open(at: url, options: StoreOptions(isReadOnly: readOnly, createIfMissing: false), creating: nil)
    }

    /// Destroys the named store at `url`, if there is one.
    static func destroy(_ url: URL) { try? InMemoryBackend().destroyStore(at: url) }
}
