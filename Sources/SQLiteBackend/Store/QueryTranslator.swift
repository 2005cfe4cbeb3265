import Foundation
@_spi(BackendKit) import StoreAPI

/// Translates predicates and sort descriptors to SQL over an entity table aliased `t`, with exactly the semantics of
/// ``PredicateEvaluator``. Whatever it cannot translate *exactly* it refuses (returns `nil`), and the store then
/// evaluates in memory with ``PredicateEvaluator`` — so results are identical either way.
///
/// Translated: `==`, `!=`, `<`, `<=`, `>`, `>=`, `IN`, `BETWEEN` against constants; `BEGINSWITH`, `ENDSWITH`,
/// `CONTAINS` (byte-wise over UTF-8 with `substr`/`instr` on blobs, so NUL characters and case are respected —
/// unlike SQLite's `LIKE`); `[c]`/`[d]`, `LIKE` and `MATCHES` through the functions of ``PredicateFunctions``,
/// which run the evaluator's own folding and matching; `AND`, `OR`, `NOT`; key paths through to-one
/// relationships (`LEFT JOIN`s), a to-one relationship's key, `self`, and `rel.@count` (a correlated subquery);
/// `ANY`/`ALL`/`NONE` over paths that start with a to-many relationship, `value IN rel.path` and
/// `rel.path CONTAINS value` (correlated `EXISTS` subqueries, nested for each to-many relationship crossed).
/// Refused: comparisons between two key paths, anything on decimal attributes (stored as text, compared as
/// numbers), `[c]`/`[d]` on URI attributes, a to-many relationship reached through a to-one one, a `MATCHES`
/// pattern that does not compile (the evaluator reports it), and key paths the fetched entity does not have.
///
/// Semantics kept: SQL's NULL is mapped to "false" everywhere (and wrapped under `NOT`); numbers compare exactly
/// across integer and floating types (as SQLite does); dates compare with dates and ISO 8601 strings, UUIDs with
/// UUIDs and UUID strings, URIs with URIs and strings, values of other kinds never; NaN (stored as a blob) is
/// unequal and unordered to everything; sorting puts nil first, then NaN, then values, breaking ties by primary key.
/// Refused as well: a string column against a UUID or date constant (the evaluator parses each stored string).
struct QueryTranslator {
    let layout: SQLiteLayout
    /// `LEFT JOIN` clauses, in order (no parameters).
    private(set) var joins: [String] = []
    private var joinAliases: [String: String] = [:]
    /// Prefixed to every alias this translator makes, so a subquery's aliases never shadow its outer query's.
    private let aliasPrefix: String
    /// `EXISTS` subqueries made so far (each gets its own alias).
    private var subqueries = 0

    init(layout: SQLiteLayout) {
        self.init(layout: layout, aliasPrefix: "")
    }

    private init(layout: SQLiteLayout, aliasPrefix: String) {
        self.layout = layout
        self.aliasPrefix = aliasPrefix
    }

    /// A translated boolean expression and its parameters, in textual order.
    struct Fragment {
        var sql: String
        var bindings: [SQLValue]
        /// Whether the expression may evaluate to SQL NULL (which the evaluator's logic treats as false).
        var mayBeNull: Bool
        /// How deep SQLite's parse tree gets (`a AND b AND c` nests); SQLite refuses depths over 1000.
        var depth = 1

        static let alwaysTrue = Fragment(sql: "1", bindings: [], mayBeNull: false)
        static let alwaysFalse = Fragment(sql: "0", bindings: [], mayBeNull: false)
    }

    /// Limits under SQLite's own (expression depth 1000, 32766 parameters): beyond them the evaluator runs.
    static let maximumDepth = 800
    static let maximumParameters = 30_000

    /// ``translate(_:entity:)``, refusing what SQLite could not run.
    mutating func translateWithinLimits(_ predicate: FetchPredicate, entity: Entity) -> Fragment? {
        guard let f = translate(predicate, entity: entity), f.depth <= Self.maximumDepth,
            f.bindings.count <= Self.maximumParameters
        else { return nil }
        return f
    }

    /// How the values of an operand compare.
    enum Kind {
        /// Integers and booleans (and keys, counts).
        case integer
        /// Doubles and floats (NaN stored as a blob).
        case real
        /// Dates (seconds since the reference date; NaN stored as a blob).
        case date
        case decimal
        case string
        case binary
        case uuid
        case uri
        /// A string folded by `store_fold` (a blob of UTF-8) for `[c]`/`[d]` comparisons.
        case folded

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

        /// Whether a NaN blob may be stored.
        var holdsNaN: Bool { self == .real || self == .date }
    }

