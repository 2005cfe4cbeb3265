import Foundation

/// A summary of records instead of the records: sums, minimums, maximums, averages and counts, per group of
/// records that share values (Core Data's `NSFetchRequest` with `propertiesToGroupBy` and expression
/// descriptions), or the distinct values of attributes.
///
/// ```swift
/// // Pages per genre, among books published since 2000: one row per genre, in ascending genre order.
/// let rows = try context.aggregate(AggregateRequest(
///     entity: "Book", predicate: try FetchPredicate("year >= 2000"), groupBy: ["genre"],
///     aggregates: [.count, .sum("pages")]))
/// // rows[0].group == [.string("essay")], rows[0].values == [.integer64(3), .integer64(912)]
/// ```
///
/// **Rows.** Without ``groupBy``, exactly one row (with an empty ``AggregateRow/group``), even when no record
/// matches. With it, one row per distinct combination of the grouped values among the matching records — none when
/// no record matches — ordered by those values as a sort on them orders records (nil first, then NaN, then
/// ascending). Values are grouped by the predicates' equality, so `nil` is a group of its own and `0.0` and `-0.0`
/// are one group. With no ``aggregates``, the rows are the distinct values of the ``groupBy`` key paths.
///
/// **Result types** (see ``AggregateFunction``) are the same on every backend: a count is an
/// ``StoreValue/integer64(_:)``; a sum is an ``StoreValue/integer64(_:)`` over integer and Boolean attributes, a
/// ``StoreValue/double(_:)`` over double and float attributes and a ``StoreValue/decimal(_:)`` over decimal ones;
/// an average is a ``StoreValue/double(_:)`` (a ``StoreValue/decimal(_:)`` over decimal attributes); a minimum or
/// maximum is a value of the attribute's own type.
///
/// **Nil, NaN and empty sets.** `nil` values are left out of every function but ``AggregateFunction/count``. The
/// sum of no values is zero (of the sum's type); the average, minimum and maximum of no values are
/// ``StoreValue/null``. A NaN makes a sum and an average NaN; minimums and maximums skip NaN, as comparisons in
/// predicates do. A sum of integers that does not fit 64 bits is an error, never a wrapped or rounded number.
/// Floating-point sums may differ in their last bits between backends, which add in different orders.
public struct AggregateRequest: Sendable, Hashable {
    /// The entity whose records are summarized.
    public var entity: String
    /// Which records count, or `nil` for every record.
    public var predicate: FetchPredicate?
    /// The key paths whose values form the groups: attributes, to-one relationships (grouping by the related
    /// record), paths through to-one relationships (`author.name`), `rel.@count`. Empty for one group of all.
    public var groupBy: [String]
    /// What to compute for each group, in the order of ``AggregateRow/values``.
    public var aggregates: [AggregateFunction]
    /// Whether records of sub-entities are included.
    public var includesSubentities: Bool

    /// Creates an aggregate request.
    public init(
        entity: String, predicate: FetchPredicate? = nil, groupBy: [String] = [], aggregates: [AggregateFunction] = [],
        includesSubentities: Bool = true
    ) {
        self.entity = entity
        self.predicate = predicate
        self.groupBy = groupBy
        self.aggregates = aggregates
        self.includesSubentities = includesSubentities
    }

    /// The distinct values of `keyPaths` among the records matching `predicate` (Core Data's
    /// `returnsDistinctResults` over `propertiesToFetch`), in ascending order.
    public static func distinct(
        _ entity: String, _ keyPaths: [String], predicate: FetchPredicate? = nil, includesSubentities: Bool = true
    ) -> AggregateRequest {
        AggregateRequest(entity: entity, predicate: predicate, groupBy: keyPaths, includesSubentities: includesSubentities)
    }

    /// The fetch of the records the request summarizes.
    public var fetchRequest: FetchRequest {
        FetchRequest(entity: entity, predicate: predicate, includesSubentities: includesSubentities)
    }
}

/// One computed value of an ``AggregateRequest``.
public enum AggregateFunction: Sendable, Hashable {
    /// The number of records, `nil` values included: an ``StoreValue/integer64(_:)``.
    case count
    /// The sum of an attribute's values: integers and Booleans (true is 1) sum to an ``StoreValue/integer64(_:)``,
    /// doubles and floats to a ``StoreValue/double(_:)``, decimals to a ``StoreValue/decimal(_:)``. Zero when there
    /// are no values.
    case sum(String)
    /// The smallest value of a numeric, Boolean, date or string attribute (strings by Unicode scalars, as
    /// predicates order them), of the attribute's type; ``StoreValue/null`` when there are no values.
    case min(String)
    /// The largest value, as ``AggregateFunction/min(_:)``.
    case max(String)
    /// The mean of a numeric or Boolean attribute's values: a ``StoreValue/double(_:)``, or a
    /// ``StoreValue/decimal(_:)`` for decimal attributes; ``StoreValue/null`` when there are no values.
    case average(String)

    /// The attribute the function reads; `nil` for ``AggregateFunction/count``.
    public var attribute: String? {
        switch self {
        case .count: nil
        case .sum(let a), .min(let a), .max(let a), .average(let a): a
        }
    }
}

/// One group of an ``AggregateRequest``'s result.
public struct AggregateRow: Sendable, Hashable {
    /// The group's values of ``AggregateRequest/groupBy``, in its order.
    public var group: [StoreValue]
    /// The values of ``AggregateRequest/aggregates``, in its order.
    public var values: [StoreValue]

    /// Creates a row.
    public init(group: [StoreValue], values: [StoreValue]) {
        self.group = group
        self.values = values
    }
}
