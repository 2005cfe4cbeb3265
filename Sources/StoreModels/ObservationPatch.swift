import Foundation
@_spi(BackendKit) import StoreAPI

/// One emission's results: the records in the fetch's order, their IDs and the models decoded from them.
struct ObservedResults<M: PersistentModel>: Sendable {
    var ids: [ObjectID]
    var records: [Record]
    var models: [M]
}

/// Brings an observation's results up to date after a save of this process without fetching them again: only the
/// records the save names are read back (by key), tested against the predicate in memory with the reference
/// evaluator (whose semantics every store's translation matches), and put in place by the sort — what
/// `NSFetchedResultsController` does with a context's did-save notification. A fetch whose table is large and
/// whose results are few would otherwise scan the table after every write.
///
/// It applies only where a record's membership and place depend on nothing but the record itself: a predicate and
/// sort keys over the entity's own attributes (no relationship paths, `ANY`, `ALL`), no offset or limit, one store
/// holding the entity, and a save that names every record it changed and touches no related entity the results
/// show. Anything else — other processes' saves, store operations, large saves — is fetched again in full.
struct ObservationPatch<M: PersistentModel>: Sendable {
    let request: FetchRequest
    let layout: ModelLayout
    /// The entities whose records the results hold (the entity, and its sub-entities when the request includes them).
    let members: Set<String>
    /// Every entity sharing the entity's key space: a save naming one of them may touch the results' records.
    let hierarchy: Set<String>
    /// The entities the observation watches that are not in ``hierarchy`` (relationship destinations): a save
    /// touching one is fetched again in full.
    let related: Set<String>
    let evaluator: PredicateEvaluator

    /// Saves naming more records than this are fetched again in full: a bulk change is read by one query rather
    /// than record by record.
    static var largestPatch: Int { 512 }

    /// The patch for `request`, or `nil` when its results cannot be patched (see the type's documentation).
    init?(request: FetchRequest, watched: Set<String>, schema: Schema) {
        guard request.offset == 0, request.limit == nil, let entity = schema.entity(named: request.entity),
              let layout = try? ModelLayout(M.self, in: schema)
        else { return nil }
        let evaluator = PredicateEvaluator(schema: schema) { _, _ in
            // Never called: a patchable predicate follows no relationship.
            throw StoreError.invalidArgument("an observation's predicate followed a relationship")
        }
        guard (try? evaluator.validate(request)) != nil else { return nil }
        func isOwnAttribute(_ path: [String]) -> Bool {
            path.count == 1 && (path[0] == "self" || entity.attributeIndex(path[0]) != nil)
        }
        func isLocal(_ e: FetchExpression) -> Bool {
            switch e {
            case .keyPath(let path): isOwnAttribute(path)
            case .constant, .list: true
            case .any, .all: false
            }
        }
        func isLocal(_ p: FetchPredicate) -> Bool {
            switch p {
            case .true, .false: true
            case .and(let ps), .or(let ps): ps.allSatisfy(isLocal)
            case .not(let q): isLocal(q)
            case .comparison(let lhs, _, let rhs, _): isLocal(lhs) && isLocal(rhs)
            }
        }
        guard request.predicate.map(isLocal) ?? true,
              request.sortDescriptors.allSatisfy({ isOwnAttribute([$0.keyPath]) })
        else { return nil }
        let hierarchy = Set(schema.entities.filter { $0.rootName == entity.rootName }.map(\.name))
        self.request = request
        self.layout = layout
        self.members = request.includesSubentities ? Set(entity.hierarchyNames) : [entity.name]
        self.hierarchy = hierarchy
        self.related = watched.subtracting(hierarchy)
        self.evaluator = evaluator
    }

    /// `previous` with the records `change` names read back and put in place, or `nil` when the change cannot be
    /// applied this way (the caller then fetches again in full).
    func apply(
        _ change: SavedChanges, to previous: ObservedResults<M>, coordinator: StoreCoordinator
    ) throws -> ObservedResults<M>? {
        guard change.isComplete, change.entities.isDisjoint(with: related) else { return nil }
        let stores = coordinator.stores(for: request.entity)
        guard stores.count == 1, let store = stores.first, store.identifier == change.store else { return nil }
        var touched = Set<Int64>()
        for list in [change.inserted, change.updated, change.deleted] {
            for id in list where hierarchy.contains(id.entity) { touched.insert(id.primaryKey) }
        }
        guard !touched.isEmpty else { return previous }
        guard touched.count <= Self.largestPatch else { return nil }

        let current = try store.store.records(withKeys: touched.sorted(), root: layout.entity.rootName)
        var added: [Record] = []
        if let predicate = request.predicate {
            let test = try evaluator.prepare(predicate, entity: request.entity)
            for r in current where members.contains(r.entity) {
                if try test.matches(r) { added.append(r) }
            }
        } else {
            added = current.filter { members.contains($0.entity) }
        }

        // What stays keeps its model; only the records read back are decoded.
        var models: [Int64: M] = [:]
        var records: [Record] = []
        records.reserveCapacity(previous.records.count + added.count)
        for (r, m) in zip(previous.records, previous.models) where !touched.contains(r.primaryKey) {
            records.append(r)
            models[r.primaryKey] = m
        }
        let removedOnly = added.isEmpty
        for r in added {
            records.append(r)
            models[r.primaryKey] = try M(from: ModelRow(record: r, layout: layout, storeUUID: store.identifier))
        }
        // The untouched records are still in order: sorting is needed only for the ones read back.
        if !removedOnly { try evaluator.sort(&records, by: request.sortDescriptors) }
        var result = ObservedResults<M>(ids: [], records: records, models: [])
        result.ids.reserveCapacity(records.count)
        result.models.reserveCapacity(records.count)
        for r in records {
            guard let m = models[r.primaryKey] else { return nil }
            result.ids.append(ObjectID(storeUUID: store.identifier, entity: r.entity, primaryKey: r.primaryKey))
            result.models.append(m)
        }
        return result
    }
}