    /// A key path resolved to an SQL expression.
    struct Operand {
        let sql: String
        let kind: Kind
    }

    // MARK: Predicates

    /// The SQL of `predicate` over records of `entity` (table alias `t`), or `nil` if it cannot be translated.
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
            return Fragment(
                sql: "(" + parts.map(\.sql).joined(separator: isAnd ? " AND " : " OR ") + ")",
                bindings: parts.flatMap(\.bindings), mayBeNull: parts.contains { $0.mayBeNull },
                depth: (parts.map(\.depth).max() ?? 0) + parts.count)
        case .not(let p):
            guard let f = translate(p, entity: entity) else { return nil }
            let inner = f.mayBeNull ? "IFNULL(\(f.sql), 0)" : f.sql
            return Fragment(sql: "(NOT \(inner))", bindings: f.bindings, mayBeNull: false, depth: f.depth + 2)
        case .comparison(let lhs, let op, let rhs, let options):
            let this = self
            switch (lhs, rhs) {
            case (.any(let path), _):
                return quantified(path, entity: entity, alias: "t") { this.compare($0, op, rhs, options) }
            case (.all(let path), _):
                // Every value passes: no value fails.
                guard let some = quantified(path, entity: entity, alias: "t", { this.compare($0, op, rhs, options).map(Self.negated) })
                else { return nil }
                return Self.negated(some)
            case (.keyPath(let path), .constant) where op == .contains:
                if let operand = resolve(path, entity: entity, alias: "t") { return compare(operand, op, rhs, options) }
                // A path across a to-many relationship stands for its values: one of them equals the constant.
                return quantified(path, entity: entity, alias: "t") { this.compare($0, .equal, rhs, options) }
            case (.keyPath(let path), _):
                guard let operand = resolve(path, entity: entity, alias: "t") else { return nil }
                return compare(operand, op, rhs, options)
            case (.constant, .keyPath(let path)) where op == .in:
                // `value IN rel.path`: one of the values the path reaches equals the constant (a path that reaches
                // one value is an error the evaluator reports).
                return quantified(path, entity: entity, alias: "t") { this.compare($0, .equal, lhs, options) }
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
        let inner = f.mayBeNull ? "IFNULL(\(f.sql), 0)" : f.sql
        return Fragment(sql: "(NOT \(inner))", bindings: f.bindings, mayBeNull: false, depth: f.depth + 2)
    }

    /// `EXISTS` over the records of the to-many relationship `path` starts with (of the record at `alias`),
    /// holding when `test` holds for the value the rest of the path reaches from one of them — the evaluator's
    /// `ANY`. A rest that crosses another to-many relationship nests another `EXISTS`.
    private mutating func quantified(
        _ path: [String], entity: Entity, alias: String, _ test: (Operand) -> Fragment?
    ) -> Fragment? {
        guard let first = path.first, let ri = entity.relationshipIndex(first), entity.relationships[ri].isToMany,
            let el = layout.entities[entity.name], let dest = layout.schema.entity(named: entity.relationships[ri].destination),
            let destTable = layout.tables[dest.rootName]
        else { return nil }
        subqueries += 1
        let c = "\(aliasPrefix)e\(subqueries)"
        var sub = QueryTranslator(layout: layout, aliasPrefix: c + "_")
        let rest = Array(path.dropFirst())
        var from: String
        let link: String
        var key = "\(c)._pk"
        switch el.relationships[ri] {
        case .inverseForeignKey(let ifk):
            from = "\(SQLiteLayout.quote(ifk.table)) AS \(c)"
            let filter = ifk.entityCodes.map { " AND \(c)._ent IN (\($0.map(String.init).joined(separator: ", ")))" } ?? ""
            link = "\(c).\(SQLiteLayout.quote(ifk.column)) = \(alias)._pk\(filter)"
        case .joinTable(let js):
            from = "\(SQLiteLayout.quote(js.table)) AS \(c)_l"
            link = "\(c)_l.\(js.ownColumn) = \(alias)._pk"
            if rest.isEmpty {
                // The keys themselves, as the evaluator reads them (without looking the records up).
                key = "\(c)_l.\(js.otherColumn)"
            } else {
                // Rows whose related record is missing are skipped, as the evaluator skips keys it cannot resolve.
                from += " JOIN \(SQLiteLayout.quote(destTable.name)) AS \(c) ON \(c)._pk = \(c)_l.\(js.otherColumn)"
            }
        case .foreignKey:
            return nil
        }
        let inner: Fragment?
        if rest.isEmpty {
            inner = test(Operand(sql: key, kind: .integer))
        } else if let operand = sub.resolve(rest, entity: dest, alias: c) {
            inner = test(operand)
        } else {
            inner = sub.quantified(rest, entity: dest, alias: c, test)
        }
        guard let inner else { return nil }
        let condition = inner.sql == "1" ? "" : " AND \(inner.sql)"
        return Fragment(
            sql: "(EXISTS (SELECT 1 FROM \(from) \(sub.joins.joined(separator: " ")) WHERE \(link)\(condition)))",
            bindings: inner.bindings, mayBeNull: false, depth: inner.depth + 3)
    }

