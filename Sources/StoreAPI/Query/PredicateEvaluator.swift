import Foundation

/// Evaluates predicates, sort descriptors and whole fetch requests over records in memory.
///
/// This is the reference semantics every backend must match (the conformance suite checks that they do):
///
/// **Values**
/// - Numbers compare numerically and exactly across integer, float, double, decimal and boolean types
///   (`Int64.max` is not equal to the double `9.223372036854775807e18`); NaN is unequal and unordered to
///   everything, itself included.
/// - Strings compare by Unicode scalar values (the same order as SQLite's `BINARY` collation over UTF-8);
///   `[c]` folds case and `[d]` folds diacritics before comparing (for `MATCHES`, `[c]` makes the regular
///   expression case-insensitive instead, so `\D` keeps its meaning).
/// - Dates compare with dates, or with a string constant holding ISO 8601 text; never with numbers.
///   UUIDs compare with UUIDs or with a string constant holding a UUID (any case); URIs with URIs or strings.
///   Binary data compares bytewise. Values of other differing kinds are unequal and unordered.
///
/// **nil** — the logic is two-valued, not SQL's three-valued:
/// - `nil` equals only `nil`, so `x != 5` holds when `x` is `nil`, and `x != nil` holds for every value.
/// - Every ordering comparison (`<`, `BETWEEN`, …) and every string operator with `nil` on either side is false,
///   and so `NOT (x < 5)` *holds* when `x` is `nil` (a SQL translation must add `OR x IS NULL`).
/// - `x IN {…}` holds for `nil` only when the list contains `nil`.
///
/// **Key paths**
/// - A key path may go through to-one relationships (`author.name`); a missing link yields `nil`. A to-one
///   relationship itself evaluates to the related record's primary key, so `author == nil` works; `self` is the
///   record's own primary key. `rel.@count` is the number of related records.
/// - A plain key path may not cross a to-many relationship, except on the right of `IN` and the left of
///   `CONTAINS`, where it stands for the collection of values it reaches (`"x" IN tags.name`).
/// - `ANY path op v` holds when the comparison holds for at least one value the path reaches (false for none);
///   `ALL path op v` when it holds for every one (true for none); `NONE` is `NOT ANY` (true for none).
/// - Unknown keys throw ``StoreError/unknownProperty(entity:property:)``; keys used in a way the schema does not
///   allow throw ``StoreError/invalidPredicate(_:)`` naming the entity and key. ``execute(_:candidates:)`` checks
///   the whole request against the schema first, so the error does not depend on which records exist.
///
/// **Sorting**
/// - `nil` first when ascending (last when descending), NaN right after `nil`, then by the value order above
///   (values of kinds that do not compare order by kind: numbers, strings, dates, data, UUIDs, URIs); ties are
///   broken by primary key, ascending, whatever the direction.
@_spi(BackendKit) public struct PredicateEvaluator: Sendable {
    /// Looks up records by hierarchy root and primary key, to follow relationships.
    public typealias Resolver = @Sendable (_ root: String, _ keys: [Int64]) throws -> [Record]

    /// The schema records are laid out against.
    public let schema: Schema
    private let resolve: Resolver

    /// Creates an evaluator that follows relationships through `resolver`.
    public init(schema: Schema, resolver: @escaping Resolver) {
        self.schema = schema
        self.resolve = resolver
    }

    // MARK: Fetch

    /// Filters, sorts and slices `candidates` as `request` asks. Candidates must already be restricted to the
    /// request's entity (and sub-entities when the request includes them).
    ///
    /// - Throws: the errors of ``validate(_:)`` (and an invalid `MATCHES` pattern) before looking at any record,
    ///   then resolver errors.
    public func execute(_ request: FetchRequest, candidates: [Record]) throws -> [Record] {
        try validate(request)
        var matched: [Record]
        if let p = request.predicate {
            let regexes = try RegexCache(p)
            matched = try candidates.filter { try evaluate(p, on: $0, regexes) }
        } else {
            matched = candidates
        }
        try sort(&matched, by: request.sortDescriptors)
        return Self.slice(matched, offset: request.offset, limit: request.limit)
    }

