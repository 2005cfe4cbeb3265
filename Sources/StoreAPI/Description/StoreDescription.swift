import Foundation

/// Everything needed to load a store: where it is, what type it is, which configuration of the schema it holds,
/// how to open it, and how it syncs.
///
/// Descriptions are `Codable`, so tools and apps can keep them in files.
///
/// ```swift
/// var description = StoreDescription(url: URL(filePath: "app.sqlite"), type: "sqlite")
/// description.options.historyTracking = true
/// description.options.backend["sqlite.synchronous"] = "FULL"
/// ```
public struct StoreDescription: Sendable, Hashable, Codable {
    /// Where the store lives. `nil` for an anonymous in-memory store.
    public var url: URL?
    /// The backend's type identifier (``StoreBackend/typeIdentifier``), such as `sqlite`, `lmdb`, `xml` or `memory`.
    public var type: String
    /// The schema configuration this store holds; `nil` for every entity.
    public var configuration: String?
    /// How the store is opened.
    public var options: StoreOptions
    /// How the store syncs, if it does. Store operations carry these to the destination and never start sync.
    public var syncOptions: SyncOptions?

    /// Creates a description.
    public init(
        url: URL?, type: String, configuration: String? = nil, options: StoreOptions = StoreOptions(),
        syncOptions: SyncOptions? = nil
    ) {
        self.url = url
        self.type = type
        self.configuration = configuration
        self.options = options
        self.syncOptions = syncOptions
    }
}

/// Options for opening a store.
public struct StoreOptions: Sendable, Hashable, Codable {
    /// Open without ever writing: saves fail with ``StoreError/readOnly(_:reason:)``.
    public var isReadOnly: Bool
    /// Record every save as a history transaction (see ``HistoryTransaction``).
    public var historyTracking: Bool
    /// Create the store when the URL holds none. When `false`, a missing store is ``StoreError/storeNotFound(_:)``.
    public var createIfMissing: Bool
    /// Seconds to wait for a lock held by another writer before failing.
    public var timeout: Double
    /// Backend-specific options, namespaced by backend: `sqlite.journal_mode`, `sqlite.synchronous`,
    /// `lmdb.mapSize`, … Each backend documents the keys it reads and ignores the others.
    public var backend: [String: String]
    /// Upgrade a store written with an earlier schema when it is loaded, by the plan inferred from the two schemas
    /// (Core Data's `NSMigratePersistentStoresAutomaticallyOption` with `NSInferMappingModelAutomaticallyOption`;
    /// see <doc:SchemaEvolution>). Without it, such a store is ``StoreError/incompatibleSchema(_:entities:)``.
    /// Ignored by read-only descriptions, which never write.
    public var migratesSchemaAutomatically: Bool

    /// Creates options.
    public init(
        isReadOnly: Bool = false, historyTracking: Bool = false, createIfMissing: Bool = true, timeout: Double = 5,
        backend: [String: String] = [:], migratesSchemaAutomatically: Bool = false
    ) {
        self.isReadOnly = isReadOnly
        self.historyTracking = historyTracking
        self.createIfMissing = createIfMissing
        self.timeout = timeout
        self.backend = backend
        self.migratesSchemaAutomatically = migratesSchemaAutomatically
    }

    private enum CodingKeys: String, CodingKey {
        case isReadOnly, historyTracking, createIfMissing, timeout, backend, migratesSchemaAutomatically
    }

    /// Decodes options; keys added after a description was written may be absent.
    public init(from decoder: Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        isReadOnly = try c.decode(Bool.self, forKey: .isReadOnly)
        historyTracking = try c.decode(Bool.self, forKey: .historyTracking)
        createIfMissing = try c.decode(Bool.self, forKey: .createIfMissing)
        timeout = try c.decode(Double.self, forKey: .timeout)
        backend = try c.decode([String: String].self, forKey: .backend)
        migratesSchemaAutomatically = try c.decodeIfPresent(Bool.self, forKey: .migratesSchemaAutomatically) ?? false
    }
}

/// Where and how a store syncs. The framework keeps these with the store and carries them through every store
/// operation; it never contacts the remote during an operation.
public struct SyncOptions: Sendable, Hashable, Codable {
    /// The database scope, as in CloudKit.
    public enum Scope: String, Sendable, Hashable, Codable {
        case `private`, `public`, shared
    }

    /// The remote location.
    public var remote: URL
    /// The container identifier on the remote.
    public var containerIdentifier: String
    /// The database scope.
    public var scope: Scope

    /// Creates sync options.
    public init(remote: URL, containerIdentifier: String, scope: Scope = .private) {
        self.remote = remote
        self.containerIdentifier = containerIdentifier
        self.scope = scope
    }
}
