/// A store that computes aggregates in its engine: the capability behind ``StoreContext/aggregate(_:)``.
///
/// SQLite and PostgreSQL answer with one `GROUP BY` query. A store that does not adopt this protocol is
/// aggregated in memory by ``AggregateEvaluator`` over the records its ``PersistentStore/fetch(_:)`` returns, which
/// gives the same rows, only slower. An adopter must return exactly what ``AggregateEvaluator`` returns for its
/// records (the types, the order, nil, NaN and empty sets as ``AggregateRequest`` defines them), and may use it
/// for what its engine cannot compute exactly.
public protocol AggregatingStore: PersistentStore {
    /// The request's rows over the stored records (see ``AggregateRequest``).
    func aggregate(_ request: AggregateRequest) throws -> [AggregateRow]
}

extension PersistentStore {
    /// The request's rows: computed by the engine when the store is an ``AggregatingStore``, else in memory over
    /// the records a fetch returns.
    public func aggregateRows(_ request: AggregateRequest) throws -> [AggregateRow] {
        if let engine = self as? any AggregatingStore { return try engine.aggregate(request) }
        let schema = metadata.schema
        let store = self
        let evaluator = PredicateEvaluator(schema: schema) { root, keys in try store.records(withKeys: keys, root: root) }
        let aggregator = AggregateEvaluator(evaluator)
        try aggregator.validate(request)
        return try aggregator.aggregate(request, records: try fetch(request.fetchRequest))
    }
}
