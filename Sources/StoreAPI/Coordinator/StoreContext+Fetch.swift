import Foundation

extension StoreContext {
    /// The objects matching a request, across every loaded store that holds the entity, including this context's
    /// unsaved inserts, changes and deletes.
    public func fetch(_ request: FetchRequest) throws -> [ManagedObject] {
        mergeChanges()
        let entity = try schema.requireEntity(request.entity)
        let kinds = request.includesSubentities ? Set(entity.hierarchyNames) : [entity.name]
        let stores = coordinator.stores(for: request.entity)
        let storeIDs = Set(stores.map(\.identifier))
        let pending = changes.objects
            .filter { kinds.contains($0.entity.name) && storeIDs.contains($0.loadedStore.identifier) }

        // Fast path: the store answers the whole request.
        if pending.isEmpty, stores.count == 1 {
            return try stores[0].store.fetch(request).map { try register($0, from: stores[0]) }
        }

        var base = request
        base.offset = 0
        base.limit = nil
        var results: [ManagedObject] = []
        var included: Set<ObjectKey> = []
        for store in stores {
            for r in try store.store.fetch(base) {
                let o = try register(r, from: store)
                // Changed objects are judged below on their current values, not on the stored ones.
                if o.state == .clean, included.insert(o.key).inserted { results.append(o) }
            }
        }
        // One evaluator per fetch: building it snapshots every changed object.
        let evaluator = contextEvaluator()
        if !pending.isEmpty {
            for o in pending where o.state == .inserted || o.state == .updated {
                if try request.predicate.map({ try evaluator.evaluate($0, on: o.record) }) ?? true,
                   included.insert(o.key).inserted
                {
                    results.append(o)
                }
            }
        }
        var records = results.map(\.record)
        let byKey = Dictionary(results.map { ($0.record.primaryKey, $0) }, uniquingKeysWith: { a, _ in a })
        try evaluator.sort(&records, by: request.sortDescriptors)
        let sliced = PredicateEvaluator.slice(records, offset: request.offset, limit: request.limit)
        // Primary keys are unique per hierarchy and a fetch covers one hierarchy; across stores, keys may repeat,
        // so fall back to identity when they do.
        if byKey.count == results.count {
            return sliced.compactMap { byKey[$0.primaryKey] }
        }
        return results.filter { o in sliced.contains { $0 == o.record } }
    }

    /// Fetches with a predicate string, for quick use:
    /// `try context.fetch("Book", where: "pages > %@ AND author.name BEGINSWITH[c] %@", 300, "le")`.
    public func fetch(
        _ entity: String, where format: String? = nil, _ arguments: StoreValue..., sortedBy sort: [SortKey] = [],
        limit: Int? = nil
    ) throws -> [ManagedObject] {
        let predicate = try format.map { try FetchPredicate($0, arguments: arguments) }
        return try fetch(FetchRequest(entity: entity, predicate: predicate, sortDescriptors: sort, limit: limit))
    }

    /// The number of objects a request would return.
    public func count(_ request: FetchRequest) throws -> Int {
        let entity = try schema.requireEntity(request.entity)
        let kinds = request.includesSubentities ? Set(entity.hierarchyNames) : [entity.name]
        let stores = coordinator.stores(for: request.entity)
        let hasPending = changes.contains { kinds.contains($0.entity.name) }
        if !hasPending {
            return try stores.reduce(0) { $0 + (try $1.store.count(request)) }
        }
        return try fetch(request).count
    }

    /// An evaluator that sees this context's unsaved values when it follows relationships.
    func contextEvaluator() -> PredicateEvaluator {
        // Snapshot current records of changed objects so the evaluator (which must be Sendable) sees them.
        var overlay: [String: [Int64: Record]] = [:]
        for o in changes.objects {
            overlay[o.entity.rootName, default: [:]][o.record.primaryKey] = o.record
        }
        let stores = coordinator.stores
        let snapshot = overlay
        return PredicateEvaluator(schema: schema) { root, keys in
            var found: [Record] = []
            var missing: [Int64] = []
            for k in keys {
                if let r = snapshot[root]?[k] { found.append(r) } else { missing.append(k) }
            }
            if !missing.isEmpty {
                for s in stores {
                    found += try s.store.records(withKeys: missing, root: root)
                }
            }
            return found
        }
    }
}