    /// Applies an offset and limit. Negative values count as zero.
    public static func slice(_ records: [Record], offset: Int, limit: Int?) -> [Record] {
        let start = min(max(0, offset), records.count)
        let end = limit.map { start + min(records.count - start, max(0, $0)) } ?? records.count
        return start == 0 && end == records.count ? records : Array(records[start..<end])
    }

    /// Sorts records by the descriptors, then by primary key.
    public func sort(_ records: inout [Record], by descriptors: [SortKey]) throws {
        if descriptors.isEmpty {
            records.sort { $0.primaryKey < $1.primaryKey }
            return
        }
        if let numeric = NumericSort(records, descriptors, schema: schema) {
            records = numeric.sorted(records)
            return
        }
        try sortComparingValues(&records, by: descriptors)
    }

    /// Whether ``sort(_:by:)`` sorts records of `entity` by `descriptors` as plain numbers: every key is an
    /// attribute of the entity itself holding numbers, booleans or dates. Such a sort compares flat arrays of
    /// numbers, allocating and resolving nothing per comparison, so a backend may find it cheaper than its engine's
    /// sort of the same matches.
    @_spi(BackendKit) public static func sortsByNumbers(_ descriptors: [SortKey], of entity: Entity) -> Bool {
        !descriptors.isEmpty && descriptors.allSatisfy { d in
            entity.attributeIndex(d.keyPath).map { NumericSort.sortsByNumber(entity.attributes[$0].type) } ?? false
        }
    }

    /// ``sort(_:by:)`` for every kind of key: each record's keys resolved once, then compared by
    /// ``sortOrder(_:_:)``.
    func sortComparingValues(_ records: inout [Record], by descriptors: [SortKey]) throws {
        let paths = descriptors.map { Self.components($0.keyPath) }
        // Decorate once: resolving key paths can cost a lookup per record.
        var keyed: [(keys: [StoreValue], record: Record)] = []
        keyed.reserveCapacity(records.count)
        for r in records {
            keyed.append((try paths.map { try value(at: $0, of: r) }, r))
        }
        keyed.sort { a, b in
            for (i, d) in descriptors.enumerated() {
                let order = Self.sortOrder(a.keys[i], b.keys[i])
                if order != 0 { return d.ascending ? order < 0 : order > 0 }
            }
            return a.record.primaryKey < b.record.primaryKey
        }
        records = keyed.map(\.record)
    }

    // MARK: Validation

    /// Checks a request against the schema without looking at records: the entity exists, every key path of the
    /// predicate and of the sort descriptors names real properties and uses them as allowed (see the type's
    /// documentation), and `IN`/`BETWEEN` have lists where they need them.
    public func validate(_ request: FetchRequest) throws {
        let entity = try schema.requireEntity(request.entity)
        if let p = request.predicate { try validate(p, entity: entity) }
        for d in request.sortDescriptors {
            _ = try check(Self.components(d.keyPath), from: entity, allowMany: false)
        }
    }

    /// Checks a predicate against the properties of `entity` (see ``validate(_:)``).
    public func validate(_ predicate: FetchPredicate, entity name: String) throws {
        try validate(predicate, entity: try schema.requireEntity(name))
    }

    private func validate(_ predicate: FetchPredicate, entity: Entity) throws {
        switch predicate {
        case .true, .false: return
        case .and(let ps), .or(let ps): for p in ps { try validate(p, entity: entity) }
        case .not(let p): try validate(p, entity: entity)
        case .comparison(let lhs, let op, let rhs, _):
            try validate(lhs, entity: entity, collection: op == .contains)
            try validate(rhs, entity: entity, collection: op == .in)
            switch (op, rhs) {
            case (.in, .list), (.in, .keyPath): break
            case (.in, _): throw StoreError.invalidPredicate("IN needs a list or a key path on its right side (\(predicate))")
            case (.between, .list(let bounds)) where bounds.count == 2: break
            case (.between, _): throw StoreError.invalidPredicate("BETWEEN needs a list of two values (\(predicate))")
            default: break
            }
        }
    }