    private func compare(_ x: Operand, _ op: ComparisonOperator, _ rhs: FetchExpression, _ options: ComparisonOptions)
        -> Fragment?
    {
        var x = x
        if !options.isEmpty, x.kind == .string, ![.beginsWith, .endsWith, .contains, .like, .matches].contains(op) {
            // Equality and order on the folded text; the constants are folded alike in `bindable`.
            x = Operand(sql: "\(PredicateFunctions.fold)(\(x.sql), \(options.rawValue))", kind: .folded)
        }
        switch (op, rhs) {
        case (.in, .list(let values)):
            // `x IN (…)` over the comparable constants, plus `x IS NULL` when the list holds nil (nil equals nil).
            var bound: [SQLValue] = []
            var matchesNil = false
            for v in values {
                if v.isNull {
                    matchesNil = true
                    continue
                }
                switch bindable(x, v, options) {
                case .refuse: return nil
                case .incomparable: continue
                case .value(let b): bound.append(b)
                }
            }
            var parts: [String] = []
            if !bound.isEmpty {
                parts.append("\(x.sql) IN (\(KeyedQuery.placeholders(bound.count)))")
            }
            if matchesNil { parts.append("\(x.sql) IS NULL") }
            if parts.isEmpty { return .alwaysFalse }
            return Fragment(sql: "(" + parts.joined(separator: " OR ") + ")", bindings: bound, mayBeNull: !bound.isEmpty, depth: 2)
        case (.between, .list(let bounds)):
            guard bounds.count == 2 else { return .alwaysFalse }
            guard let lo = compareConstant(x, .greaterOrEqual, bounds[0], options),
                let hi = compareConstant(x, .lessOrEqual, bounds[1], options)
            else { return nil }
            return Fragment(
                sql: "(\(lo.sql) AND \(hi.sql))", bindings: lo.bindings + hi.bindings,
                mayBeNull: lo.mayBeNull || hi.mayBeNull)
        case (.in, _), (.between, _), (_, .list), (_, .keyPath), (_, .any), (_, .all):
            return nil  // the evaluator throws or compares key paths; let it
        case (_, .constant(let c)):
            return compareConstant(x, op, c, options)
        }
    }

