import Foundation

/// Computes an ``AggregateRequest`` over records in memory: the reference every backend's own aggregation must
/// match, and what runs for stores that do not adopt ``AggregatingStore`` (or requests they cannot translate).
@_spi(BackendKit) public struct AggregateEvaluator: Sendable {
    /// Reads key paths (and follows to-one relationships for grouping).
    public let evaluator: PredicateEvaluator

    /// Creates an aggregate evaluator on a predicate evaluator's schema and relationship resolver.
    public init(_ evaluator: PredicateEvaluator) {
        self.evaluator = evaluator
    }

    /// Checks a request against the schema without looking at records: the entity, the predicate and the group
    /// key paths as a fetch would check them, and each function's attribute and its type.
    ///
    /// - Returns: the type of the attribute each function reads (`nil` for ``AggregateFunction/count``).
    @discardableResult
    public func validate(_ request: AggregateRequest) throws -> [AttributeType?] {
        try Self.validate(request, evaluator: evaluator)
    }

    /// ``validate(_:)`` with any evaluator on the store's schema.
    @discardableResult
    public static func validate(_ request: AggregateRequest, evaluator: PredicateEvaluator) throws -> [AttributeType?] {
        var asFetch = request.fetchRequest
        asFetch.sortDescriptors = request.groupBy.map { SortKey($0) }
        try evaluator.validate(asFetch)
        let entity = try evaluator.schema.requireEntity(request.entity)
        return try request.aggregates.map { f in
            guard let name = f.attribute else { return nil }
            guard let i = entity.attributeIndex(name) else {
                throw StoreError.unknownProperty(entity: entity.name, property: name)
            }
            let type = entity.attributes[i].type
            let numeric: Set<AttributeType> = [.integer16, .integer32, .integer64, .boolean, .double, .float, .decimal]
            let allowed: Bool
            switch f {
            case .count: allowed = true
            case .sum, .average: allowed = numeric.contains(type)
            case .min, .max: allowed = numeric.contains(type) || type == .date || type == .string
            }
            guard allowed else {
                throw StoreError.invalidArgument(
                    "\(f) of \(entity.name).\(name): a \(type.rawValue) attribute cannot be aggregated that way")
            }
            return type
        }
    }

    /// The type of the values a group key path reads: the attribute's type where it ends at an attribute, `nil`
    /// where it reads a key or a count (an ``StoreValue/integer64(_:)``). The path must be valid (see
    /// ``validate(_:)``).
    public static func valueType(at path: [String], from entity: Entity, schema: Schema) -> AttributeType? {
        var current = entity
        for (i, name) in path.enumerated() {
            if let a = current.attributeIndex(name) { return i == path.count - 1 ? current.attributes[a].type : nil }
            guard let r = current.relationshipIndex(name), let next = schema.entity(named: current.relationships[r].destination)
            else { return nil }
            current = next
        }
        return nil
    }

    /// The request's rows over `records`, which must be exactly the records that match its entity and predicate.
    public func aggregate(_ request: AggregateRequest, records: [Record]) throws -> [AggregateRow] {
        let types = try validate(request)
        let paths = request.groupBy.map { PredicateEvaluator.components($0) }
        let positions = try request.aggregates.map { f -> Int? in
            guard let name = f.attribute else { return nil }
            return try evaluator.schema.requireEntity(request.entity).attributeIndex(name)
        }
        func compute(_ members: ArraySlice<(keys: [StoreValue], record: Record)>) throws -> [StoreValue] {
            try request.aggregates.indices.map { i in
                let f = request.aggregates[i]
                guard let type = types[i], let position = positions[i] else { return .integer64(Int64(members.count)) }
                var values: [StoreValue] = []
                values.reserveCapacity(members.count)
                for m in members where position < m.record.attributes.count {
                    // Sub-entities extend their parent's attributes, so the parent's positions hold for them.
                    let v = m.record.attributes[position]
                    if !v.isNull { values.append(v) }
                }
                return try Self.compute(f, type: type, values, entity: request.entity)
            }
        }
        if paths.isEmpty {
            return [AggregateRow(group: [], values: try compute(records.map { ([], $0) }[...]))]
        }
        var keyed: [(keys: [StoreValue], record: Record)] = []
        keyed.reserveCapacity(records.count)
        for r in records { keyed.append((try paths.map { try evaluator.value(at: $0, of: r) }, r)) }
        keyed.sort { a, b in
            for i in a.keys.indices {
                let o = PredicateEvaluator.sortOrder(a.keys[i], b.keys[i])
                if o != 0 { return o < 0 }
            }
            return a.record.primaryKey < b.record.primaryKey
        }
        var rows: [AggregateRow] = []
        var start = 0
        while start < keyed.count {
            var end = start + 1
            while end < keyed.count,
                zip(keyed[start].keys, keyed[end].keys).allSatisfy({ PredicateEvaluator.sortOrder($0, $1) == 0 })
            {
                end += 1
            }
            rows.append(AggregateRow(group: keyed[start].keys, values: try compute(keyed[start..<end])))
            start = end
        }
        return rows
    }