    private func validate(_ e: FetchExpression, entity: Entity, collection: Bool) throws {
        switch e {
        case .constant, .list: return
        case .keyPath(let path): _ = try check(path, from: entity, allowMany: collection)
        case .any(let path), .all(let path): _ = try check(path, from: entity, allowMany: true)
        }
    }

    /// Walks a key path through the schema; returns whether it crosses a to-many relationship.
    private func check(_ path: [String], from entity: Entity, allowMany: Bool) throws -> Bool {
        guard !path.isEmpty else { throw StoreError.invalidPredicate("empty key path on \(entity.name)") }
        var current = entity
        var crossesMany = false
        for (i, key) in path.enumerated() {
            let rest = path.count - i - 1
            if current.attributeIndex(key) != nil {
                guard rest == 0 else {
                    throw StoreError.invalidPredicate(
                        "'\(key)' of \(current.name) is an attribute; cannot follow '\(path.joined(separator: "."))'")
                }
                return crossesMany
            }
            if let rel = current.relationship(key) {
                if rest == 1, path[i + 1] == "@count" { return crossesMany }
                if rel.isToMany {
                    guard allowMany else {
                        throw StoreError.invalidPredicate(
                            "'\(current.name).\(key)' is to-many: use ANY, ALL or @count (in '\(path.joined(separator: "."))')")
                    }
                    crossesMany = true
                }
                if rest == 0 { return crossesMany }
                current = try schema.requireEntity(rel.destination)
                continue
            }
            if key == "self", path.count == 1 { return false }
            if key == "@count" {
                throw StoreError.invalidPredicate(
                    "'@count' in '\(path.joined(separator: "."))' of \(entity.name) must follow a relationship")
            }
            throw StoreError.unknownProperty(entity: current.name, property: key)
        }
        return crossesMany
    }

    // MARK: Predicates

    /// Whether `record` matches `predicate`. To test many records, prefer ``execute(_:candidates:)``, which
    /// also compiles each `MATCHES` pattern once rather than once per record.
    public func evaluate(_ predicate: FetchPredicate, on record: Record) throws -> Bool {
        try evaluate(predicate, on: record, RegexCache(predicate))
    }

    /// `predicate`, checked against the schema for a fetch of `entity`, made ready to test records one at a time
    /// with its `MATCHES` patterns compiled once — for a backend that filters records as it reads them rather than
    /// collecting candidates for ``execute(_:candidates:)``.
    ///
    /// - Throws: the errors of ``validate(_:entity:)``, and an invalid `MATCHES` pattern.
    public func prepare(_ predicate: FetchPredicate, entity: String) throws -> PreparedPredicate {
        try validate(predicate, entity: entity)
        return PreparedPredicate(predicate: predicate, evaluator: self, regexes: try RegexCache(predicate))
    }

    fileprivate func evaluate(_ predicate: FetchPredicate, on record: Record, _ regexes: RegexCache) throws -> Bool {
        switch predicate {
        case .true: return true
        case .false: return false
        case .and(let ps):
            for p in ps where try !evaluate(p, on: record, regexes) { return false }
            return true
        case .or(let ps):
            for p in ps where try evaluate(p, on: record, regexes) { return true }
            return false
        case .not(let p):
            return try !evaluate(p, on: record, regexes)
        case .comparison(let lhs, let op, let rhs, let options):
            let m = Matcher(op: op, options: options, regexes: regexes)
            switch lhs {
            case .any(let path):
                let right = try operand(rhs, of: record, collection: op == .in)
                return try values(at: path, of: record).contains { v in try compare(.value(v), m, right) }
            case .all(let path):
                let right = try operand(rhs, of: record, collection: op == .in)
                return try values(at: path, of: record).allSatisfy { v in try compare(.value(v), m, right) }
            default:
                let left = try operand(lhs, of: record, collection: op == .contains)
                return try compare(left, m, operand(rhs, of: record, collection: op == .in))
            }
        }
    }

