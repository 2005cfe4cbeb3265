import Foundation

// A Swift spelling of the predicate language. Every builder produces exactly the tree the string syntax
// produces for the same predicate, so `Key("pages") > 300` and `try FetchPredicate("pages > 300")` are equal.

/// A value that can stand on the right of a predicate comparison built in Swift.
///
/// Plain Swift values convert to the ``StoreValue`` the string syntax would produce for them, so
/// `Key("pages") > 300` and `Key("pages") > pageCount` (an `Int`) build the same predicate.
public protocol PredicateValueConvertible: Sendable {
    /// The value as stored.
    var predicateValue: StoreValue { get }
}

extension StoreValue: PredicateValueConvertible {
    /// The value itself.
    public var predicateValue: StoreValue { self }
}

extension Int: PredicateValueConvertible {
    /// An ``StoreValue/integer64(_:)``, like an integer literal in the string syntax.
    public var predicateValue: StoreValue { .integer64(Int64(self)) }
}

extension Int64: PredicateValueConvertible {
    /// An ``StoreValue/integer64(_:)``.
    public var predicateValue: StoreValue { .integer64(self) }
}

extension Int32: PredicateValueConvertible {
    /// An ``StoreValue/integer32(_:)``; comparisons are numeric, so it matches any integer attribute.
    public var predicateValue: StoreValue { .integer32(self) }
}

extension Int16: PredicateValueConvertible {
    /// An ``StoreValue/integer16(_:)``; comparisons are numeric, so it matches any integer attribute.
    public var predicateValue: StoreValue { .integer16(self) }
}

extension Double: PredicateValueConvertible {
    /// A ``StoreValue/double(_:)``, like a decimal literal in the string syntax.
    public var predicateValue: StoreValue { .double(self) }
}

extension Float: PredicateValueConvertible {
    /// A ``StoreValue/float(_:)``.
    public var predicateValue: StoreValue { .float(self) }
}

extension Decimal: PredicateValueConvertible {
    /// A ``StoreValue/decimal(_:)``.
    public var predicateValue: StoreValue { .decimal(self) }
}

extension String: PredicateValueConvertible {
    /// A ``StoreValue/string(_:)``.
    public var predicateValue: StoreValue { .string(self) }
}

extension Bool: PredicateValueConvertible {
    /// A ``StoreValue/boolean(_:)``.
    public var predicateValue: StoreValue { .boolean(self) }
}

extension Date: PredicateValueConvertible {
    /// A ``StoreValue/date(_:)``.
    public var predicateValue: StoreValue { .date(self) }
}

extension UUID: PredicateValueConvertible {
    /// A ``StoreValue/uuid(_:)``.
    public var predicateValue: StoreValue { .uuid(self) }
}

extension Data: PredicateValueConvertible {
    /// A ``StoreValue/binary(_:)``.
    public var predicateValue: StoreValue { .binary(self) }
}

extension URL: PredicateValueConvertible {
    /// A ``StoreValue/uri(_:)``.
    public var predicateValue: StoreValue { .uri(self) }
}

extension Optional: PredicateValueConvertible where Wrapped: PredicateValueConvertible {
    /// The wrapped value's, or ``StoreValue/null`` for `nil`, so optionals compare as the string syntax's `nil`.
    public var predicateValue: StoreValue { self?.predicateValue ?? .null }
}

/// The left side of a comparison built in Swift: a key path (``Key``) or a quantified key path
/// (``QuantifiedKey``, from ``Key/any(_:)``, ``Key/all(_:)`` and ``Key/none(_:)``).
///
/// Every operator and method here builds one ``FetchPredicate/comparison(_:_:_:_:)`` with this subject on the left.
public protocol PredicateSubject: Sendable {
    /// The predicate comparing this subject with `rhs`.
    func comparison(_ op: ComparisonOperator, _ rhs: FetchExpression, options: ComparisonOptions) -> FetchPredicate
}

/// A key path to compare, named as in the string syntax: `Key("title")`, `Key("author.name")`,
/// `Key("tags").count`, `Key("self")`.
///
/// ```swift
/// let p = Key("pages") > 300 && Key("title").beginsWith("D", options: .caseInsensitive)
/// // same as try FetchPredicate("pages > 300 AND title BEGINSWITH[c] \"D\"")
/// ```
///
/// `Key` is deliberately not `Equatable`: `Key("a") == Key("b")` builds a predicate comparing two key paths rather
/// than asking whether the keys are the same.
public struct Key: PredicateSubject {
    /// The key path's components.
    public let components: [String]

    /// A key path written with dots (`author.name`). A leading `self.` is dropped, as the parser does.
    public init(_ path: String) {
        self.init(components: path.split(separator: ".", omittingEmptySubsequences: false).map(String.init))
    }

    /// A key path from its components, for keys that contain dots.
    public init(components: [String]) {
        self.components = components.count > 1 && components.first == "self" ? Array(components.dropFirst()) : components
    }

    /// The number of records in this to-many relationship (`tags.@count`).
    public var count: Key { Key(components: components + ["@count"]) }

    /// The key path as an expression.
    public var expression: FetchExpression { .keyPath(components) }