    /// `x op c` with the evaluator's semantics.
    private func compareConstant(_ x: Operand, _ op: ComparisonOperator, _ c: StoreValue, _ options: ComparisonOptions)
        -> Fragment?
    {
        let isOrdering = [.less, .lessOrEqual, .greater, .greaterOrEqual].contains(op)
        switch op {
        case .beginsWith, .endsWith, .contains, .like, .matches:
            guard x.kind == .string, case .string(let raw) = c else { return .alwaysFalse }
            if op == .matches {
                // A pattern that does not compile is the evaluator's error to report.
                guard (try? PredicateEvaluator.regularExpression(raw, options)) != nil else { return nil }
                return Fragment(
                    sql: "(\(PredicateFunctions.matches)(\(x.sql), ?, \(options.rawValue)) = 1)", bindings: [.text(raw)],
                    mayBeNull: true)
            }
            let needle = PredicateEvaluator.fold(raw, options)
            let bytes = Data(needle.utf8)
            if op == .like {
                return Fragment(
                    sql: "(\(PredicateFunctions.like)(\(x.sql), ?, \(options.rawValue)) = 1)", bindings: [.blob(bytes)],
                    mayBeNull: true)
            }
            if needle.isEmpty { return Fragment(sql: "(\(x.sql) IS NOT NULL)", bindings: [], mayBeNull: false) }
            let hay = options.isEmpty
                ? "CAST(\(x.sql) AS BLOB)" : "\(PredicateFunctions.fold)(\(x.sql), \(options.rawValue))"
            switch op {
            case .beginsWith:
                return Fragment(sql: "(substr(\(hay), 1, \(bytes.count)) = ?)", bindings: [.blob(bytes)], mayBeNull: true)
            case .endsWith:
                return Fragment(sql: "(substr(\(hay), -\(bytes.count)) = ?)", bindings: [.blob(bytes)], mayBeNull: true)
            default:
                return Fragment(sql: "(instr(\(hay), ?) > 0)", bindings: [.blob(bytes)], mayBeNull: true)
            }
        case .in, .between:
            return nil
        default:
            break
        }
        if x.kind == .decimal { return nil }
        let incomparable: Fragment = op == .notEqual ? .alwaysTrue : .alwaysFalse
        if c.isNull {
            switch op {
            case .equal: return Fragment(sql: "(\(x.sql) IS NULL)", bindings: [], mayBeNull: false)
            case .notEqual: return Fragment(sql: "(\(x.sql) IS NOT NULL)", bindings: [], mayBeNull: false)
            default: return .alwaysFalse
            }
        }
        let value: SQLValue
        switch bindable(x, c, options) {
        case .refuse: return nil
        case .incomparable: return incomparable
        case .value(let v): value = v
        }
        let lhs = x.sql
        let sqlOp: String
        switch op {
        case .equal: sqlOp = "="
        case .notEqual: return Fragment(sql: "(\(lhs) IS NOT ?)", bindings: [value], mayBeNull: false)
        case .less: sqlOp = "<"
        case .lessOrEqual: sqlOp = "<="
        case .greater: sqlOp = ">"
        case .greaterOrEqual: sqlOp = ">="
        default: return nil
        }
        // A NaN blob sorts above every number in SQL; the evaluator orders it with nothing.
        if isOrdering, x.kind.holdsNaN, op == .greater || op == .greaterOrEqual {
            return Fragment(
                sql: "(\(lhs) \(sqlOp) ? AND typeof(\(x.sql)) <> 'blob')", bindings: [value], mayBeNull: true)
        }
        return Fragment(sql: "(\(lhs) \(sqlOp) ?)", bindings: [value], mayBeNull: true)
    }

    /// How a constant compares with an operand's values.
    enum Bindable {
        /// Bind this value and let SQL compare (numbers exactly, text and blobs bytewise — as the evaluator does).
        case value(SQLValue)
        /// The evaluator finds the kinds incomparable: equal to nothing, ordered with nothing.
        case incomparable
        /// The evaluator's comparison has no exact SQL twin.
        case refuse
    }

    /// The bound form of a non-nil constant compared with `x`, following the evaluator's `order`. SQLite compares
    /// integers with reals exactly, as the evaluator does, so numbers are bound as they are.
    private func bindable(_ x: Operand, _ c: StoreValue, _ options: ComparisonOptions) -> Bindable {
        if x.kind == .decimal { return .refuse }
        if x.kind == .string || x.kind == .uri, !options.isEmpty { return .refuse }
        switch (x.kind, c) {
        case (.integer, .integer16), (.integer, .integer32), (.integer, .integer64), (.integer, .boolean),
            (.real, .integer16), (.real, .integer32), (.real, .integer64), (.real, .boolean):
            return c.int64Value.map { .value(.integer($0)) } ?? .incomparable
        case (.integer, .double), (.integer, .float), (.real, .double), (.real, .float), (.real, .decimal):
            guard let d = c.doubleValue, !d.isNaN else { return .incomparable }
            return .value(.real(d))
        case (.integer, .decimal(let d)):
            // Exact decimal comparison: only integral decimals have an exact SQL twin.
            if d.isNaN { return .incomparable }
            return Self.exactInteger(d).map { .value(.integer($0)) } ?? .refuse
        case (.date, .date(let d)):
            let t = d.timeIntervalSinceReferenceDate
            return t.isNaN ? .incomparable : .value(.real(t))
        case (.date, .string(let s)):
            guard let t = ExactISO8601.date(from: s)?.timeIntervalSinceReferenceDate, !t.isNaN else { return .incomparable }
            return .value(.real(t))
        case (.string, .string(let s)), (.uri, .string(let s)):
            return .value(.text(s))
        case (.uri, .uri(let u)), (.string, .uri(let u)):
            return .value(.text(u.absoluteString))
        case (.string, .uuid), (.string, .date), (.folded, .uuid), (.folded, .date):
            return .refuse  // the evaluator parses each stored string
        case (.folded, .string(let s)):
            return .value(.blob(Data(PredicateEvaluator.fold(s, options).utf8)))
        case (.folded, .uri(let u)):
            return .value(.blob(Data(PredicateEvaluator.fold(u.absoluteString, options).utf8)))
        case (.binary, .binary(let d)):
            return .value(.blob(d))
        case (.uuid, .uuid(let u)):
            return .value(.blob(SQLiteValueCodec.uuidData(u)))
        case (.uuid, .string(let s)):
            return UUID(uuidString: s).map { .value(.blob(SQLiteValueCodec.uuidData($0))) } ?? .incomparable
        default:
            return .incomparable
        }
    }