    private enum Operand {
        case value(StoreValue)
        case list([StoreValue])
    }

    /// An operator, its options, and the compiled patterns of the predicate it belongs to.
    private struct Matcher {
        let op: ComparisonOperator
        let options: ComparisonOptions
        let regexes: RegexCache
    }

    /// The `MATCHES` patterns of one predicate, compiled. Patterns only known per record (taken from a key path)
    /// are compiled when met.
    fileprivate struct RegexCache {
        private struct Key: Hashable {
            let pattern: String
            let options: ComparisonOptions
        }
        private var compiled: [Key: NSRegularExpression] = [:]

        init(_ predicate: FetchPredicate) throws {
            try collect(predicate)
        }

        private mutating func collect(_ p: FetchPredicate) throws {
            switch p {
            case .true, .false: break
            case .and(let ps), .or(let ps): for q in ps { try collect(q) }
            case .not(let q): try collect(q)
            case .comparison(_, .matches, .constant(.string(let pattern)), let options):
                let key = Key(pattern: pattern, options: options)
                if compiled[key] == nil { compiled[key] = try Self.compile(pattern, options) }
            case .comparison: break
            }
        }

        func regex(_ pattern: String, _ options: ComparisonOptions) throws -> NSRegularExpression {
            if let r = compiled[Key(pattern: pattern, options: options)] { return r }
            return try Self.compile(pattern, options)
        }

        private static func compile(_ pattern: String, _ options: ComparisonOptions) throws -> NSRegularExpression {
            try PredicateEvaluator.regularExpression(pattern, options)
        }
    }

    private func operand(_ e: FetchExpression, of record: Record, collection: Bool) throws -> Operand {
        switch e {
        case .constant(let v): return .value(v)
        case .list(let vs): return .list(vs)
        case .keyPath(let path):
            if collection, try check(path, from: schema.requireEntity(record.entity), allowMany: true) {
                return .list(try values(at: path, of: record))
            }
            return .value(try value(at: path, of: record))
        case .any(let path), .all(let path):
            return .list(try values(at: path, of: record))
        }
    }

    private func compare(_ lhs: Operand, _ m: Matcher, _ rhs: Operand) throws -> Bool {
        switch (lhs, m.op, rhs) {
        case (.value(let a), .in, .list(let list)):
            return list.contains { Self.equal(a, $0, m.options) }
        case (.list(let list), .contains, .value(let b)):
            return list.contains { Self.equal($0, b, m.options) }
        case (.value(let a), .between, .list(let bounds)):
            guard bounds.count == 2 else {
                throw StoreError.invalidPredicate("BETWEEN needs a list of two values, got \(bounds.count)")
            }
            guard let lo = Self.order(a, bounds[0], m.options), let hi = Self.order(a, bounds[1], m.options) else {
                return false
            }
            return lo >= 0 && hi <= 0
        case (.value(let a), _, .value(let b)):
            return try compareValues(a, m, b)
        default:
            throw StoreError.invalidPredicate("operator \(m.op.rawValue) cannot compare these operands")
        }
    }

    private func compareValues(_ a: StoreValue, _ m: Matcher, _ b: StoreValue) throws -> Bool {
        let options = m.options
        switch m.op {
        case .equal: return Self.equal(a, b, options)
        case .notEqual: return !Self.equal(a, b, options)
        case .less: return Self.order(a, b, options).map { $0 < 0 } ?? false
        case .lessOrEqual: return Self.order(a, b, options).map { $0 <= 0 } ?? false
        case .greater: return Self.order(a, b, options).map { $0 > 0 } ?? false
        case .greaterOrEqual: return Self.order(a, b, options).map { $0 >= 0 } ?? false
        case .beginsWith, .endsWith, .contains, .like:
            guard case .string(let s) = a, case .string(let pattern) = b else { return false }
            let hay = Array(Self.fold(s, options).unicodeScalars)
            let needle = Array(Self.fold(pattern, options).unicodeScalars)
            switch m.op {
            case .beginsWith: return hay.starts(with: needle)
            case .endsWith: return hay.reversed().starts(with: needle.reversed())
            case .contains: return Self.containsScalars(hay, needle)
            default: return Self.likeScalars(hay, needle)
            }
        case .matches:
            guard case .string(let s) = a, case .string(let pattern) = b else { return false }
            return Self.matches(s, try m.regexes.regex(pattern, options), options)
        case .in, .between:
            throw StoreError.invalidPredicate("\(m.op.rawValue) needs a list on its right side")
        }
    }

