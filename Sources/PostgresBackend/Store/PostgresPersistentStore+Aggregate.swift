import Foundation
@_spi(BackendKit) import StoreAPI

/// Aggregates as one `SELECT … GROUP BY … ORDER BY` over the hierarchy's table, with ``AggregateEvaluator``'s exact
/// semantics: integer sums are exact (`numeric`) and refused past 64 bits; minimums and maximums skip NaN (which
/// PostgreSQL orders above every number); strings (UTF-8 `bytea`) take their minimum and maximum bytewise, which is
/// Unicode scalar order; an empty sum is zero. Decimals and predicates the translator refuses are computed by the
/// evaluator over the fetched records, in the same read transaction.
extension PostgresPersistentStore: AggregatingStore {
    func aggregate(_ request: AggregateRequest) throws -> [AggregateRow] {
        try withReadConnection { c in
            try c.transaction(readOnly: true) { try aggregateLocked(request, c) }
        }
    }

    /// How one function's value is read back from its column.
    private enum Reading {
        case count
        /// `sum` of integers as `numeric`: NULL (no values) is zero; past 64 bits an error.
        case integerSum(String)
        /// A floating `sum`: NULL (no values) is zero.
        case floatingSum
        /// An average as `double precision`; NULL when there are no values.
        case average
        /// A minimum or maximum read as the attribute's type.
        case value(AttributeType)
    }

    private func aggregateLocked(_ request: AggregateRequest, _ c: PostgresConnection) throws -> [AggregateRow] {
        let entity = try schema.requireEntity(request.entity)
        let reader = reader(c)
        let aggregator = AggregateEvaluator(evaluator(reader))
        let types = try aggregator.validate(request)
        let fetch = request.fetchRequest
        func inMemory() throws -> [AggregateRow] {
            try aggregator.aggregate(request, records: try fetchLocked(fetch, c).map(\.0))
        }
        let (table, filter, parameters) = try candidates(entity, request.includesSubentities)
        var q = PostgresQueryTranslator(layout: layout, parameters: parameters)
        guard let fragment = request.predicate.map({ q.translateWithinLimits($0, entity: entity) })
                ?? PostgresQueryTranslator.Fragment.alwaysTrue else { return try inMemory() }

        var select: [String] = []
        var grouped: [String] = []
        var groupTypes: [AttributeType] = []
        for key in request.groupBy {
            let path = key.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
            guard let operand = q.resolve(path, entity: entity, alias: "t"), operand.kind != .decimal else {
                return try inMemory()
            }
            let type = AggregateEvaluator.valueType(at: path, from: entity, schema: schema) ?? .integer64
            // Booleans resolve to the integers 0 and 1 (as predicates compare them); read them back as booleans.
            select.append(type == .boolean ? "((\(operand.sql)) = 1)" : operand.sql)
            grouped.append(operand.sql)
            groupTypes.append(type)
        }
        let groupCount = select.count
        guard let order = q.orderBy(request.groupBy.map { SortKey($0) }, entity: entity) else { return try inMemory() }

        var readings: [Reading] = []
        for (f, type) in zip(request.aggregates, types) {
            guard let name = f.attribute, let type else {
                select.append("count(*)")
                readings.append(.count)
                continue
            }
            guard type != .decimal, let x = q.resolve([name], entity: entity, alias: "t") else { return try inMemory() }
            let floating = x.kind == .real || x.kind == .date
            switch f {
            case .count:
                select.append("count(*)")
                readings.append(.count)
            case .sum:
                if floating {
                    select.append("sum((\(x.sql))::float8)")
                    readings.append(.floatingSum)
                } else {
                    select.append("sum((\(x.sql))::bigint)::numeric")
                    readings.append(.integerSum(name))
                }
            case .average:
                // An integer mean is the exact sum rounded once to a double, then divided, as the evaluator does.
                select.append(floating ? "avg((\(x.sql))::float8)" : "(sum((\(x.sql))::bigint)::float8 / count(\(x.sql)))")
                readings.append(.average)
            case .min, .max:
                let function = f == .min(name) ? "min" : "max"
                let direction = function == "min" ? "ASC" : "DESC"
                let expression: String
                if floating {
                    expression = "\(function)(\(x.sql)) FILTER (WHERE \(x.sql) <> 'NaN'::float8)"
                } else if x.kind == .string {
                    expression = "(array_agg(\(x.sql) ORDER BY \(x.sql) \(direction)) FILTER (WHERE \(x.sql) IS NOT NULL))[1]"
                } else if type == .boolean {
                    expression = "(\(function)(\(x.sql)) = 1)"
                } else {
                    expression = "\(function)(\(x.sql))"
                }
                select.append(expression)
                readings.append(.value(type))
            }
        }
        // Without groups, an aggregate makes the one row even when nothing is computed (distinct of nothing).
        var sql = "SELECT \(select.isEmpty ? "count(*)" : select.joined(separator: ", ")) FROM \(PostgresLayout.quote(table.name)) AS t "
            + "\(q.joins.joined(separator: " ")) \(Self.whereClause(filter, fragment))"
        if groupCount > 0 {
            sql += " GROUP BY \(grouped.joined(separator: ", ")) ORDER BY \(order.joined(separator: ", "))"
        }
        let result = try c.execute(sql, q.parameters)
        var rows: [AggregateRow] = []
        for row in 0..<result.count {
            var group: [StoreValue] = []
            for (i, type) in groupTypes.enumerated() {
                group.append(try PostgresValueCodec.read(
                    result, row, i, type: type, url: location.url, entity: entity.name, property: request.groupBy[i]))
            }
            var values: [StoreValue] = []
            for (j, reading) in readings.enumerated() {
                let col = groupCount + j
                switch reading {
                case .count:
                    values.append(.integer64(result.int64(row, col) ?? 0))
                case .integerSum(let name):
                    guard let text = result.text(row, col) else {
                        values.append(.integer64(0))
                        continue
                    }
                    guard let v = Int64(text) else { throw AggregateEvaluator.overflow(entity.name, name) }
                    values.append(.integer64(v))
                case .floatingSum:
                    values.append(result.isNull(row, col) ? .double(0) : try PostgresValueCodec.read(
                        result, row, col, type: .double, url: location.url, entity: entity.name, property: "sum"))
                case .average:
                    values.append(try PostgresValueCodec.read(
                        result, row, col, type: .double, url: location.url, entity: entity.name, property: "average"))
                case .value(let type):
                    values.append(try PostgresValueCodec.read(
                        result, row, col, type: type, url: location.url, entity: entity.name,
                        property: request.aggregates[j].attribute ?? ""))
                }
            }
            rows.append(AggregateRow(group: group, values: values))
        }
        return rows
    }
}
