import Foundation
import StoreAPI

/// Read access to the models of a ``ModelStore``, handed to ``ModelStore/read(_:)``: each fetch sees what was
/// committed when it runs.
public struct ModelReader {
    let coordinator: StoreCoordinator

    /// The models of type `M` matching `predicate`, sorted by `sort`, at most `limit`.
    public func fetch<M: PersistentModel>(
        _ type: M.Type, where predicate: ModelPredicate<M>? = nil, sortedBy sort: [ModelSort<M>] = [],
        offset: Int = 0, limit: Int? = nil
    ) throws -> [M] {
        let request = try FetchRequest(M.self, where: predicate, sortedBy: sort, offset: offset, limit: limit)
        return try ModelFetch.committedModels(M.self, request, coordinator)
    }

    /// The number of models of type `M` matching `predicate`.
    public func count<M: PersistentModel>(_ type: M.Type, where predicate: ModelPredicate<M>? = nil) throws -> Int {
        let request = try FetchRequest(M.self, where: predicate, sortedBy: [])
        return try coordinator.stores(for: M.entityName).reduce(0) { $0 + (try $1.store.count(request)) }
    }

    /// The model a reference points to, or `nil` when its record no longer exists.
    public func model<M: PersistentModel>(_ ref: ModelRef<M>) throws -> M? {
        try models([ref]).first
    }

    /// The models references point to, in their order; references to records that no longer exist are skipped.
    public func models<M: PersistentModel>(_ refs: [ModelRef<M>]) throws -> [M] {
        try ModelFetch.committed(M.self, refs, coordinator)
    }
}

/// Fetches of committed records, decoded straight from the store's records (no managed objects).
enum ModelFetch {
    /// The models alone: a plain fetch keeps neither the records nor their IDs (an observation does).
    static func committedModels<M: PersistentModel>(
        _ type: M.Type, _ request: FetchRequest, _ coordinator: StoreCoordinator
    ) throws -> [M] {
        let stores = coordinator.stores(for: M.entityName)
        guard stores.count == 1 else { return try committed(M.self, request, coordinator).models }
        let layout = try ModelLayout(M.self, in: coordinator.schema)
        return try decode(M.self, try stores[0].store.fetch(request), layout, stores[0].identifier)
    }

    static func decode<M: PersistentModel>(
        _ type: M.Type, _ records: [Record], _ layout: ModelLayout, _ storeUUID: UUID
    ) throws -> [M] {
        var models: [M] = []
        models.reserveCapacity(records.count)
        for r in records {
            models.append(try M(from: ModelRow(record: r, layout: layout, storeUUID: storeUUID)))
        }
        return models
    }

    static func committed<M: PersistentModel>(
        _ type: M.Type, _ request: FetchRequest, _ coordinator: StoreCoordinator
    ) throws -> (models: [M], ids: [ObjectID], records: [Record]) {
        let layout = try ModelLayout(M.self, in: coordinator.schema)
        let stores = coordinator.stores(for: M.entityName)
        if stores.count == 1 {
            let store = stores[0]
            let records = try store.store.fetch(request)
            let models = try decode(M.self, records, layout, store.identifier)
            return (models, records.map { ObjectID(storeUUID: store.identifier, entity: $0.entity, primaryKey: $0.primaryKey) }, records)
        }
        // Several stores hold the entity: the context merges, sorts and slices their results.
        let context = coordinator.newContext()
        var models: [M] = []
        var ids: [ObjectID] = []
        var records: [Record] = []
        for o in try context.fetch(request) {
            let r = try o.recordSnapshot()
            models.append(try M(from: ModelRow(record: r, layout: layout, storeUUID: o.objectID.storeUUID)))
            ids.append(o.objectID)
            records.append(r)
        }
        return (models, ids, records)
    }

    static func committed<M: PersistentModel>(
        _ type: M.Type, _ refs: [ModelRef<M>], _ coordinator: StoreCoordinator
    ) throws -> [M] {
        let layout = try ModelLayout(M.self, in: coordinator.schema)
        var out: [M] = []
        for ref in refs {
            guard let id = ref.objectID, let store = coordinator.store(withIdentifier: id.storeUUID) else { continue }
            for r in try store.store.records(withKeys: [id.primaryKey], root: layout.entity.rootName)
            where layout.entity.hierarchyNames.contains(r.entity) {
                out.append(try M(from: ModelRow(record: r, layout: layout, storeUUID: store.identifier)))
            }
        }
        return out
    }
}