    /// The integer equal to an integral decimal that fits `Int64`, else `nil`.
    static func exactInteger(_ d: Decimal) -> Int64? {
        var rounded = d
        var source = d
        NSDecimalRound(&rounded, &source, 0, .plain)
        guard rounded == d else { return nil }
        let text = SQLiteValueCodec.decimalText(rounded)
        return Int64(text)
    }

    // MARK: Sorting

    /// `ORDER BY` terms for the descriptors (the caller appends `t._pk`), or `nil` if one cannot be translated.
    mutating func orderBy(_ descriptors: [SortKey], entity: Entity) -> [String]? {
        var terms: [String] = []
        for d in descriptors {
            let path = d.keyPath.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
            guard let operand = resolve(path, entity: entity, alias: "t"), operand.kind != .decimal else { return nil }
            let dir = d.ascending ? "ASC" : "DESC"
            if operand.kind.holdsNaN {
                // nil, then NaN (all NaNs tie), then numbers.
                let x = operand.sql
                terms.append("(CASE WHEN \(x) IS NULL THEN 0 WHEN typeof(\(x)) = 'blob' THEN 1 ELSE 2 END) \(dir)")
                terms.append("(CASE WHEN typeof(\(x)) = 'blob' THEN NULL ELSE \(x) END) \(dir)")
            } else {
                terms.append("\(operand.sql) \(dir)")
            }
        }
        return terms
    }

    // MARK: Key paths

    /// Resolves a key path the way ``PredicateEvaluator/value(at:of:)`` does, for every record of `entity` (and its
    /// sub-entities): attributes, to-one keys, paths through to-one relationships, `@count`, `self`.
    mutating func resolve(_ path: [String], entity: Entity, alias: String) -> Operand? {
        guard let first = path.first, let el = layout.entities[entity.name],
            let table = layout.tables[entity.rootName]
        else { return nil }
        if let ai = entity.attributeIndex(first) {
            guard path.count == 1 else { return nil }
            let col = el.attributeColumns[ai]
            guard col >= 0 else { return nil }
            return Operand(sql: "\(alias).\(SQLiteLayout.quote(table.columns[col].name))", kind: Kind(entity.attributes[ai].type))
        }
        if let ri = entity.relationshipIndex(first) {
            let rel = entity.relationships[ri]
            let storage = el.relationships[ri]
            if path.count == 2, path[1] == "@count" {
                switch storage {
                case .foreignKey(let col):
                    return Operand(sql: "(\(alias).\(SQLiteLayout.quote(table.columns[col].name)) IS NOT NULL)", kind: .integer)
                case .inverseForeignKey(let ifk):
                    let filter = ifk.entityCodes.map { " AND c._ent IN (\($0.map(String.init).joined(separator: ", ")))" } ?? ""
                    return Operand(
                        sql: "(SELECT COUNT(*) FROM \(SQLiteLayout.quote(ifk.table)) AS c WHERE c.\(SQLiteLayout.quote(ifk.column)) = \(alias)._pk\(filter))",
                        kind: .integer)
                case .joinTable(let js):
                    return Operand(
                        sql: "(SELECT COUNT(*) FROM \(SQLiteLayout.quote(js.table)) AS c WHERE c.\(js.ownColumn) = \(alias)._pk)",
                        kind: .integer)
                }
            }
            guard !rel.isToMany, case .foreignKey(let col) = storage else { return nil }
            let fk = "\(alias).\(SQLiteLayout.quote(table.columns[col].name))"
            if path.count == 1 { return Operand(sql: fk, kind: .integer) }
            guard let dest = layout.schema.entity(named: rel.destination),
                let destTable = layout.tables[dest.rootName]
            else { return nil }
            let key = "\(alias)\u{0}\(col)"
            let joined: String
            if let existing = joinAliases[key] {
                joined = existing
            } else {
                joined = "\(aliasPrefix)j\(joins.count + 1)"
                joinAliases[key] = joined
                joins.append("LEFT JOIN \(SQLiteLayout.quote(destTable.name)) AS \(joined) ON \(joined)._pk = \(fk)")
            }
            return resolve(Array(path.dropFirst()), entity: dest, alias: joined)
        }
        if first == "self", path.count == 1, alias == "t" { return Operand(sql: "t._pk", kind: .integer) }
        return nil
    }
}