    /// `ANY key.subpath`: the comparison holds for at least one record of this to-many relationship.
    /// Without a sub-path it compares the related records' primary keys.
    public func any(_ subpath: String? = nil) -> QuantifiedKey {
        QuantifiedKey(quantifier: .any, components: components + Self.split(subpath))
    }

    /// `ALL key.subpath`: the comparison holds for every record of this to-many relationship (and for none
    /// when it is empty).
    public func all(_ subpath: String? = nil) -> QuantifiedKey {
        QuantifiedKey(quantifier: .all, components: components + Self.split(subpath))
    }

    /// `NONE key.subpath`, that is `NOT ANY key.subpath`: no record of this to-many relationship matches.
    public func none(_ subpath: String? = nil) -> QuantifiedKey {
        QuantifiedKey(quantifier: .notAny, components: components + Self.split(subpath))
    }

    private static func split(_ subpath: String?) -> [String] {
        subpath.map { $0.split(separator: ".", omittingEmptySubsequences: false).map(String.init) } ?? []
    }

    /// The comparison `self op rhs`.
    public func comparison(_ op: ComparisonOperator, _ rhs: FetchExpression, options: ComparisonOptions) -> FetchPredicate {
        .comparison(.keyPath(components), op, rhs, options)
    }
}

/// A key path under `ANY`, `ALL` or `NONE`, made by ``Key/any(_:)``, ``Key/all(_:)`` or ``Key/none(_:)``.
public struct QuantifiedKey: PredicateSubject {
    /// How the comparison applies to the related records.
    public enum Quantifier: Sendable, Hashable {
        /// At least one related record matches.
        case any
        /// Every related record matches.
        case all
        /// No related record matches (`NONE`, that is `NOT ANY`).
        case notAny
    }

    /// The quantifier.
    public let quantifier: Quantifier
    /// The key path, starting at the to-many relationship.
    public let components: [String]

    /// The comparison under the quantifier; `NONE` becomes `NOT (ANY …)`, as the parser makes it.
    public func comparison(_ op: ComparisonOperator, _ rhs: FetchExpression, options: ComparisonOptions) -> FetchPredicate {
        switch quantifier {
        case .any: .comparison(.any(components), op, rhs, options)
        case .all: .comparison(.all(components), op, rhs, options)
        case .notAny: .not(.comparison(.any(components), op, rhs, options))
        }
    }
}

// MARK: Operators

extension PredicateSubject {
    /// `key == value`; `Key("author") == nil` tests for a missing value or link.
    public static func == (lhs: Self, rhs: StoreValue) -> FetchPredicate { lhs.comparison(.equal, .constant(rhs), options: []) }
    /// `key != value`.
    public static func != (lhs: Self, rhs: StoreValue) -> FetchPredicate { lhs.comparison(.notEqual, .constant(rhs), options: []) }
    /// `key < value`.
    public static func < (lhs: Self, rhs: StoreValue) -> FetchPredicate { lhs.comparison(.less, .constant(rhs), options: []) }
    /// `key <= value`.
    public static func <= (lhs: Self, rhs: StoreValue) -> FetchPredicate { lhs.comparison(.lessOrEqual, .constant(rhs), options: []) }
    /// `key > value`.
    public static func > (lhs: Self, rhs: StoreValue) -> FetchPredicate { lhs.comparison(.greater, .constant(rhs), options: []) }
    /// `key >= value`.
    public static func >= (lhs: Self, rhs: StoreValue) -> FetchPredicate { lhs.comparison(.greaterOrEqual, .constant(rhs), options: []) }

    /// `key == value` for a plain Swift value (`Int`, `String`, `Date`, `UUID`, an optional, …).
    public static func == <V: PredicateValueConvertible>(lhs: Self, rhs: V) -> FetchPredicate { lhs == rhs.predicateValue }
    /// `key != value` for a plain Swift value.
    public static func != <V: PredicateValueConvertible>(lhs: Self, rhs: V) -> FetchPredicate { lhs != rhs.predicateValue }
    /// `key < value` for a plain Swift value.
    public static func < <V: PredicateValueConvertible>(lhs: Self, rhs: V) -> FetchPredicate { lhs < rhs.predicateValue }
    /// `key <= value` for a plain Swift value.
    public static func <= <V: PredicateValueConvertible>(lhs: Self, rhs: V) -> FetchPredicate { lhs <= rhs.predicateValue }
    /// `key > value` for a plain Swift value.
    public static func > <V: PredicateValueConvertible>(lhs: Self, rhs: V) -> FetchPredicate { lhs > rhs.predicateValue }
    /// `key >= value` for a plain Swift value.
    public static func >= <V: PredicateValueConvertible>(lhs: Self, rhs: V) -> FetchPredicate { lhs >= rhs.predicateValue }

