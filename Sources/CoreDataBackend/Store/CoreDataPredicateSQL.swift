import Foundation
@_spi(BackendKit) import StoreAPI

/// Translates the parts of a predicate it can into SQL over a Core Data table, so that a fetch reads only the rows
/// that may match instead of the whole table.
///
/// The SQL is a *necessary* condition: every record the predicate matches passes it. When the translation is also
/// ``Fragment/isExact`` (every row it passes matches) the store may count, limit and offset in SQL; otherwise it
/// evaluates the whole predicate with ``PredicateEvaluator`` over the rows the SQL selects, so results are the
/// evaluator's either way. Comparisons never yield SQL's NULL (a `nil` value is tested explicitly), so `AND`, `OR`
/// and `NOT` keep the evaluator's two-valued logic.
///
/// Translated, exactly: integer and boolean attributes, to-one keys and `self` against integer constants (`==`,
/// `!=`, `<`, `<=`, `>`, `>=`, `IN`, `BETWEEN`); double, float and date attributes against double or date constants
/// (Core Data stores dates as seconds since 2001); `== nil` and `!= nil` on any attribute or to-one. As a
/// necessary condition only: string attributes against string constants without `[c]`/`[d]` (`==`, `<`, …,
/// `BEGINSWITH`), since a store may hold a string column's value as a BLOB or a number, which SQL's comparison
/// does not see as the string the reader makes of it. Everything else (key paths through relationships,
/// `ANY`/`ALL`, `@count`, decimals, UUIDs, URIs, binary data, `LIKE`, `MATCHES`) passes every row to the
/// evaluator.
struct CoreDataPredicateSQL {
    let plan: CoreDataReadPlan.EntityPlan

    /// A translated condition and its parameters, in textual order.
    struct Fragment {
        var sql: String
        var bindings: [SQLiteValue]
        /// Whether exactly the matching rows pass (otherwise a superset does).
        var isExact: Bool

        static let everything = Fragment(sql: "1", bindings: [], isExact: false)
        static let alwaysTrue = Fragment(sql: "1", bindings: [], isExact: true)
        static let alwaysFalse = Fragment(sql: "0", bindings: [], isExact: true)
    }

    /// Limits under SQLite's own (expression depth, parameters): beyond them every row goes to the evaluator.
    static let maximumParameters = 20_000
    static let maximumTerms = 400

    func translate(_ predicate: FetchPredicate?) -> Fragment {
        guard let predicate else { return .alwaysTrue }
        var terms = 0
        let f = translate(predicate, terms: &terms)
        guard f.bindings.count <= Self.maximumParameters, terms <= Self.maximumTerms else { return .everything }
        return f
    }

    private func translate(_ p: FetchPredicate, terms: inout Int) -> Fragment {
        terms += 1
        switch p {
        case .true: return .alwaysTrue
        case .false: return .alwaysFalse
        case .not(let q):
            let f = translate(q, terms: &terms)
            // The complement of a superset is not a superset of the complement.
            guard f.isExact else { return .everything }
            return Fragment(sql: "NOT (\(f.sql))", bindings: f.bindings, isExact: true)
        case .and(let ps):
            var parts: [Fragment] = []
            var exact = true
            for q in ps {
                let f = translate(q, terms: &terms)
                exact = exact && f.isExact
                if f.sql != "1" { parts.append(f) }
            }
            guard !parts.isEmpty else { return Fragment(sql: "1", bindings: [], isExact: exact) }
            return Fragment(sql: parts.map { "(\($0.sql))" }.joined(separator: " AND "),
                            bindings: parts.flatMap(\.bindings), isExact: exact)
        case .or(let ps):
            guard !ps.isEmpty else { return .alwaysFalse }
            var parts: [Fragment] = []
            for q in ps {
                let f = translate(q, terms: &terms)
                if f.sql == "1" { return Fragment(sql: "1", bindings: [], isExact: f.isExact) }
                parts.append(f)
            }
            return Fragment(sql: parts.map { "(\($0.sql))" }.joined(separator: " OR "),
                            bindings: parts.flatMap(\.bindings), isExact: parts.allSatisfy(\.isExact))
        case .comparison(.keyPath(let path), let op, let rhs, let options):
            return comparison(path, op, rhs, options) ?? .everything
        case .comparison:
            return .everything
        }
    }

    /// How a column's stored values compare.
    private enum Kind { case integer, real, string }

