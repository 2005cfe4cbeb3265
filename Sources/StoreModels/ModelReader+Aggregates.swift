import Foundation
import StoreAPI

/// A numeric property type that can be summed and averaged (``ModelReader/sum(_:where:)``): integers sum to
/// `Int` (or `Int64`), `Double` and `Float` to `Double`, `Decimal` to `Decimal`; optionals as their wrapped type.
public protocol ModelSummable: ModelValue {
    /// The type of a sum of values of this type.
    associatedtype Sum: ModelValue
    /// The type of an average of values of this type.
    associatedtype Average: ModelValue
}

extension Int: ModelSummable {
    /// Sums are `Int`.
    public typealias Sum = Int
    /// Averages are `Double`.
    public typealias Average = Double
}

extension Int64: ModelSummable {
    /// Sums are `Int64`.
    public typealias Sum = Int64
    /// Averages are `Double`.
    public typealias Average = Double
}

extension Int32: ModelSummable {
    /// Sums are `Int`, which holds any sum the store can compute.
    public typealias Sum = Int
    /// Averages are `Double`.
    public typealias Average = Double
}

extension Int16: ModelSummable {
    /// Sums are `Int`.
    public typealias Sum = Int
    /// Averages are `Double`.
    public typealias Average = Double
}

extension Double: ModelSummable {
    /// Sums are `Double`.
    public typealias Sum = Double
    /// Averages are `Double`.
    public typealias Average = Double
}

extension Float: ModelSummable {
    /// Sums are `Double` (added in double precision).
    public typealias Sum = Double
    /// Averages are `Double`.
    public typealias Average = Double
}

extension Decimal: ModelSummable {
    /// Sums are exact `Decimal`s.
    public typealias Sum = Decimal
    /// Averages are `Decimal`s.
    public typealias Average = Decimal
}

extension Optional: ModelSummable where Wrapped: ModelSummable {
    /// The wrapped type's sum (`nil` values are left out).
    public typealias Sum = Wrapped.Sum
    /// The wrapped type's average.
    public typealias Average = Wrapped.Average
}

/// One group of a grouped aggregate: the grouped property's value and what was computed for it.
public struct ModelGroup<Key: Sendable, Value: Sendable>: Sendable {
    /// The value the group's models share.
    public var key: Key
    /// The count, sum or other value computed over the group.
    public var value: Value

    /// Creates a group.
    public init(key: Key, value: Value) {
        self.key = key
        self.value = value
    }
}

extension ModelGroup: Equatable where Key: Equatable, Value: Equatable {}
extension ModelGroup: Hashable where Key: Hashable, Value: Hashable {}

extension ModelReader {
    /// The sum of a property over the models matching `predicate` (zero when none match; `nil` values left out),
    /// computed in the engine where the store can (SQLite, PostgreSQL):
    /// `try await db.read { try $0.sum(\Book.pages, where: \.genre == .essay) }`.
    public func sum<M: PersistentModel, V: ModelSummable>(
        _ keyPath: KeyPath<M, V>, where predicate: ModelPredicate<M>? = nil
    ) throws -> V.Sum {
        let name = try ModelAggregation.name(keyPath)
        return try ModelAggregation.decode(try one(.sum(name), M.self, predicate), as: V.Sum.self, M.self, name)
    }

    /// The average of a property over the models matching `predicate`; `nil` when none has a value.
    public func average<M: PersistentModel, V: ModelSummable>(
        _ keyPath: KeyPath<M, V>, where predicate: ModelPredicate<M>? = nil
    ) throws -> V.Average? {
        try optional(keyPath, { .average($0) }, as: V.Average.self, predicate)
    }

    /// The smallest value of a property among the models matching `predicate`; `nil` when none has a value.
    public func min<M: PersistentModel, V: ModelValue & Comparable>(
        _ keyPath: KeyPath<M, V>, where predicate: ModelPredicate<M>? = nil
    ) throws -> V? {
        try optional(keyPath, { .min($0) }, as: V.self, predicate)
    }

    /// The smallest value of an optional property among the models matching `predicate`; `nil` when none has one.
    public func min<M: PersistentModel, V: ModelValue & Comparable>(
        _ keyPath: KeyPath<M, V?>, where predicate: ModelPredicate<M>? = nil
    ) throws -> V? {
        try optional(keyPath, { .min($0) }, as: V.self, predicate)
    }

    /// The largest value of a property among the models matching `predicate`; `nil` when none has a value.
    public func max<M: PersistentModel, V: ModelValue & Comparable>(
        _ keyPath: KeyPath<M, V>, where predicate: ModelPredicate<M>? = nil
    ) throws -> V? {
        try optional(keyPath, { .max($0) }, as: V.self, predicate)
    }

