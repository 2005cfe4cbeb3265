import Foundation
import Logging
import Synchronization

/// Loads stores from descriptions, routes entities to them by configuration, and hands out contexts.
///
/// ```swift
/// let coordinator = StoreCoordinator(schema: schema)
/// try coordinator.addStore(StoreDescription(url: URL(filePath: "app.sqlite"), type: "sqlite"))
/// let context = coordinator.newContext()
/// ```
///
/// A coordinator is thread-safe; contexts are not (use one per thread or task, as with Core Data).
public final class StoreCoordinator: Sendable {
    /// The schema every store is opened against.
    public let schema: Schema
    /// Where backends are looked up.
    public let registry: BackendRegistry

    private let loaded = Mutex<[LoadedStore]>([])
    /// Bumped whenever the set of loaded stores changes, so contexts can cache which store an entity goes to.
    private let generation = Atomic<Int>(0)

    /// Changes whenever a store is added, removed or swapped.
    var storesGeneration: Int { generation.load(ordering: .acquiring) }

    /// Who observes the stores' changes, and what the last check for other processes' changes saw.
    let changeFeed = ChangeFeed()

    /// Where the coordinator logs (see <doc:OperationLogging>): `nil` logs to swift-log's task-local `Logger.current`.
    public let logger: Logger?

    /// Creates a coordinator for `schema` that finds backends in `registry` and logs to `logger` (by default to the
    /// caller's `Logger.current`; a given logger is bound as `Logger.current` while the coordinator works, so
    /// backends log to it too).
    public init(schema: Schema, registry: BackendRegistry = .shared, logger: Logger? = nil) {
        self.schema = schema
        self.registry = registry
        self.logger = logger
    }

    /// The stores currently loaded, in the order they were added.
    public var stores: [LoadedStore] { loaded.withLock { $0 } }

    /// Opens (or creates) the store a description points to and adds it.
    ///
    /// An existing store must have been written with a compatible schema (equal version hashes for every entity of
    /// the configuration); otherwise ``StoreError/incompatibleSchema(_:entities:)``, unless the description's
    /// ``StoreOptions/migratesSchemaAutomatically`` asks for the store to be upgraded to the coordinator's schema
    /// first (see <doc:SchemaEvolution>). A new store is created only when ``StoreOptions/createIfMissing`` allows it.
    @discardableResult
    public func addStore(_ description: StoreDescription) throws -> LoadedStore {
        try withLogger(ifGiven: logger) { try load(description) }
    }

    private func load(_ description: StoreDescription) throws -> LoadedStore {
        let backend = try registry.backend(for: description.type)
        let members = try schema.entities(inConfiguration: description.configuration)
        if let url = description.url, backend.keepsFiles {
            try Self.checkLocation(url, description: description)
        }
        let creating = StoreMetadata(
            storeType: backend.typeIdentifier, schema: schema, configuration: description.configuration,
            syncOptions: description.syncOptions)
        if !description.options.isReadOnly, let url = description.url, backend.keepsFiles {
            // An operation killed while replacing the store left it aside; opening would create an empty one instead.
            try PlacementRecovery.restoreAsideStore(at: url)
        }
        let existed = description.url.map {
            backend.keepsFiles ? FileManager.default.fileExists(atPath: $0.path) : backend.sniff($0) == .store
        } ?? false
        // A read-only description never creates anything.
        var store = try backend.open(at: description.url, options: description.options,
                                     creating: description.options.isReadOnly ? nil : creating)
        if description.options.migratesSchemaAutomatically, !description.options.isReadOnly, let url = description.url,
           !store.metadata.mismatchedEntities(members).isEmpty {
            store = try upgradeOnLoad(store, at: url, backend: backend, options: description.options)
        }
        do {
            let stored = store.metadata
            let names = Set(members.map(\.name))
            let mismatched = stored.mismatchedEntities(members)
            if !mismatched.isEmpty {
                throw StoreError.incompatibleSchema(description.url ?? URL(fileURLWithPath: "/"), entities: mismatched)
            }
            let handle = LoadedStore(description: description, backend: backend, store: store, entityNames: names)
            try loaded.withLock { stores -> Result<Void, StoreError> in
                if stores.contains(where: { $0.identifier == handle.identifier }) {
                    return .failure(.refused(description.url ?? URL(fileURLWithPath: "/"),
                        reason: "a store with the same UUID (\(handle.identifier)) is already loaded; is this a copy?"))
                }
                stores.append(handle)
                generation.add(1, ordering: .releasing)
                return .success(())
            }.get()
            // Fetches of the entities it holds now see its records.
            post(SavedChanges(unknownChangeOf: handle.identifier, origin: .storeOperation))
            Logger.current.debug(existed ? "store opened" : "store created", metadata: [
                "store": description.url?.logValue ?? "in memory", "type": .string(backend.typeIdentifier),
                "uuid": .stringConvertible(handle.identifier), "read_only": .stringConvertible(description.options.isReadOnly),
            ])
            return handle
        } catch {
            try? store.close()
            throw error
        }
    }

