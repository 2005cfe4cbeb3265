import Foundation
@_spi(BackendKit) import StoreAPI

/// Translates predicates and sort descriptors to PostgreSQL over a hierarchy table aliased `t`, with exactly the
/// semantics of ``PredicateEvaluator``. Whatever it cannot translate *exactly* it refuses (`nil`), and the store
/// then evaluates in memory — so results are identical either way.
///
/// Every constant is a parameter (`$n` with an explicit type); every identifier is quoted. Translated: `==`, `!=`,
/// `<`, `<=`, `>`, `>=`, `IN`, `BETWEEN` against constants; `BEGINSWITH`, `ENDSWITH`, `CONTAINS` without
/// `[c]`/`[d]` (bytewise over the UTF-8 `bytea`, so NUL and case are respected); `LIKE` without `[c]`/`[d]` and
/// without `?` (`bytea LIKE`: a `*` run and literal UTF-8 match bytewise exactly as they match scalar-wise);
/// `AND`, `OR`, `NOT`; key paths through to-one relationships (`LEFT JOIN`s), a to-one's key, `self`, and
/// `rel.@count`; `ANY`/`ALL`/`NONE` over paths that start with a to-many relationship, `value IN rel.path` and
/// `rel.path CONTAINS value` (correlated `EXISTS` subqueries).
/// Refused: `MATCHES`, `[c]`/`[d]` (neither `lower()`/`upper()` nor `unaccent` fold as Foundation does, and the
/// server cannot run the evaluator's folding), `LIKE` with `?` (one scalar is one to four bytes), two key paths,
/// decimals, integers against fractional or
/// huge floating constants and floating columns against integers beyond 2^53 (PostgreSQL would round one side).
///
/// Semantics kept: SQL NULL is false everywhere (and wrapped under `NOT`); NaN, which PostgreSQL orders above every
/// number and equal to itself, is kept out of `>`/`>=` and of sort order (nil first, then NaN, then values, ties by
/// primary key), and NaN constants equal nothing.
struct PostgresQueryTranslator {
    let layout: PostgresLayout
    /// `LEFT JOIN` clauses, in order (no parameters).
    private(set) var joins: [String] = []
    private var joinAliases: [String: String] = [:]
    /// The statement's parameters so far, in `$n` order.
    private(set) var parameters: [String?]
    /// Prefixed to every alias this translator makes, so a subquery's aliases never shadow its outer query's.
    private var aliasPrefix = ""
    /// `EXISTS` subqueries made so far (each gets its own alias).
    private var subqueries = 0

    /// Parameters beyond this many are left to the evaluator (the protocol's limit is 65535).
    static let maximumParameters = 30_000
    /// Expressions nested deeper than this are left to the evaluator (the server's stack limit).
    static let maximumDepth = 500

    init(layout: PostgresLayout, parameters: [String?] = []) {
        self.layout = layout
        self.parameters = parameters
    }

    /// A placeholder for `value` cast to `type`.
    private mutating func bind(_ value: String, _ type: String) -> String {
        parameters.append(value)
        return "$\(parameters.count)::\(type)"
    }

    struct Fragment {
        var sql: String
        var mayBeNull: Bool
        var depth = 1
        static let alwaysTrue = Fragment(sql: "TRUE", mayBeNull: false)
        static let alwaysFalse = Fragment(sql: "FALSE", mayBeNull: false)
    }

    enum Kind {
        case integer, real, date, decimal, string, binary, uuid, uri

        init(_ type: AttributeType) {
            switch type {
            case .integer16, .integer32, .integer64, .boolean: self = .integer
            case .double, .float: self = .real
            case .date: self = .date
            case .decimal: self = .decimal
            case .string: self = .string
            case .binary, .transformable: self = .binary
            case .uuid: self = .uuid
            case .uri: self = .uri
            }
        }

        var holdsNaN: Bool { self == .real || self == .date }
    }

    struct Operand {
        let sql: String
        let kind: Kind
    }

    /// ``translate(_:entity:)`` within the parameter and depth limits.
    mutating func translateWithinLimits(_ predicate: FetchPredicate, entity: Entity) -> Fragment? {
        guard let f = translate(predicate, entity: entity), f.depth <= Self.maximumDepth,
              parameters.count <= Self.maximumParameters else { return nil }
        return f
    }

