import CSQLite
import Foundation
@_spi(BackendKit) import StoreAPI

/// Aggregates as one `SELECT … GROUP BY … ORDER BY` over the entity's table, with ``AggregateEvaluator``'s exact
/// semantics: a NaN (stored as a blob) is left out of `SUM`, `AVG`, `MIN` and `MAX` and counted beside them, so a
/// sum or an average over one is NaN; a floating sum SQLite reports as NULL although values were added (∞ − ∞) is
/// NaN; an empty sum is zero. What has no exact SQL twin — decimals (stored as text), a predicate the translator
/// refuses — is computed by the evaluator over the fetched records, in the same read transaction.
extension SQLitePersistentStore: AggregatingStore {
    func aggregate(_ request: AggregateRequest) throws -> [AggregateRow] {
        try read { c in try c.transaction(write: false) { try aggregateLocked(request, c) } }
    }

    /// How one function's value is read back from its columns.
    private enum Reading {
        /// `COUNT(*)`.
        case count
        /// `SUM` of integers: NULL (no values) is zero.
        case integerSum
        /// A floating `SUM` or `AVG`, then the NaN count and the count of values beside it.
        case floating(isSum: Bool)
        /// `AVG` of integers: a double, NULL when there are no values.
        case integerAverage
        /// `MIN`/`MAX` read as the attribute's type.
        case value(AttributeType)

        var columns: Int32 {
            if case .floating = self { return 3 }
            return 1
        }
    }

    private func aggregateLocked(_ request: AggregateRequest, _ c: SQLiteConnection) throws -> [AggregateRow] {
        let entity = try schema.requireEntity(request.entity)
        guard let table = layout.tables[entity.rootName] else { throw missingTable(entity.rootName) }
        let reader = reader(c)
        let aggregator = AggregateEvaluator(evaluator(reader))
        let types = try aggregator.validate(request)
        let fetch = request.fetchRequest
        func inMemory() throws -> [AggregateRow] {
            Self.logInMemory(fetch)
            return try aggregator.aggregate(request, records: try fetchLocked(fetch, c))
        }
        let (translator, translated) = translate(fetch, entity: entity)
        guard let fragment = translated else { return try inMemory() }
        var q = translator

        var select: [String] = []
        var groupValueTypes: [AttributeType?] = []
        for key in request.groupBy {
            let path = key.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
            guard let operand = q.resolve(path, entity: entity, alias: "t"), operand.kind != .decimal else {
                return try inMemory()
            }
            select.append(operand.sql)
            groupValueTypes.append(AggregateEvaluator.valueType(at: path, from: entity, schema: schema))
        }
        let groupCount = select.count
        guard let order = q.orderBy(request.groupBy.map { SortKey($0) }, entity: entity) else { return try inMemory() }

        var readings: [Reading] = []
        for (f, type) in zip(request.aggregates, types) {
            guard let name = f.attribute, let type else {
                select.append("COUNT(*)")
                readings.append(.count)
                continue
            }
            guard type != .decimal, let x = q.resolve([name], entity: entity, alias: "t") else { return try inMemory() }
            // A NaN is stored as a blob; every function leaves it out (a sum and an average count it beside).
            let number = x.kind.holdsNaN ? "(CASE WHEN typeof(\(x.sql)) = 'blob' THEN NULL ELSE \(x.sql) END)" : x.sql
            switch f {
            case .count:
                select.append("COUNT(*)")
                readings.append(.count)
            case .sum, .average:
                let function = f == .sum(name) ? "SUM" : "AVG"
                if x.kind.holdsNaN {
                    select += ["\(function)(\(number))", "COUNT(CASE WHEN typeof(\(x.sql)) = 'blob' THEN 1 END)",
                               "COUNT(\(x.sql))"]
                    readings.append(.floating(isSum: function == "SUM"))
                } else {
                    select.append("\(function)(\(number))")
                    readings.append(function == "SUM" ? .integerSum : .integerAverage)
                }
            case .min:
                select.append("MIN(\(number))")
                readings.append(.value(type))
            case .max:
                select.append("MAX(\(number))")
                readings.append(.value(type))
            }
        }
        let (whereSQL, bindings) = whereClause(entity: entity, request: fetch, table: table, fragment)
        // Without groups, an aggregate makes the one row even when nothing is computed (distinct of nothing).
        var sql = "SELECT \(select.isEmpty ? "COUNT(*)" : select.joined(separator: ", ")) FROM \(SQLiteLayout.quote(table.name)) AS t "
            + "\(q.joins.joined(separator: " ")) \(whereSQL)"
        if groupCount > 0 {
            sql += " GROUP BY \(select[0..<groupCount].joined(separator: ", ")) ORDER BY \(order.joined(separator: ", "))"
        }
        guard Self.prepares(sql, fragment, c) else { return try inMemory() }
        do {
            return try c.withStatement(sql) { s in
                try s.bind(bindings)
                var rows: [AggregateRow] = []
                while try s.step() {
                    var group: [StoreValue] = []
                    for (i, type) in groupValueTypes.enumerated() {
                        group.append(try column(s, Int32(i), type: type ?? .integer64, entity: entity.name, property: request.groupBy[i]))
                    }
                    var values: [StoreValue] = []
                    var col = Int32(groupCount)
                    for (reading, f) in zip(readings, request.aggregates) {
                        values.append(try value(s, col, reading, entity: entity.name, property: f.attribute ?? "count"))
                        col += reading.columns
                    }
                    rows.append(AggregateRow(group: group, values: values))
                }
                return rows
            }
        } catch StoreError.io(_, _, let reason) where reason.contains("integer overflow") {
            // SQLite refuses an integer sum past 64 bits; name the attribute as the evaluator does.
            let name = zip(readings, request.aggregates).first { if case .integerSum = $0.0 { true } else { false } }?.1.attribute
            throw AggregateEvaluator.overflow(entity.name, name ?? "?")
        }
    }

    private func column(_ s: Statement, _ c: Int32, type: AttributeType, entity: String, property: String) throws
        -> StoreValue
    {
        try SQLiteValueCodec.read(s, column: c, type: type, url: fileURL, entity: entity, property: property)
    }

    private func value(_ s: Statement, _ c: Int32, _ reading: Reading, entity: String, property: String) throws
        -> StoreValue
    {
        switch reading {
        case .count:
            return .integer64(s.int64(c))
        case .integerSum:
            return .integer64(s.columnIsNull(c) ? 0 : s.int64(c))
        case .integerAverage:
            return s.columnIsNull(c) ? .null : .double(s.double(c))
        case .floating(let isSum):
            if s.int64(c + 1) > 0 { return .double(.nan) }
            if s.int64(c + 2) == 0 { return isSum ? .double(0) : .null }
            // SQLite reports a NaN result (∞ − ∞) as NULL.
            return .double(s.columnIsNull(c) ? .nan : s.double(c))
        case .value(let type):
            return try column(s, c, type: type, entity: entity, property: property)
        }
    }
}