    // MARK: Key paths

    /// The value at a key path of a record: an attribute, a to-one relationship's key, a path through to-one
    /// relationships, `rel.@count`, or `self` (the primary key).
    ///
    /// - Throws: ``StoreError/unknownProperty(entity:property:)`` for a key the entity does not have,
    ///   ``StoreError/invalidPredicate(_:)`` for a path through a to-many relationship or past an attribute.
    public func value(at path: [String], of record: Record) throws -> StoreValue {
        // The common case, an attribute of the record itself, without the general walk's array of results.
        if path.count == 1, let entity = schema.entity(named: record.entity), let i = entity.attributePosition(path[0]),
           i < record.attributes.count {
            return record.attributes[i]
        }
        return try resolve(path[...], of: record, allowMany: false, whole: path).first ?? .null
    }

    /// The values at a key path that may cross to-many relationships (for `ANY`, `ALL`, `IN` and `CONTAINS`):
    /// one value per record reached, in relationship order.
    public func values(at path: [String], of record: Record) throws -> [StoreValue] {
        try resolve(path[...], of: record, allowMany: true, whole: path)
    }

    private func resolve(_ path: ArraySlice<String>, of record: Record, allowMany: Bool, whole: [String]) throws
        -> [StoreValue]
    {
        guard let first = path.first else { throw StoreError.invalidPredicate("empty key path") }
        let entity = try schema.requireEntity(record.entity)
        // Only error messages need the whole path as text: built up front, it was a string allocated for every
        // comparison of every record.
        func dotted() -> String { whole.joined(separator: ".") }
        if let i = entity.attributeIndex(first) {
            guard path.count == 1 else {
                throw StoreError.invalidPredicate("'\(first)' of \(entity.name) is an attribute; cannot follow '\(dotted())'")
            }
            guard i < record.attributes.count else { throw Self.misaligned(record, entity) }
            return [record.attributes[i]]
        }
        guard let ri = entity.relationshipIndex(first) else {
            if first == "self", whole.count == 1 { return [.integer64(record.primaryKey)] }
            if first == "@count" {
                throw StoreError.invalidPredicate("'@count' in '\(dotted())' of \(entity.name) must follow a relationship")
            }
            throw StoreError.unknownProperty(entity: entity.name, property: first)
        }
        guard ri < record.relationships.count else { throw Self.misaligned(record, entity) }
        let rel = entity.relationships[ri]
        let keys = record.relationships[ri].keys
        if path.count == 2, path.last == "@count" { return [.integer64(Int64(keys.count))] }
        if rel.isToMany && !allowMany {
            throw StoreError.invalidPredicate("'\(entity.name).\(first)' is to-many: use ANY, ALL or @count (in '\(dotted())')")
        }
        if path.count == 1 {
            return rel.isToMany ? keys.map { .integer64($0) } : [keys.first.map { .integer64($0) } ?? .null]
        }
        let root = try schema.requireEntity(rel.destination).rootName
        let rest = path.dropFirst()
        if !rel.isToMany {
            // A dangling or empty link reads as nil rather than failing the whole fetch.
            guard let key = keys.first, let next = try resolve(root, [key]).first else { return [.null] }
            return try resolve(rest, of: next, allowMany: allowMany, whole: whole)
        }
        let related = try resolve(root, keys)
        // Keep relationship order (resolvers may return records in any order).
        let byKey = Dictionary(related.map { ($0.primaryKey, $0) }, uniquingKeysWith: { a, _ in a })
        var out: [StoreValue] = []
        for k in keys {
            guard let r = byKey[k] else { continue }
            out += try resolve(rest, of: r, allowMany: true, whole: whole)
        }
        return out
    }

