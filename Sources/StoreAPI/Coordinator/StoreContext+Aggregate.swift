import Foundation

extension StoreContext {
    /// The rows of an aggregate request (see ``AggregateRequest`` for what they hold), over every loaded store that
    /// holds the entity and this context's unsaved changes.
    ///
    /// Without unsaved changes to the entity and with one store, the store computes them (in SQL on SQLite and
    /// PostgreSQL); otherwise they are computed in memory over the objects ``fetch(_:)`` returns.
    public func aggregate(_ request: AggregateRequest) throws -> [AggregateRow] {
        mergeChanges()
        let entity = try schema.requireEntity(request.entity)
        let evaluator = contextEvaluator()
        let aggregator = AggregateEvaluator(evaluator)
        try aggregator.validate(request)
        let kinds = request.includesSubentities ? Set(entity.hierarchyNames) : [entity.name]
        let stores = coordinator.stores(for: request.entity)
        let hasPending = changes.contains { kinds.contains($0.entity.name) }
        if !hasPending, stores.count == 1 {
            return try stores[0].store.aggregateRows(request)
        }
        let records = try fetch(request.fetchRequest).map(\.record)
        return try aggregator.aggregate(request, records: records)
    }

    /// The distinct values of one key path among the records matching a predicate string, in ascending order:
    /// `try context.distinctValues("Book", of: "genre", where: "pages > %@", 300)`.
    public func distinctValues(
        _ entity: String, of keyPath: String, where format: String? = nil, _ arguments: StoreValue...
    ) throws -> [StoreValue] {
        let predicate = try format.map { try FetchPredicate($0, arguments: arguments) }
        return try aggregate(.distinct(entity, [keyPath], predicate: predicate)).map { $0.group.first ?? .null }
    }

    /// One function over the records matching a predicate string, for quick use:
    /// `try context.aggregate(.sum("pages"), of: "Book", where: "author.name == %@", "Le Guin")`.
    public func aggregate(
        _ function: AggregateFunction, of entity: String, where format: String? = nil, _ arguments: StoreValue...
    ) throws -> StoreValue {
        let predicate = try format.map { try FetchPredicate($0, arguments: arguments) }
        let rows = try aggregate(AggregateRequest(entity: entity, predicate: predicate, aggregates: [function]))
        return rows.first?.values.first ?? .null
    }
}

extension StoreCoordinator {
    /// The rows of an aggregate request over what the loaded stores hold (see ``StoreContext/aggregate(_:)``).
    public func aggregate(_ request: AggregateRequest) throws -> [AggregateRow] {
        try newContext().aggregate(request)
    }
}