    /// One function over the non-nil values of one group.
    static func compute(_ f: AggregateFunction, type: AttributeType, _ values: [StoreValue], entity: String) throws
        -> StoreValue
    {
        switch f {
        case .count:
            return .integer64(Int64(values.count))
        case .sum(let name):
            switch type {
            case .decimal:
                return .decimal(Self.decimalSum(values))
            case .double, .float:
                return .double(Self.canonical(Self.floatingSum(values)))
            default:
                var total: Int64 = 0
                for v in values {
                    let (next, overflow) = total.addingReportingOverflow(v.int64Value ?? 0)
                    if overflow { throw Self.overflow(entity, name) }
                    total = next
                }
                return .integer64(total)
            }
        case .average:
            guard !values.isEmpty else { return .null }
            switch type {
            case .decimal:
                return .decimal(Self.decimalSum(values) / Decimal(values.count))
            case .double, .float:
                return .double(Self.canonical(Self.floatingSum(values) / Double(values.count)))
            default:
                var total: Int64 = 0
                for v in values {
                    let (next, overflow) = total.addingReportingOverflow(v.int64Value ?? 0)
                    // Past 64 bits the mean is still defined: add in floating point instead, as SQL engines do.
                    if overflow { return .double(Self.floatingSum(values) / Double(values.count)) }
                    total = next
                }
                return .double(Double(total) / Double(values.count))
            }
        case .min, .max:
            let wantsLess: Bool
            if case .min = f { wantsLess = true } else { wantsLess = false }
            var best: StoreValue?
            for v in values {
                guard let b = best else {
                    if PredicateEvaluator.order(v, v) != nil { best = v }  // NaN is ordered with nothing: skipped
                    continue
                }
                guard let o = PredicateEvaluator.order(v, b) else { continue }
                if wantsLess ? o < 0 : o > 0 { best = v }
            }
            return best ?? .null
        }
    }

    /// A compensated (Kahan–Babuška–Neumaier) sum, so that a sum of many values carries one rounding rather than
    /// one per value; an infinite or NaN compensation (from adding an infinity) is dropped, so infinities sum as
    /// plain addition sums them.
    static func floatingSum(_ values: [StoreValue]) -> Double {
        var sum = 0.0
        var compensation = 0.0
        for v in values {
            let x: Double
            switch v {
            case .float(let f): x = Double(f)
            case .double(let d): x = d
            default: x = v.doubleValue ?? 0
            }
            let t = sum + x
            if abs(sum) >= abs(x) {
                compensation += (sum - t) + x
            } else {
                compensation += (x - t) + sum
            }
            sum = t
        }
        return compensation.isFinite ? sum + compensation : sum
    }

    /// One NaN for every NaN (∞ − ∞ makes one with another sign bit), so that equal results are equal values.
    static func canonical(_ x: Double) -> Double { x.isNaN ? .nan : x }

    /// The exact sum of decimal values.
    static func decimalSum(_ values: [StoreValue]) -> Decimal {
        var total = Decimal(0)
        for v in values {
            if case .decimal(let d) = v { total += d }
        }
        return total
    }

    /// The error for a sum of integers beyond 64 bits.
    public static func overflow(_ entity: String, _ attribute: String) -> StoreError {
        .invalidArgument("the sum of \(entity).\(attribute) does not fit a 64-bit integer")
    }
}