    private static func misaligned(_ record: Record, _ entity: Entity) -> StoreError {
        .invalidPredicate(
            "record \(record.key) has \(record.attributes.count) attributes and \(record.relationships.count) relationships; \(entity.name) has \(entity.attributes.count) and \(entity.relationships.count)")
    }

    static func components(_ keyPath: String) -> [String] {
        keyPath.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
    }

    // MARK: Value semantics

    /// FetchPredicate equality (numeric across number types, string folding by options, NaN unequal to everything,
    /// `nil` equal only to `nil`).
    public static func equal(_ a: StoreValue, _ b: StoreValue, _ options: ComparisonOptions = []) -> Bool {
        if a.isNull || b.isNull { return a.isNull && b.isNull }
        return order(a, b, options) == 0
    }

    /// FetchPredicate ordering: negative, zero or positive; `nil` when the values are not comparable (nil, NaN,
    /// different kinds).
    public static func order(_ a: StoreValue, _ b: StoreValue, _ options: ComparisonOptions = []) -> Int? {
        switch (a, b) {
        case (.null, _), (_, .null): return nil
        case (.string(let x), .string(let y)):
            return compareScalars(fold(x, options), fold(y, options))
        case (.binary(let x), .binary(let y)):
            return x.lexicographicallyPrecedes(y) ? -1 : (x == y ? 0 : 1)
        case (.uuid(let x), .uuid(let y)):
            return compareScalars(x.uuidString, y.uuidString)
        case (.uuid, .string(let s)):
            return UUID(uuidString: s).flatMap { order(a, .uuid($0)) }
        case (.string(let s), .uuid):
            return UUID(uuidString: s).flatMap { order(.uuid($0), b) }
        case (.uri(let x), .uri(let y)):
            return compareScalars(fold(x.absoluteString, options), fold(y.absoluteString, options))
        case (.uri(let x), .string(let s)):
            return compareScalars(fold(x.absoluteString, options), fold(s, options))
        case (.string(let s), .uri(let y)):
            return compareScalars(fold(s, options), fold(y.absoluteString, options))
        case (.date(let x), .date(let y)):
            return compareDoubles(x.timeIntervalSinceReferenceDate, y.timeIntervalSinceReferenceDate)
        case (.date, .string(let s)):
            return ExactISO8601.date(from: s).flatMap { order(a, .date($0)) }
        case (.string(let s), .date):
            return ExactISO8601.date(from: s).flatMap { order(.date($0), b) }
        default:
            return compareNumbers(a, b)
        }
    }

    /// Exact numeric comparison; `nil` for non-numbers and NaN.
    static func compareNumbers(_ a: StoreValue, _ b: StoreValue) -> Int? {
        guard isNumber(a), isNumber(b) else { return nil }
        if let x = a.int64Value, let y = b.int64Value { return x < y ? -1 : (x == y ? 0 : 1) }
        switch (a, b) {
        case (.decimal(let x), .decimal(let y)): return compareDecimals(x, y)
        case (.decimal(let x), _):
            if let y = b.int64Value { return compareDecimals(x, Decimal(y)) }
        case (_, .decimal(let y)):
            if let x = a.int64Value { return compareDecimals(Decimal(x), y) }
        default:
            break
        }
        if let x = a.int64Value, let y = b.doubleValue { return compareIntDouble(x, y) }
        if let x = a.doubleValue, let y = b.int64Value { return compareIntDouble(y, x).map { -$0 } }
        guard let x = a.doubleValue, let y = b.doubleValue else { return nil }
        return compareDoubles(x, y)
    }

    private static func isNumber(_ v: StoreValue) -> Bool {
        switch v {
        case .integer16, .integer32, .integer64, .decimal, .double, .float, .boolean: true
        default: false
        }
    }

