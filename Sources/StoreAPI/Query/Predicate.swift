import Foundation

/// A filter over records, built in Swift or parsed from an NSPredicate-like string (``init(_:_:)``).
///
/// (Named `FetchPredicate`, not `Predicate`, so it never clashes with Foundation's `Predicate` in files that import
/// both modules.)
///
/// Backends receive predicates as this tree and translate what they can (SQLite to SQL); anything they cannot
/// translate, ``PredicateEvaluator`` evaluates in memory.
public indirect enum FetchPredicate: Sendable, Hashable {
    /// Matches every record.
    case `true`
    /// Matches no record.
    case `false`
    /// Compares two expressions.
    case comparison(FetchExpression, ComparisonOperator, FetchExpression, ComparisonOptions)
    /// All of the predicates hold.
    case and([FetchPredicate])
    /// At least one of the predicates holds.
    case or([FetchPredicate])
    /// The predicate does not hold.
    case not(FetchPredicate)
}

/// One side of a comparison.
public indirect enum FetchExpression: Sendable, Hashable {
    /// A key path: an attribute (`title`), a path through to-one relationships (`author.name`), a to-many
    /// relationship's count (`tags.@count`), or `self` for the record's own object ID.
    case keyPath([String])
    /// A constant value.
    case constant(StoreValue)
    /// A list of constants (the right side of `IN`).
    case list([StoreValue])
    /// `ANY rel.path`: the comparison holds if it holds for at least one related record of the to-many
    /// relationship that starts the path.
    case any([String])
    /// `ALL rel.path`: the comparison holds for every related record.
    case all([String])
}

/// The comparison operators of the predicate language.
public enum ComparisonOperator: String, Sendable, Hashable, CaseIterable {
    case equal = "=="
    case notEqual = "!="
    case less = "<"
    case lessOrEqual = "<="
    case greater = ">"
    case greaterOrEqual = ">="
    case beginsWith = "BEGINSWITH"
    case endsWith = "ENDSWITH"
    case contains = "CONTAINS"
    case like = "LIKE"
    case matches = "MATCHES"
    case `in` = "IN"
    case between = "BETWEEN"
}

/// String comparison options: `[c]` case-insensitive, `[d]` diacritic-insensitive.
public struct ComparisonOptions: OptionSet, Sendable, Hashable {
    public let rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }
    /// `[c]`
    public static let caseInsensitive = ComparisonOptions(rawValue: 1)
    /// `[d]`
    public static let diacriticInsensitive = ComparisonOptions(rawValue: 2)
}

/// A sort key: an attribute (or to-one key path) and a direction.
public struct SortKey: Sendable, Hashable {
    /// The key path, dot-separated (`author.name`).
    public var keyPath: String
    /// Ascending (nil first, then increasing) or descending.
    public var ascending: Bool

    /// Creates a sort descriptor.
    public init(_ keyPath: String, ascending: Bool = true) {
        self.keyPath = keyPath
        self.ascending = ascending
    }
}

extension FetchPredicate {
    /// The first component of every key path the predicate reads — `author` for `author.name`, `tags` for
    /// `ANY tags.name`, `self` — that is, the properties of a fetched record it looks at. Testing a record needs
    /// only these of its values (see ``PreparedPredicate``).
    public var keyPathRoots: Set<String> {
        var roots: Set<String> = []
        func add(_ e: FetchExpression) {
            switch e {
            case .keyPath(let path), .any(let path), .all(let path):
                if let first = path.first { roots.insert(first) }
            case .constant, .list:
                break
            }
        }
        func walk(_ p: FetchPredicate) {
            switch p {
            case .true, .false: break
            case .and(let ps), .or(let ps): ps.forEach(walk)
            case .not(let q): walk(q)
            case .comparison(let lhs, _, let rhs, _): add(lhs); add(rhs)
            }
        }
        walk(self)
        return roots
    }
}

/// A fetch: which entity, which records, in which order, which slice.
public struct FetchRequest: Sendable, Hashable {
    /// The entity to fetch.
    public var entity: String
    /// The filter, or `nil` for every record.
    public var predicate: FetchPredicate?
    /// The order. Records that compare equal on every descriptor are ordered by primary key, so results are
    /// deterministic on every backend.
    public var sortDescriptors: [SortKey]
    /// Records to skip.
    public var offset: Int
    /// The most records to return, `nil` for all.
    public var limit: Int?
    /// Whether records of sub-entities are included.
    public var includesSubentities: Bool

    /// Creates a fetch request.
    public init(
        entity: String, predicate: FetchPredicate? = nil, sortDescriptors: [SortKey] = [], offset: Int = 0,
        limit: Int? = nil, includesSubentities: Bool = true
    ) {
        self.entity = entity
        self.predicate = predicate
        self.sortDescriptors = sortDescriptors
        self.offset = offset
        self.limit = limit
        self.includesSubentities = includesSubentities
    }
}