    /// The column a one-component key path reads, and how it compares.
    private func column(_ path: [String]) -> (sql: String, kind: Kind?, isDate: Bool)? {
        guard path.count == 1, let name = path.first else { return nil }
        let e = plan.entity
        if let i = e.attributeIndex(name), i < plan.attributeColumns.count, let c = plan.attributeColumns[i] {
            let kind: Kind?
            switch e.attributes[i].type {
            case .integer16, .integer32, .integer64, .boolean: kind = .integer
            case .double, .float, .date: kind = .real
            case .string: kind = .string
            default: kind = nil
            }
            return (CoreDataSQL.quoted(c.name), kind, e.attributes[i].type == .date)
        }
        if let i = e.relationshipIndex(name), i < plan.toOneColumns.count, let c = plan.toOneColumns[i] {
            return (CoreDataSQL.quoted(c), .integer, false)
        }
        if name == "self", e.attributeIndex(name) == nil, e.relationshipIndex(name) == nil { return ("Z_PK", .integer, false) }
        return nil
    }

    /// A constant as the column stores it, or `nil` when the comparison is not translated.
    private func bound(_ v: StoreValue, _ kind: Kind, isDate: Bool) -> SQLiteValue? {
        switch (kind, v) {
        case (.integer, .integer16), (.integer, .integer32), (.integer, .integer64), (.integer, .boolean):
            return v.int64Value.map { .integer($0) }
        case (.real, .double(let d)) where !isDate && !d.isNaN: return .real(d)
        case (.real, .float(let f)) where !isDate && !f.isNaN: return .real(Double(f))
        case (.real, .date(let d)) where isDate && !d.timeIntervalSinceReferenceDate.isNaN:
            return .real(d.timeIntervalSinceReferenceDate)
        case (.string, .string(let s)): return .text(s)
        default: return nil
        }
    }

    private func comparison(
        _ path: [String], _ op: ComparisonOperator, _ rhs: FetchExpression, _ options: ComparisonOptions
    ) -> Fragment? {
        guard let (c, kind, isDate) = column(path) else { return nil }
        if case .constant(.null) = rhs {
            switch op {
            case .equal: return Fragment(sql: "\(c) IS NULL", bindings: [], isExact: true)
            case .notEqual: return Fragment(sql: "\(c) IS NOT NULL", bindings: [], isExact: true)
            case .less, .lessOrEqual, .greater, .greaterOrEqual, .beginsWith, .endsWith, .contains, .like:
                return .alwaysFalse
            default: return nil
            }
        }
        guard let kind else { return nil }
        // A string column may hold a value of another SQL type; such rows always pass, to be evaluated.
        let loose = kind == .string ? "typeof(\(c)) <> 'text' OR " : ""
        let exact = kind != .string
        if kind == .string, !options.isEmpty { return nil }
        switch op {
        case .equal, .less, .lessOrEqual, .greater, .greaterOrEqual:
            guard case .constant(let v) = rhs, let b = bound(v, kind, isDate: isDate) else { return nil }
            let sqlOp = op == .equal ? "=" : op.rawValue
            return Fragment(sql: "\(c) IS NOT NULL AND (\(loose)\(c) \(sqlOp) ?)", bindings: [b], isExact: exact)
        case .notEqual:
            guard case .constant(let v) = rhs, let b = bound(v, kind, isDate: isDate) else { return nil }
            return Fragment(sql: "\(c) IS NULL OR \(loose)\(c) <> ?", bindings: [b], isExact: exact)
        case .in:
            guard case .list(let vs) = rhs, kind != .string else { return nil }
            if vs.isEmpty { return .alwaysFalse }
            var bindings: [SQLiteValue] = []
            for v in vs {
                guard let b = bound(v, kind, isDate: isDate) else { return nil }
                bindings.append(b)
            }
            return Fragment(sql: "\(c) IS NOT NULL AND \(c) IN (\(CoreDataSQL.placeholders(bindings.count)))",
                            bindings: bindings, isExact: true)
        case .between:
            guard case .list(let vs) = rhs, vs.count == 2, kind != .string,
                let lo = bound(vs[0], kind, isDate: isDate), let hi = bound(vs[1], kind, isDate: isDate)
            else { return nil }
            return Fragment(sql: "\(c) IS NOT NULL AND \(c) >= ? AND \(c) <= ?", bindings: [lo, hi], isExact: true)
        case .beginsWith:
            guard kind == .string, case .constant(.string(let s)) = rhs else { return nil }
            // Byte-wise over UTF-8, as the evaluator compares scalars; `substr` on a blob counts bytes.
            let n = s.utf8.count
            return Fragment(sql: "\(c) IS NOT NULL AND (\(loose)substr(CAST(\(c) AS BLOB), 1, \(n)) = CAST(? AS BLOB))",
                            bindings: [.text(s)], isExact: false)
        default:
            return nil
        }
    }
}