    mutating func translate(_ predicate: FetchPredicate, entity: Entity) -> Fragment? {
        switch predicate {
        case .true: return .alwaysTrue
        case .false: return .alwaysFalse
        case .and(let ps), .or(let ps):
            let isAnd: Bool
            if case .and = predicate { isAnd = true } else { isAnd = false }
            if ps.isEmpty { return isAnd ? .alwaysTrue : .alwaysFalse }
            var parts: [Fragment] = []
            for p in ps {
                guard let f = translate(p, entity: entity) else { return nil }
                parts.append(f)
            }
            if parts.count == 1 { return parts[0] }
            return Fragment(sql: "(" + parts.map(\.sql).joined(separator: isAnd ? " AND " : " OR ") + ")",
                            mayBeNull: parts.contains { $0.mayBeNull }, depth: (parts.map(\.depth).max() ?? 0) + 1)
        case .not(let p):
            guard let f = translate(p, entity: entity) else { return nil }
            let inner = f.mayBeNull ? "COALESCE(\(f.sql), FALSE)" : f.sql
            return Fragment(sql: "(NOT \(inner))", mayBeNull: false, depth: f.depth + 1)
        case .comparison(let lhs, let op, let rhs, let options):
            switch (lhs, rhs) {
            case (.any(let path), _):
                return quantified(path, entity: entity, alias: "t") { $0.compare($1, op, rhs, options) }
            case (.all(let path), _):
                // Every value passes: no value fails.
                guard let some = quantified(path, entity: entity, alias: "t", { $0.compare($1, op, rhs, options).map(Self.negated) })
                else { return nil }
                return Self.negated(some)
            case (.keyPath(let path), .constant) where op == .contains:
                if let operand = resolve(path, entity: entity, alias: "t") { return compare(operand, op, rhs, options) }
                // A path across a to-many relationship stands for its values: one of them equals the constant.
                return quantified(path, entity: entity, alias: "t") { $0.compare($1, .equal, rhs, options) }
            case (.constant, .keyPath(let path)) where op == .in:
                // `value IN rel.path`: one of the values the path reaches equals the constant.
                return quantified(path, entity: entity, alias: "t") { $0.compare($1, .equal, lhs, options) }
            case (.keyPath(let path), _):
                guard let operand = resolve(path, entity: entity, alias: "t") else { return nil }
                return compare(operand, op, rhs, options)
            case (.constant(let c), .keyPath(let path)):
                let flipped: ComparisonOperator
                switch op {
                case .equal, .notEqual: flipped = op
                case .less: flipped = .greater
                case .lessOrEqual: flipped = .greaterOrEqual
                case .greater: flipped = .less
                case .greaterOrEqual: flipped = .lessOrEqual
                default: return nil
                }
                guard let operand = resolve(path, entity: entity, alias: "t") else { return nil }
                return compare(operand, flipped, .constant(c), options)
            default:
                return nil
            }
        }
    }

    /// `NOT f`, with SQL NULL read as false first.
    static func negated(_ f: Fragment) -> Fragment {
        let inner = f.mayBeNull ? "COALESCE(\(f.sql), FALSE)" : f.sql
        return Fragment(sql: "(NOT \(inner))", mayBeNull: false, depth: f.depth + 1)
    }