    /// The largest value of an optional property among the models matching `predicate`; `nil` when none has one.
    public func max<M: PersistentModel, V: ModelValue & Comparable>(
        _ keyPath: KeyPath<M, V?>, where predicate: ModelPredicate<M>? = nil
    ) throws -> V? {
        try optional(keyPath, { .max($0) }, as: V.self, predicate)
    }

    /// The distinct values of a property among the models matching `predicate`, in ascending order (`nil` first).
    public func distinct<M: PersistentModel, V: ModelValue>(
        _ keyPath: KeyPath<M, V>, where predicate: ModelPredicate<M>? = nil
    ) throws -> [V] {
        let name = try ModelAggregation.name(keyPath)
        let rows = try coordinator.aggregate(.distinct(M.entityName, [name], predicate: try predicate?.fetchPredicate()))
        return try rows.map { try ModelAggregation.decode($0.group.first ?? .null, as: V.self, M.self, name) }
    }

    /// The number of models matching `predicate` per value of a property, in ascending order of the value:
    /// `try $0.count(Book.self, groupedBy: \.genre)`.
    public func count<M: PersistentModel, G: ModelValue>(
        _ type: M.Type, groupedBy group: KeyPath<M, G>, where predicate: ModelPredicate<M>? = nil
    ) throws -> [ModelGroup<G, Int>] {
        try grouped(group, .count, predicate) { value in
            guard case .integer64(let n) = value else { return 0 }
            return Int(n)
        }
    }

    /// The sum of a property per value of another, over the models matching `predicate`, in ascending order of the
    /// grouped value: `try $0.sum(\Book.pages, groupedBy: \.genre)`.
    public func sum<M: PersistentModel, V: ModelSummable, G: ModelValue>(
        _ keyPath: KeyPath<M, V>, groupedBy group: KeyPath<M, G>, where predicate: ModelPredicate<M>? = nil
    ) throws -> [ModelGroup<G, V.Sum>] {
        let name = try ModelAggregation.name(keyPath)
        return try grouped(group, .sum(name), predicate) { value in
            try ModelAggregation.decode(value, as: V.Sum.self, M.self, name)
        }
    }

    private func one<M: PersistentModel>(_ function: AggregateFunction, _ type: M.Type, _ predicate: ModelPredicate<M>?)
        throws -> StoreValue
    {
        let rows = try coordinator.aggregate(AggregateRequest(
            entity: M.entityName, predicate: try predicate?.fetchPredicate(), aggregates: [function]))
        return rows.first?.values.first ?? .null
    }

    /// `function` of a property as a `T`; `nil` when no model has a value.
    private func optional<M: PersistentModel, V, T: ModelValue>(
        _ keyPath: KeyPath<M, V>, _ function: (String) -> AggregateFunction, as type: T.Type,
        _ predicate: ModelPredicate<M>?
    ) throws -> T? {
        let name = try ModelAggregation.name(keyPath)
        let value = try one(function(name), M.self, predicate)
        return value.isNull ? nil : try ModelAggregation.decode(value, as: T.self, M.self, name)
    }

    private func grouped<M: PersistentModel, G: ModelValue, T: Sendable>(
        _ group: KeyPath<M, G>, _ function: AggregateFunction, _ predicate: ModelPredicate<M>?,
        _ value: (StoreValue) throws -> T
    ) throws -> [ModelGroup<G, T>] {
        let key = try ModelAggregation.name(group)
        let rows = try coordinator.aggregate(AggregateRequest(
            entity: M.entityName, predicate: try predicate?.fetchPredicate(), groupBy: [key], aggregates: [function]))
        return try rows.map { row in
            ModelGroup(key: try ModelAggregation.decode(row.group.first ?? .null, as: G.self, M.self, key),
                       value: try value(row.values.first ?? .null))
        }
    }
}

/// Key paths to names and stored values back to Swift values, for the aggregate functions.
enum ModelAggregation {
    static func name<M: PersistentModel, V>(_ keyPath: KeyPath<M, V>) throws -> String {
        guard let name = M.propertyName(for: keyPath) else {
            throw StoreError.invalidArgument("\(keyPath) is not a stored property of \(M.entityName)")
        }
        return name
    }

    static func decode<T: ModelValue, M: PersistentModel>(_ value: StoreValue, as type: T.Type, _ model: M.Type, _ name: String)
        throws -> T
    {
        guard let v = T(storeValue: value) else {
            throw StoreError.typeMismatch(entity: M.entityName, property: name, expected: T.attributeType, got: "\(value)")
        }
        return v
    }
}
