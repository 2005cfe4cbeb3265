import Foundation

/// Evaluates predicates, sort descriptors and whole fetch requests over records in memory.
///
/// This is the reference semantics every backend must match (the conformance suite checks that they do):
/// - Numbers compare numerically across integer, float, double, decimal and boolean types; NaN is unequal and
///   unordered to everything, itself included.
/// - Strings compare by Unicode scalar values (the same order as SQLite's `BINARY` collation over UTF-8);
///   `[c]` folds case and `[d]` folds diacritics before comparing.
/// - `nil` equals only `nil`; every ordering comparison with `nil` is false.
/// - Sorting puts `nil` first when ascending (last when descending), NaN right after `nil`, and breaks ties by
///   primary key, ascending.
/// - A key path may go through to-one relationships (`author.name`); a missing link yields `nil`. A to-one
///   relationship itself evaluates to the related record's primary key, so `author == nil` works.
public struct PredicateEvaluator: Sendable {
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
    public func execute(_ request: FetchRequest, candidates: [Record]) throws -> [Record] {
        var matched: [Record]
        if let p = request.predicate {
            matched = try candidates.filter { try evaluate(p, on: $0) }
        } else {
            matched = candidates
        }
        try sort(&matched, by: request.sortDescriptors)
        return Self.slice(matched, offset: request.offset, limit: request.limit)
    }

    /// Applies an offset and limit.
    public static func slice(_ records: [Record], offset: Int, limit: Int?) -> [Record] {
        let start = min(max(0, offset), records.count)
        let end = limit.map { min(records.count, start + max(0, $0)) } ?? records.count
        return start == 0 && end == records.count ? records : Array(records[start..<end])
    }