    /// `EXISTS` over the records of the to-many relationship `path` starts with (of the record at `alias`),
    /// holding when `test` holds for the value the rest of the path reaches from one of them — the evaluator's
    /// `ANY`. A rest that crosses another to-many relationship nests another `EXISTS`.
    private mutating func quantified(
        _ path: [String], entity: Entity, alias: String, _ test: (inout PostgresQueryTranslator, Operand) -> Fragment?
    ) -> Fragment? {
        guard let first = path.first, let ri = entity.relationshipIndex(first), entity.relationships[ri].isToMany,
              let el = layout.entities[entity.name], case .join(let j) = el.relationships[ri],
              let dest = layout.schema.entity(named: entity.relationships[ri].destination),
              let destTable = layout.tables[dest.rootName] else { return nil }
        subqueries += 1
        let c = "\(aliasPrefix)e\(subqueries)"
        var sub = PostgresQueryTranslator(layout: layout, parameters: parameters)
        sub.aliasPrefix = c + "_"
        let rest = Array(path.dropFirst())
        var from = "\(PostgresLayout.quote(j.name)) AS \(c)_l"
        let inner: Fragment?
        if rest.isEmpty {
            // The keys themselves, as the evaluator reads them (without looking the records up).
            inner = test(&sub, Operand(sql: "\(c)_l.dst", kind: .integer))
        } else {
            // Rows whose related record is missing are skipped, as the evaluator skips keys it cannot resolve.
            from += " JOIN \(PostgresLayout.quote(destTable.name)) AS \(c) ON \(c)._pk = \(c)_l.dst"
            if let operand = sub.resolve(rest, entity: dest, alias: c) {
                inner = test(&sub, operand)
            } else {
                inner = sub.quantified(rest, entity: dest, alias: c, test)
            }
        }
        guard let inner else { return nil }
        parameters = sub.parameters
        let condition = inner.sql == "TRUE" ? "" : " AND \(inner.sql)"
        return Fragment(
            sql: "(EXISTS (SELECT 1 FROM \(from) \(sub.joins.joined(separator: " ")) WHERE \(c)_l.src = \(alias)._pk\(condition)))",
            mayBeNull: false, depth: inner.depth + 2)
    }

    private mutating func compare(_ x: Operand, _ op: ComparisonOperator, _ rhs: FetchExpression,
                                  _ options: ComparisonOptions) -> Fragment? {
        switch (op, rhs) {
        case (.in, .list(let values)):
            var bound: [(String, String)] = []
            var matchesNil = false
            for v in values {
                if v.isNull {
                    matchesNil = true
                    continue
                }
                switch bindable(x, v, options) {
                case .refuse: return nil
                case .incomparable: continue
                case .value(let text, let type): bound.append((text, type))
                }
            }
            var parts: [String] = []
            if !bound.isEmpty {
                let placeholders = bound.map { bind($0.0, $0.1) }
                parts.append("\(x.sql) IN (\(placeholders.joined(separator: ", ")))")
            }
            if matchesNil { parts.append("\(x.sql) IS NULL") }
            if parts.isEmpty { return .alwaysFalse }
            return Fragment(sql: "(" + parts.joined(separator: " OR ") + ")", mayBeNull: !bound.isEmpty, depth: 2)
        case (.between, .list(let bounds)):
            guard bounds.count == 2 else { return .alwaysFalse }
            guard let lo = compareConstant(x, .greaterOrEqual, bounds[0], options),
                  let hi = compareConstant(x, .lessOrEqual, bounds[1], options) else { return nil }
            return Fragment(sql: "(\(lo.sql) AND \(hi.sql))", mayBeNull: lo.mayBeNull || hi.mayBeNull, depth: 2)
        case (.in, _), (.between, _), (_, .list), (_, .keyPath), (_, .any), (_, .all):
            return nil
        case (_, .constant(let c)):
            return compareConstant(x, op, c, options)
        }
    }