    /// `key == otherKey`: compares two key paths of the same record.
    public static func == (lhs: Self, rhs: Key) -> FetchPredicate { lhs.comparison(.equal, rhs.expression, options: []) }
    /// `key != otherKey`.
    public static func != (lhs: Self, rhs: Key) -> FetchPredicate { lhs.comparison(.notEqual, rhs.expression, options: []) }
    /// `key < otherKey`.
    public static func < (lhs: Self, rhs: Key) -> FetchPredicate { lhs.comparison(.less, rhs.expression, options: []) }
    /// `key <= otherKey`.
    public static func <= (lhs: Self, rhs: Key) -> FetchPredicate { lhs.comparison(.lessOrEqual, rhs.expression, options: []) }
    /// `key > otherKey`.
    public static func > (lhs: Self, rhs: Key) -> FetchPredicate { lhs.comparison(.greater, rhs.expression, options: []) }
    /// `key >= otherKey`.
    public static func >= (lhs: Self, rhs: Key) -> FetchPredicate { lhs.comparison(.greaterOrEqual, rhs.expression, options: []) }
}

// MARK: Named comparisons

extension PredicateSubject {
    /// `key ==[options] value`: equality with `[c]`/`[d]` folding, which the `==` operator cannot take.
    public func equals(_ value: StoreValue, options: ComparisonOptions = []) -> FetchPredicate {
        comparison(.equal, .constant(value), options: options)
    }

    /// `key !=[options] value`.
    public func notEquals(_ value: StoreValue, options: ComparisonOptions = []) -> FetchPredicate {
        comparison(.notEqual, .constant(value), options: options)
    }

    /// `key BEGINSWITH[options] prefix`.
    public func beginsWith(_ prefix: String, options: ComparisonOptions = []) -> FetchPredicate {
        comparison(.beginsWith, .constant(.string(prefix)), options: options)
    }

    /// `key ENDSWITH[options] suffix`.
    public func endsWith(_ suffix: String, options: ComparisonOptions = []) -> FetchPredicate {
        comparison(.endsWith, .constant(.string(suffix)), options: options)
    }

    /// `key CONTAINS[options] substring`. On a key path through a to-many relationship it asks whether any
    /// related value equals `substring` instead.
    public func contains(_ substring: String, options: ComparisonOptions = []) -> FetchPredicate {
        comparison(.contains, .constant(.string(substring)), options: options)
    }

    /// `key CONTAINS value` for a non-string value, as in `Key("tags.rank").contains(3)`: membership in the
    /// values reached through a to-many relationship.
    public func contains(_ value: StoreValue, options: ComparisonOptions = []) -> FetchPredicate {
        comparison(.contains, .constant(value), options: options)
    }

    /// `key LIKE[options] pattern`, where `*` matches any run of characters and `?` exactly one.
    public func like(_ pattern: String, options: ComparisonOptions = []) -> FetchPredicate {
        comparison(.like, .constant(.string(pattern)), options: options)
    }

    /// `key MATCHES[options] regex`: the whole value matches the ICU regular expression.
    public func matches(_ regex: String, options: ComparisonOptions = []) -> FetchPredicate {
        comparison(.matches, .constant(.string(regex)), options: options)
    }

    /// `key IN {values}`.
    public func `in`(_ values: [StoreValue], options: ComparisonOptions = []) -> FetchPredicate {
        comparison(.in, .list(values), options: options)
    }

    /// `key IN {values}` for plain Swift values (`Key("rating").in([1, 2])`).
    public func `in`<V: PredicateValueConvertible>(_ values: [V], options: ComparisonOptions = []) -> FetchPredicate {
        self.in(values.map(\.predicateValue), options: options)
    }

    /// `key IN otherKey`: membership in the values another key path reaches (through a to-many relationship).
    public func `in`(_ collection: Key, options: ComparisonOptions = []) -> FetchPredicate {
        comparison(.in, collection.expression, options: options)
    }

    /// `key BETWEEN {low, high}`: both bounds included.
    public func between(_ low: StoreValue, and high: StoreValue, options: ComparisonOptions = []) -> FetchPredicate {
        comparison(.between, .list([low, high]), options: options)
    }

    /// `key BETWEEN {low, high}` for a closed range of plain Swift values (`Key("pages").between(100...200)`).
    public func between<V: PredicateValueConvertible & Comparable>(_ range: ClosedRange<V>, options: ComparisonOptions = [])
        -> FetchPredicate
    {
        between(range.lowerBound.predicateValue, and: range.upperBound.predicateValue, options: options)
    }
}

// MARK: Logic

extension FetchPredicate {
    /// Both predicates hold. A chain `a && b && c` builds one ``and(_:)`` of three, as `a AND b AND c` parses.
    public static func && (lhs: FetchPredicate, rhs: FetchPredicate) -> FetchPredicate {
        if case .and(let items) = lhs, items.count > 1 { return .and(items + [rhs]) }
        return .and([lhs, rhs])
    }

    /// Either predicate holds. A chain `a || b || c` builds one ``or(_:)`` of three, as `a OR b OR c` parses.
    public static func || (lhs: FetchPredicate, rhs: FetchPredicate) -> FetchPredicate {
        if case .or(let items) = lhs, items.count > 1 { return .or(items + [rhs]) }
        return .or([lhs, rhs])
    }

    /// The predicate does not hold.
    public static prefix func ! (operand: FetchPredicate) -> FetchPredicate { .not(operand) }
}