    private static func compareDoubles(_ x: Double, _ y: Double) -> Int? {
        if x.isNaN || y.isNaN { return nil }
        return x < y ? -1 : (x == y ? 0 : 1)
    }

    private static func compareDecimals(_ x: Decimal, _ y: Decimal) -> Int? {
        if x.isNaN || y.isNaN { return nil }
        return x < y ? -1 : (x == y ? 0 : 1)
    }

    /// Compares an integer with a double without rounding the integer to a double.
    static func compareIntDouble(_ i: Int64, _ d: Double) -> Int? {
        if d.isNaN { return nil }
        if d >= 9_223_372_036_854_775_808.0 { return -1 }  // 2^63: above every Int64
        if d < -9_223_372_036_854_775_808.0 { return 1 }
        let whole = d.rounded(.towardZero)
        let w = Int64(whole)  // exact: |whole| < 2^63 or whole == -2^63
        if i != w { return i < w ? -1 : 1 }
        let fraction = d - whole
        return fraction > 0 ? -1 : (fraction < 0 ? 1 : 0)
    }

    /// Sort order: `nil` first, then NaN, then by ``order(_:_:_:)``, and by kind where values do not compare.
    static func sortOrder(_ a: StoreValue, _ b: StoreValue) -> Int {
        if a.isNull || b.isNull { return a.isNull ? (b.isNull ? 0 : -1) : 1 }
        let aNaN = isNaN(a)
        let bNaN = isNaN(b)
        if aNaN || bNaN { return aNaN ? (bNaN ? 0 : -1) : 1 }
        if let o = order(a, b) { return o }
        let (ra, rb) = (kindRank(a), kindRank(b))
        return ra < rb ? -1 : (ra == rb ? 0 : 1)
    }

    private static func isNaN(_ v: StoreValue) -> Bool {
        if case .decimal(let d) = v { return d.isNaN }
        return v.doubleValue?.isNaN ?? false
    }

    private static func kindRank(_ v: StoreValue) -> Int {
        switch v {
        case .null: 0
        case .integer16, .integer32, .integer64, .decimal, .double, .float, .boolean: 1
        case .string: 2
        case .date: 3
        case .binary: 4
        case .uuid: 5
        case .uri: 6
        }
    }

    /// `s` with case (`[c]`) and diacritics (`[d]`) folded as every comparison with those options folds it: a
    /// backend that folds in its engine (SQLite registers this as a function) calls this very code, so its
    /// results cannot differ from the evaluator's.
    public static func fold(_ s: String, _ options: ComparisonOptions) -> String {
        if options.isEmpty { return s }
        // ASCII-only text folds character by character (Foundation maps A-Z to a-z for case and leaves ASCII
        // alone for diacritics; a test checks this against Foundation), without Foundation's per-call cost.
        if s.utf8.allSatisfy({ $0 < 0x80 }) {
            guard options.contains(.caseInsensitive), s.utf8.contains(where: { $0 &- 0x41 < 26 }) else { return s }
            return String(decoding: s.utf8.map { $0 &- 0x41 < 26 ? $0 | 0x20 : $0 }, as: UTF8.self)
        }
        var fo: String.CompareOptions = []
        if options.contains(.caseInsensitive) { fo.insert(.caseInsensitive) }
        if options.contains(.diacriticInsensitive) { fo.insert(.diacriticInsensitive) }
        return s.folding(options: fo, locale: nil)
    }

    static func compareScalars(_ x: String, _ y: String) -> Int {
        var i = x.unicodeScalars.makeIterator()
        var j = y.unicodeScalars.makeIterator()
        while true {
            switch (i.next(), j.next()) {
            case (nil, nil): return 0
            case (nil, _): return -1
            case (_, nil): return 1
            case (let p?, let q?): if p != q { return p.value < q.value ? -1 : 1 }
            }
        }
    }

    private static func containsScalars(_ h: [Unicode.Scalar], _ n: [Unicode.Scalar]) -> Bool {
        guard let head = n.first else { return true }
        guard n.count <= h.count else { return false }
        for start in 0...(h.count - n.count) where h[start] == head {
            if h[start..<(start + n.count)].elementsEqual(n) { return true }
        }
        return false
    }