    private mutating func compareConstant(_ x: Operand, _ op: ComparisonOperator, _ c: StoreValue,
                                          _ options: ComparisonOptions) -> Fragment? {
        switch op {
        case .beginsWith, .endsWith, .contains, .like, .matches:
            guard x.kind == .string, case .string(let needle) = c else { return .alwaysFalse }
            guard options.isEmpty, op != .matches else { return nil }
            if op == .like {
                // `*` becomes `%`; `%`, `_` and the escape character `\` match themselves.
                guard !needle.unicodeScalars.contains("?") else { return nil }
                var pattern = Data()
                for byte in needle.utf8 {
                    switch byte {
                    case UInt8(ascii: "*"): pattern.append(UInt8(ascii: "%"))
                    case UInt8(ascii: "%"), UInt8(ascii: "_"), UInt8(ascii: "\\"): pattern += [UInt8(ascii: "\\"), byte]
                    default: pattern.append(byte)
                    }
                }
                let p = bind(PostgresValueCodec.hex(pattern), "bytea")
                return Fragment(sql: "(\(x.sql) LIKE \(p))", mayBeNull: true)
            }
            if needle.isEmpty { return Fragment(sql: "(\(x.sql) IS NOT NULL)", mayBeNull: false) }
            let n = needle.utf8.count
            let p = bind(PostgresValueCodec.hex(Data(needle.utf8)), "bytea")
            switch op {
            case .beginsWith:
                return Fragment(sql: "(substring(\(x.sql) from 1 for \(n)) = \(p))", mayBeNull: true)
            case .endsWith:
                return Fragment(sql: "(length(\(x.sql)) >= \(n) AND substring(\(x.sql) from length(\(x.sql)) - \(n - 1)) = \(p))",
                                mayBeNull: true)
            default:
                return Fragment(sql: "(position(\(p) in \(x.sql)) > 0)", mayBeNull: true)
            }
        case .in, .between:
            return nil
        default:
            break
        }
        if x.kind == .decimal { return nil }
        if c.isNull {
            switch op {
            case .equal: return Fragment(sql: "(\(x.sql) IS NULL)", mayBeNull: false)
            case .notEqual: return Fragment(sql: "(\(x.sql) IS NOT NULL)", mayBeNull: false)
            default: return .alwaysFalse
            }
        }
        let (text, type): (String, String)
        switch bindable(x, c, options) {
        case .refuse: return nil
        case .incomparable: return op == .notEqual ? .alwaysTrue : .alwaysFalse
        case .value(let t, let ty): (text, type) = (t, ty)
        }
        let p = bind(text, type)
        switch op {
        case .equal: return Fragment(sql: "(\(x.sql) = \(p))", mayBeNull: true)
        case .notEqual: return Fragment(sql: "(\(x.sql) IS DISTINCT FROM \(p))", mayBeNull: false)
        case .less: return Fragment(sql: "(\(x.sql) < \(p))", mayBeNull: true)
        case .lessOrEqual: return Fragment(sql: "(\(x.sql) <= \(p))", mayBeNull: true)
        case .greater, .greaterOrEqual:
            let sqlOp = op == .greater ? ">" : ">="
            // PostgreSQL orders NaN above every number; the evaluator orders it with nothing.
            let nan = x.kind.holdsNaN ? " AND \(x.sql) <> 'NaN'::float8" : ""
            return Fragment(sql: "(\(x.sql) \(sqlOp) \(p)\(nan))", mayBeNull: true)
        default:
            return nil
        }
    }

    enum Bindable {
        case value(String, String)
        case incomparable
        case refuse
    }

    /// The largest magnitude below which every integer is exactly a `Double`.
    static let exactDoubleIntegers = 9_007_199_254_740_992.0

    private func bindable(_ x: Operand, _ c: StoreValue, _ options: ComparisonOptions) -> Bindable {
        if x.kind == .decimal { return .refuse }
        if x.kind == .string || x.kind == .uri, !options.isEmpty { return .refuse }
        switch (x.kind, c) {
        case (.integer, .integer16), (.integer, .integer32), (.integer, .integer64), (.integer, .boolean):
            return c.int64Value.map { .value(String($0), "bigint") } ?? .incomparable
        case (.real, .integer16), (.real, .integer32), (.real, .integer64), (.real, .boolean):
            guard let v = c.int64Value else { return .incomparable }
            guard abs(Double(v)) < Self.exactDoubleIntegers else { return .refuse }
            return .value(String(v), "float8")
        case (.integer, .double), (.integer, .float):
            guard let d = c.doubleValue, !d.isNaN else { return .incomparable }
            // Only an integral value has an exact integer twin; otherwise PostgreSQL would round the column.
            guard d == d.rounded(), abs(d) < 9.2e18 else { return .refuse }
            return .value(String(Int64(d)), "bigint")
        case (.real, .double), (.real, .float):
            guard let d = c.doubleValue, !d.isNaN else { return .incomparable }
            return .value(PostgresValueCodec.real(d), "float8")
        case (.date, .date(let d)):
            let t = d.timeIntervalSinceReferenceDate
            return t.isNaN ? .incomparable : .value(PostgresValueCodec.real(t), "float8")
        case (.date, .string(let s)):
            guard let t = ExactISO8601.date(from: s)?.timeIntervalSinceReferenceDate, !t.isNaN else { return .incomparable }
            return .value(PostgresValueCodec.real(t), "float8")
        case (.string, .string(let s)), (.uri, .string(let s)):
            return .value(PostgresValueCodec.hex(Data(s.utf8)), "bytea")
        case (.uri, .uri(let u)), (.string, .uri(let u)):
            return .value(PostgresValueCodec.hex(Data(u.absoluteString.utf8)), "bytea")
        case (.string, .uuid), (.string, .date):
            return .refuse
        case (.binary, .binary(let d)):
            return .value(PostgresValueCodec.hex(d), "bytea")
        case (.uuid, .uuid(let u)):
            return .value(u.uuidString, "uuid")
        case (.uuid, .string(let s)):
            return UUID(uuidString: s).map { .value($0.uuidString, "uuid") } ?? .incomparable
        case (.integer, .decimal), (.real, .decimal):
            return .refuse
        default:
            return .incomparable
        }
    }