    /// Sorts records by the descriptors, then by primary key.
    public func sort(_ records: inout [Record], by descriptors: [SortDescriptor]) throws {
        if descriptors.isEmpty {
            records.sort { $0.primaryKey < $1.primaryKey }
            return
        }
        let paths = descriptors.map { $0.keyPath.split(separator: ".").map(String.init) }
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

    // MARK: Predicates

    /// Whether `record` matches `predicate`.
    public func evaluate(_ predicate: Predicate, on record: Record) throws -> Bool {
        switch predicate {
        case .true: return true
        case .false: return false
        case .and(let ps):
            for p in ps where try !evaluate(p, on: record) { return false }
            return true
        case .or(let ps):
            for p in ps where try evaluate(p, on: record) { return true }
            return false
        case .not(let p):
            return try !evaluate(p, on: record)
        case .comparison(let lhs, let op, let rhs, let options):
            switch lhs {
            case .any(let path):
                let right = try operand(rhs, of: record)
                return try values(at: path, of: record).contains { v in try compare(.value(v), op, right, options) }
            case .all(let path):
                let right = try operand(rhs, of: record)
                return try values(at: path, of: record).allSatisfy { v in try compare(.value(v), op, right, options) }
            default:
                return try compare(operand(lhs, of: record), op, operand(rhs, of: record), options)
            }
        }
    }

    private enum Operand {
        case value(StoreValue)
        case list([StoreValue])
    }

    private func operand(_ e: Expression, of record: Record) throws -> Operand {
        switch e {
        case .constant(let v): return .value(v)
        case .list(let vs): return .list(vs)
        case .keyPath(let path):
            return .value(try value(at: path, of: record))
        case .any(let path), .all(let path):
            return .list(try values(at: path, of: record))
        }
    }

    private func compare(_ lhs: Operand, _ op: ComparisonOperator, _ rhs: Operand, _ options: ComparisonOptions) throws
        -> Bool
    {
        switch (lhs, op, rhs) {
        case (.value(let a), .in, .list(let list)):
            return list.contains { Self.equal(a, $0, options) }
        case (.list(let list), .contains, .value(let b)):
            return list.contains { Self.equal($0, b, options) }
        case (.value(let a), .between, .list(let bounds)):
            guard bounds.count == 2, let lo = Self.order(a, bounds[0], options), let hi = Self.order(a, bounds[1], options)
            else { return false }
            return lo >= 0 && hi <= 0
        case (.value(let a), _, .value(let b)):
            return try compareValues(a, op, b, options)
        default:
            throw StoreError.invalidPredicate("operator \(op.rawValue) cannot compare these operands")
        }
    }

    private func compareValues(_ a: StoreValue, _ op: ComparisonOperator, _ b: StoreValue, _ options: ComparisonOptions)
        throws -> Bool
    {
        switch op {
        case .equal: return Self.equal(a, b, options)
        case .notEqual: return !Self.equal(a, b, options)
        case .less: return Self.order(a, b, options).map { $0 < 0 } ?? false
        case .lessOrEqual: return Self.order(a, b, options).map { $0 <= 0 } ?? false
        case .greater: return Self.order(a, b, options).map { $0 > 0 } ?? false
        case .greaterOrEqual: return Self.order(a, b, options).map { $0 >= 0 } ?? false
        case .beginsWith, .endsWith, .contains, .like, .matches:
            guard case .string(let s) = a, case .string(let pattern) = b else { return false }
            let hay = Self.fold(s, options)
            let needle = Self.fold(pattern, options)
            switch op {
            case .beginsWith: return hay.unicodeScalars.starts(with: needle.unicodeScalars)
            case .endsWith: return hay.unicodeScalars.reversed().starts(with: needle.unicodeScalars.reversed())
            case .contains: return needle.isEmpty || Self.containsScalars(hay, needle)
            case .like: return Self.like(Array(hay.unicodeScalars), Array(needle.unicodeScalars))
            default:
                do {
                    let regex = try NSRegularExpression(pattern: "^(?:\(needle))$")
                    let range = NSRange(hay.startIndex..<hay.endIndex, in: hay)
                    return regex.firstMatch(in: hay, range: range) != nil
                } catch {
                    throw StoreError.invalidPredicate("MATCHES pattern \(String(reflecting: pattern)) is not a regular expression")
                }
            }
        case .in, .between:
            throw StoreError.invalidPredicate("\(op.rawValue) needs a list on its right side")
        }
    }

    // MARK: Key paths

    /// The value at a key path of a record: an attribute, a to-one relationship's key, a path through to-one
    /// relationships, or `rel.@count` of a to-many relationship.
    public func value(at path: [String], of record: Record) throws -> StoreValue {
        guard let first = path.first else { throw StoreError.invalidPredicate("empty key path") }
        let entity = try schema.requireEntity(record.entity)
        if let i = entity.attributeIndex(first) {
            guard path.count == 1 else {
                throw StoreError.invalidPredicate("'\(first)' of \(entity.name) is an attribute; cannot follow '\(path.joined(separator: "."))'")
            }
            return record.attributes[i]
        }
        guard let ri = entity.relationshipIndex(first) else {
            if first == "self", path.count == 1 { return .integer64(record.primaryKey) }
            throw StoreError.unknownProperty(entity: entity.name, property: first)
        }
        let rel = entity.relationships[ri]
        let keys = record.relationships[ri].keys
        if path.count == 2, path[1] == "@count" { return .integer64(Int64(keys.count)) }
        if rel.isToMany {
            throw StoreError.invalidPredicate("'\(entity.name).\(first)' is to-many: use ANY, ALL or @count")
        }
        guard path.count > 1 else { return keys.first.map { .integer64($0) } ?? .null }
        guard let key = keys.first else { return .null }
        let root = try schema.requireEntity(rel.destination).rootName
        guard let next = try resolve(root, [key]).first else { return .null }
        return try value(at: Array(path.dropFirst()), of: next)
    }

    /// The values at a key path that starts with a to-many relationship (for `ANY` / `ALL`).
    public func values(at path: [String], of record: Record) throws -> [StoreValue] {
        guard let first = path.first else { throw StoreError.invalidPredicate("empty key path") }
        let entity = try schema.requireEntity(record.entity)
        guard let ri = entity.relationshipIndex(first) else {
            if path.count == 1, entity.attributeIndex(first) != nil { return [try value(at: path, of: record)] }
            throw StoreError.unknownProperty(entity: entity.name, property: first)
        }
        let rel = entity.relationships[ri]
        let keys = record.relationships[ri].keys
        if path.count == 1 { return keys.map { .integer64($0) } }
        let root = try schema.requireEntity(rel.destination).rootName
        return try resolve(root, keys).map { try value(at: Array(path.dropFirst()), of: $0) }
    }

    // MARK: Value semantics

    /// Predicate equality (numeric across number types, string folding by options, NaN unequal to everything).
    public static func equal(_ a: StoreValue, _ b: StoreValue, _ options: ComparisonOptions = []) -> Bool {
        if a.isNull || b.isNull { return a.isNull && b.isNull }
        return order(a, b, options) == 0
    }

    /// Predicate ordering: negative, zero or positive; `nil` when the values are not comparable (nil, NaN,
    /// different kinds).
    public static func order(_ a: StoreValue, _ b: StoreValue, _ options: ComparisonOptions = []) -> Int? {
        switch (a, b) {
        case (.null, _), (_, .null): return nil
        case (.string(let x), .string(let y)):
            return compareScalars(fold(x, options), fold(y, options))
        case (.decimal(let x), .decimal(let y)):
            return x < y ? -1 : (x == y ? 0 : 1)
        case (.binary(let x), .binary(let y)):
            return x.lexicographicallyPrecedes(y) ? -1 : (x == y ? 0 : 1)
        case (.uuid(let x), .uuid(let y)):
            return compareScalars(x.uuidString, y.uuidString)
        case (.uri(let x), .uri(let y)):
            return compareScalars(x.absoluteString, y.absoluteString)
        case (.date, .date):
            break
        default:
            break
        }
        if let x = a.int64Value, let y = b.int64Value { return x < y ? -1 : (x == y ? 0 : 1) }
        guard let x = a.doubleValue, let y = b.doubleValue, !x.isNaN, !y.isNaN else { return nil }
        if case .date = a, b.type != .date { return nil }
        if case .date = b, a.type != .date { return nil }
        return x < y ? -1 : (x == y ? 0 : 1)
    }

    /// Sort order: `nil` first, then NaN, then by ``order(_:_:_:)``.
    static func sortOrder(_ a: StoreValue, _ b: StoreValue) -> Int {
        if a.isNull || b.isNull { return a.isNull ? (b.isNull ? 0 : -1) : 1 }
        let aNaN = a.doubleValue?.isNaN ?? false
        let bNaN = b.doubleValue?.isNaN ?? false
        if aNaN || bNaN { return aNaN ? (bNaN ? 0 : -1) : 1 }
        return order(a, b) ?? 0
    }

    static func fold(_ s: String, _ options: ComparisonOptions) -> String {
        if options.isEmpty { return s }
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

    private static func containsScalars(_ hay: String, _ needle: String) -> Bool {
        let h = Array(hay.unicodeScalars)
        let n = Array(needle.unicodeScalars)
        guard n.count <= h.count else { return false }
        for start in 0...(h.count - n.count) where h[start] == n[0] {
            if h[start..<(start + n.count)].elementsEqual(n) { return true }
        }
        return false
    }

    /// `LIKE` with `*` (any run) and `?` (one character).
    private static func like(_ s: [Unicode.Scalar], _ p: [Unicode.Scalar]) -> Bool {
        var si = 0, pi = 0, star = -1, mark = 0
        while si < s.count {
            if pi < p.count, p[pi] == "?" || p[pi] == s[si] { si += 1; pi += 1 }
            else if pi < p.count, p[pi] == "*" { star = pi; mark = si; pi += 1 }
            else if star >= 0 { pi = star + 1; mark += 1; si = mark }
            else { return false }
        }
        while pi < p.count, p[pi] == "*" { pi += 1 }
        return pi == p.count
    }
}