    /// `LIKE` over already folded text: `*` matches any run of Unicode scalars (possibly empty), `?` exactly one,
    /// every other scalar itself.
    public static func like(_ s: String, pattern: String) -> Bool {
        likeScalars(Array(s.unicodeScalars), Array(pattern.unicodeScalars))
    }

    /// The regular expression `MATCHES` tests with these options: the whole text must match; `[c]` makes it
    /// case-insensitive and `[d]` folds the pattern's diacritics (see ``matches(_:_:_:)``).
    ///
    /// - Throws: ``StoreError/invalidPredicate(_:)`` when the pattern is not a regular expression.
    public static func regularExpression(_ pattern: String, _ options: ComparisonOptions) throws -> NSRegularExpression {
        // Only diacritics are folded in the pattern: case-folding it would turn `\D` into `\d`.
        let folded = fold(pattern, options.subtracting(.caseInsensitive))
        do {
            return try NSRegularExpression(
                pattern: "^(?:\(folded))$", options: options.contains(.caseInsensitive) ? [.caseInsensitive] : [])
        } catch {
            throw StoreError.invalidPredicate("MATCHES pattern \(String(reflecting: pattern)) is not a regular expression")
        }
    }

    /// Whether `s` matches `regex` (made by ``regularExpression(_:_:)`` with the same options) as `MATCHES` does.
    public static func matches(_ s: String, _ regex: NSRegularExpression, _ options: ComparisonOptions) -> Bool {
        let hay = fold(s, options.subtracting(.caseInsensitive))
        return regex.firstMatch(in: hay, range: NSRange(hay.startIndex..<hay.endIndex, in: hay)) != nil
    }

    /// `LIKE` with `*` (any run, possibly empty) and `?` (exactly one scalar); every other scalar matches itself.
    private static func likeScalars(_ s: [Unicode.Scalar], _ p: [Unicode.Scalar]) -> Bool {
        likeElements(s, p, star: "*", one: "?")
    }

    /// `LIKE` over ASCII-only text and pattern given as bytes (there each byte is one Unicode scalar, so this is
    /// ``like(_:pattern:)`` without making strings): for a backend that matches row by row in its engine.
    public static func likeASCII(_ s: UnsafeRawBufferPointer, pattern p: UnsafeRawBufferPointer) -> Bool {
        likeElements(s, p, star: UInt8(ascii: "*"), one: UInt8(ascii: "?"))
    }

    private static func likeElements<C: RandomAccessCollection>(_ s: C, _ p: C, star wildcard: C.Element, one: C.Element) -> Bool
    where C.Element: Equatable, C.Index == Int {
        var si = s.startIndex, pi = p.startIndex, star = -1, mark = 0
        while si < s.endIndex {
            if pi < p.endIndex, p[pi] == wildcard { star = pi; mark = si; pi += 1 }
            else if pi < p.endIndex, p[pi] == one || p[pi] == s[si] { si += 1; pi += 1 }
            else if star >= 0 { pi = star + 1; mark += 1; si = mark }
            else { return false }
        }
        while pi < p.endIndex, p[pi] == wildcard { pi += 1 }
        return pi == p.endIndex
    }
}

/// A predicate ready to test records: see ``PredicateEvaluator/prepare(_:entity:)``.
///
/// A record only needs the values of ``FetchPredicate/keyPathRoots`` to be tested (the others may be anything,
/// they are not read), so a backend can decode just those, test, and decode the whole record only when it matches.
@_spi(BackendKit) public struct PreparedPredicate {
    /// The predicate.
    public let predicate: FetchPredicate
    fileprivate let evaluator: PredicateEvaluator
    fileprivate let regexes: PredicateEvaluator.RegexCache

    /// Whether `record` matches, following relationships through the evaluator's resolver.
    public func matches(_ record: Record) throws -> Bool {
        try evaluator.evaluate(predicate, on: record, regexes)
    }
}