    // MARK: Sorting

    /// `ORDER BY` terms (the caller appends `t._pk`), or `nil` if one cannot be translated.
    mutating func orderBy(_ descriptors: [SortKey], entity: Entity) -> [String]? {
        var terms: [String] = []
        for d in descriptors {
            let path = d.keyPath.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
            guard let operand = resolve(path, entity: entity, alias: "t"), operand.kind != .decimal else { return nil }
            // nil first ascending, last descending.
            let dir = d.ascending ? "ASC NULLS FIRST" : "DESC NULLS LAST"
            let x = operand.sql
            if operand.kind.holdsNaN {
                terms.append("(CASE WHEN \(x) IS NULL THEN 0 WHEN \(x) = 'NaN'::float8 THEN 1 ELSE 2 END) \(d.ascending ? "ASC" : "DESC")")
                terms.append("(CASE WHEN \(x) = 'NaN'::float8 THEN NULL ELSE \(x) END) \(dir)")
            } else {
                terms.append("\(x) \(dir)")
            }
        }
        return terms
    }

    // MARK: Key paths

    mutating func resolve(_ path: [String], entity: Entity, alias: String) -> Operand? {
        guard let first = path.first, let el = layout.entities[entity.name] else { return nil }
        let table = el.table
        if let ai = entity.attributeIndex(first) {
            guard path.count == 1 else { return nil }
            let col = el.attributeColumns[ai]
            guard col >= 0, col < table.columns.count else { return nil }
            let sql = "\(alias).\(PostgresLayout.quote(table.columns[col].name))"
            // Booleans compare as the integers 0 and 1, as the evaluator's numbers do.
            if entity.attributes[ai].type == .boolean { return Operand(sql: "(\(sql))::integer", kind: .integer) }
            return Operand(sql: sql, kind: Kind(entity.attributes[ai].type))
        }
        if let ri = entity.relationshipIndex(first) {
            let rel = entity.relationships[ri]
            let storage = el.relationships[ri]
            if path.count == 2, path[1] == "@count" {
                switch storage {
                case .foreignKey(let col):
                    return Operand(sql: "(\(alias).\(PostgresLayout.quote(table.columns[col].name)) IS NOT NULL)::integer", kind: .integer)
                case .join(let j):
                    return Operand(sql: "(SELECT COUNT(*) FROM \(PostgresLayout.quote(j.name)) AS c WHERE c.src = \(alias)._pk)",
                                   kind: .integer)
                case .missing:
                    return nil
                }
            }
            guard !rel.isToMany, case .foreignKey(let col) = storage else { return nil }
            let fk = "\(alias).\(PostgresLayout.quote(table.columns[col].name))"
            if path.count == 1 { return Operand(sql: fk, kind: .integer) }
            guard let dest = layout.schema.entity(named: rel.destination), let destTable = layout.tables[dest.rootName] else {
                return nil
            }
            let key = "\(alias)\u{0}\(col)"
            let joined: String
            if let existing = joinAliases[key] {
                joined = existing
            } else {
                joined = "\(aliasPrefix)j\(joins.count + 1)"
                joinAliases[key] = joined
                joins.append("LEFT JOIN \(PostgresLayout.quote(destTable.name)) AS \(joined) ON \(joined)._pk = \(fk)")
            }
            return resolve(Array(path.dropFirst()), entity: dest, alias: joined)
        }
        if first == "self", path.count == 1, alias == "t" { return Operand(sql: "t._pk", kind: .integer) }
        return nil
    }
}