    /// Removes a store and closes it. Objects fetched from it become invalid.
    public func removeStore(_ store: LoadedStore) throws {
        let removed = loaded.withLock { stores in
            let before = stores.count
            stores.removeAll { $0 === store }
            generation.add(1, ordering: .releasing)
            return before != stores.count
        }
        guard removed else {
            throw StoreError.refused(store.url ?? URL(fileURLWithPath: "/"), reason: "store is not loaded in this coordinator")
        }
        store.invalidate("its store was removed from the coordinator")
        post(SavedChanges(unknownChangeOf: store.identifier, origin: .storeOperation))
        try store.store.close()
        (logger ?? Logger.current).debug("store closed", metadata: ["store": store.url?.logValue ?? "in memory"])
    }

    /// The loaded store with this UUID.
    public func store(withIdentifier id: UUID) -> LoadedStore? {
        loaded.withLock { $0.first { $0.identifier == id } }
    }

    /// The loaded store at this URL.
    public func store(at url: URL) -> LoadedStore? {
        let wanted = url.standardizedFileURL
        return loaded.withLock { $0.first { $0.url?.standardizedFileURL == wanted } }
    }

    /// The first loaded store that holds `entity` (new records of the entity go there unless a store is named).
    public func store(for entity: String) throws -> LoadedStore {
        _ = try schema.requireEntity(entity)
        guard let s = loaded.withLock({ $0.first { $0.entityNames.contains(entity) } }) else {
            throw StoreError.noStoreForEntity(entity)
        }
        return s
    }

    /// Every loaded store that holds `entity`.
    public func stores(for entity: String) -> [LoadedStore] {
        loaded.withLock { $0.filter { $0.entityNames.contains(entity) } }
    }

    /// A new unit-of-work context over this coordinator.
    public func newContext() -> StoreContext { StoreContext(coordinator: self) }

    /// Swaps a loaded store for a newly opened one (used by replace, restore and migrate): the old handle is
    /// invalidated and closed.
    func swap(_ old: LoadedStore, for new: LoadedStore?, reason: String) {
        loaded.withLock { stores in
            if let i = stores.firstIndex(where: { $0 === old }) {
                if let new { stores[i] = new } else { stores.remove(at: i) }
            } else if let new {
                stores.append(new)
            }
            generation.add(1, ordering: .releasing)
        }
        old.invalidate(reason)
        try? old.store.close()
        // What the old store held is gone from fetches (a store operation adds the new one through `addStore`).
        post(SavedChanges(unknownChangeOf: old.identifier, origin: .storeOperation))
    }

    /// Refuses descriptions that point into a missing directory before a backend gets to create anything.
    static func checkLocation(_ url: URL, description: StoreDescription) throws {
        let dir = url.deletingLastPathComponent()
        var isDir: ObjCBool = false
        if !FileManager.default.fileExists(atPath: dir.path, isDirectory: &isDir) || !isDir.boolValue {
            throw StoreError.directoryUnusable(dir, reason: "directory does not exist")
        }
    }
}
