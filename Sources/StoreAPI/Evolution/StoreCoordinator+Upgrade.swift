import Foundation

extension StoreCoordinator {
    /// Upgrades a loaded store's files to the coordinator's schema: the store is closed, upgraded with
    /// ``StoreOperations/upgradeStore(at:type:to:options:)`` and loaded again; objects fetched from it before
    /// become invalid. A store that cannot be upgraded stays loaded as it was.
    ///
    /// A store loaded by a coordinator already matches its schema, so this is for stores loaded before the
    /// coordinator's schema changed hands — use ``StoreOptions/migratesSchemaAutomatically`` to upgrade on load, or
    /// the operation on a path for a store no coordinator has loaded.
    @discardableResult
    public func upgradeStore(at url: URL, type: String? = nil,
                             options: StoreOperations.UpgradeOptions = .init()) throws -> SchemaMigrationPlan {
        let operations = StoreOperations(registry: registry, logger: logger)
        guard let loaded = store(at: url) else {
            return try operations.upgradeStore(at: url, type: type, to: schema, options: options)
        }
        swap(loaded, for: nil, reason: "the store was upgraded to a new schema")
        let plan: SchemaMigrationPlan
        do {
            plan = try operations.upgradeStore(at: url, type: type ?? loaded.type, to: schema, options: options)
        } catch {
            _ = try? addStore(loaded.storeDescription)
            throw error
        }
        try addStore(loaded.storeDescription)
        return plan
    }

    /// Load's upgrade step: `store` (just opened, written with another schema) is closed, upgraded to the
    /// coordinator's schema and opened again.
    func upgradeOnLoad(_ store: any PersistentStore, at url: URL, backend: any StoreBackend,
                       options: StoreOptions) throws -> any PersistentStore {
        try store.close()
        let operations = StoreOperations(registry: registry, logger: logger)
        try operations.upgradeStore(at: url, type: backend.typeIdentifier, to: schema,
                                    options: .init(force: false))
        return try backend.open(at: url, options: options, creating: nil)
    }
}
