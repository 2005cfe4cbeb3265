import Foundation
import Synchronization

/// The built-in in-memory store type (`memory`): a real store without files — no `/dev/null` URL tricks.
///
/// A description without a URL opens a fresh anonymous store. A description with a URL names a store that lives
/// until the process ends or it is destroyed: every open of that URL in the process sees the same records, so an
/// in-memory store can be the source or destination of every store operation, like any other type.
public struct InMemoryBackend: StoreBackend {
    /// The type identifier, `memory`.
    public static let typeIdentifier = "memory"

    /// Named stores of this process, by URL.
    private static let named = Mutex<[URL: MemoryStore.Storage]>([:])

    public init() {}

    public var typeIdentifier: String { Self.typeIdentifier }
    public var fileExtensions: [String] { [] }
    public var capabilities: BackendCapabilities { [.transactions, .history, .orderedRelationships, .fastCopy, .onlineBackup] }

    private static func key(_ url: URL) -> URL { url.standardizedFileURL }

    public func sniff(_ url: URL) -> SniffResult {
        Self.named.withLock { $0[Self.key(url)] } == nil ? .none : .store
    }

    public func ownedFiles(ofStoreAt url: URL) -> [URL] { [] }

    public func readMetadata(at url: URL) throws -> StoreMetadata {
        guard let storage = Self.named.withLock({ $0[Self.key(url)] }) else { throw StoreError.storeNotFound(url) }
        return storage.state.withLock { $0.metadata }
    }

    public func writeMetadata(_ metadata: StoreMetadata, at url: URL) throws {
        guard let storage = Self.named.withLock({ $0[Self.key(url)] }) else { throw StoreError.storeNotFound(url) }
        storage.state.withLock { $0.metadata = metadata }
    }

    public func open(at url: URL?, options: StoreOptions, creating: StoreMetadata?) throws -> any PersistentStore {
        guard let url else {
            guard let creating else { throw StoreError.unsupported("an anonymous in-memory store needs metadata to create") }
            return MemoryStore(url: nil, metadata: creating)
        }
        let createIfMissing = options.createIfMissing
        let found: MemoryStore.Storage? = Self.named.withLock { named in
            if let existing = named[Self.key(url)] { return existing }
            guard let creating, createIfMissing else { return nil }
            let fresh = MemoryStore.Storage(MemoryStore.State(metadata: creating))
            named[Self.key(url)] = fresh
            return fresh
        }
        guard let storage = found else { throw StoreError.storeNotFound(url) }
        guard options.isReadOnly else { return MemoryStore(url: url, storage: storage, willCommit: nil) }
        let refuse: @Sendable (MemoryStore.Snapshot) throws -> Void = { _ in
            throw StoreError.readOnly(url, reason: "opened read-only")
        }
        return MemoryStore(url: url, storage: storage, willCommit: refuse)
    }

    public func destroyStore(at url: URL) throws {
        let removed = Self.named.withLock { $0.removeValue(forKey: Self.key(url)) }
        if removed == nil { throw StoreError.storeNotFound(url) }
    }

    public func copyStore(from source: URL, to destination: URL) throws {
        let outcome: StoreError? = Self.named.withLock { named in
            guard let src = named[Self.key(source)] else { return .storeNotFound(source) }
            guard named[Self.key(destination)] == nil else { return .storeExists(destination) }
            named[Self.key(destination)] = MemoryStore.Storage(src.state.withLock { $0 })
            return nil
        }
        if let outcome { throw outcome }
    }
}
