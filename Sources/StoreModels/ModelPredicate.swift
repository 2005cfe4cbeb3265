import StoreAPI

/// A predicate over a model type, built from its key paths, so that a misspelt property or a value of the wrong
/// type does not compile:
///
/// ```swift
/// let long: ModelPredicate<Book> = \.pages > 300 && .beginsWith(\.title, "The", options: .caseInsensitive)
/// ```
///
/// It becomes the framework's ``FetchPredicate`` (the SQLite and Core Data stores translate it to SQL where they
/// can). A key path to a property that is not stored (a computed one) is refused when the fetch runs, naming it.
public struct ModelPredicate<Model: PersistentModel>: Sendable {
    /// The predicate, or why the key paths could not make one.
    let built: Result<FetchPredicate, StoreError>

    /// A predicate in the framework's form, for what key paths cannot say (key paths through relationships,
    /// `ANY`/`ALL`): `ModelPredicate(try FetchPredicate("author.name BEGINSWITH %@", arguments: ["Le"]))`.
    public init(_ predicate: FetchPredicate) {
        built = .success(predicate)
    }

    init(_ built: Result<FetchPredicate, StoreError>) {
        self.built = built
    }

    /// The framework's predicate.
    public func fetchPredicate() throws -> FetchPredicate { try built.get() }

    /// Every record.
    public static var all: ModelPredicate { ModelPredicate(.true) }

    static func key(_ keyPath: PartialKeyPath<Model>) -> Result<Key, StoreError> {
        guard let name = Model.propertyName(for: keyPath) else {
            return .failure(.invalidArgument("\(keyPath) is not a stored property of \(Model.entityName)"))
        }
        return .success(Key(name))
    }

    static func compare(
        _ keyPath: PartialKeyPath<Model>, _ op: ComparisonOperator, _ value: some ModelValue,
        options: ComparisonOptions = []
    ) -> ModelPredicate {
        ModelPredicate(key(keyPath).flatMap { key in
            do {
                return .success(key.comparison(op, .constant(try value.storeValue), options: options))
            } catch {
                return .failure(.invalidArgument("\(keyPath): the value cannot be stored: \(error)"))
            }
        })
    }

    /// Both predicates hold.
    public static func && (lhs: ModelPredicate, rhs: ModelPredicate) -> ModelPredicate {
        ModelPredicate(lhs.built.flatMap { l in rhs.built.map { r in l && r } })
    }

    /// Either predicate holds.
    public static func || (lhs: ModelPredicate, rhs: ModelPredicate) -> ModelPredicate {
        ModelPredicate(lhs.built.flatMap { l in rhs.built.map { r in l || r } })
    }

    /// The predicate does not hold.
    public static prefix func ! (operand: ModelPredicate) -> ModelPredicate {
        ModelPredicate(operand.built.map { !$0 })
    }

    /// The string property begins with `prefix` (`BEGINSWITH`).
    public static func beginsWith(
        _ keyPath: KeyPath<Model, String>, _ prefix: String, options: ComparisonOptions = []
    ) -> ModelPredicate {
        compare(keyPath, .beginsWith, prefix, options: options)
    }

    /// The string property ends with `suffix` (`ENDSWITH`).
    public static func endsWith(
        _ keyPath: KeyPath<Model, String>, _ suffix: String, options: ComparisonOptions = []
    ) -> ModelPredicate {
        compare(keyPath, .endsWith, suffix, options: options)
    }

    /// The string property contains `substring` (`CONTAINS`).
    public static func contains(
        _ keyPath: KeyPath<Model, String>, _ substring: String, options: ComparisonOptions = []
    ) -> ModelPredicate {
        compare(keyPath, .contains, substring, options: options)
    }

    /// The string property matches `pattern`, where `*` is any run of characters and `?` one (`LIKE`).
    public static func like(
        _ keyPath: KeyPath<Model, String>, _ pattern: String, options: ComparisonOptions = []
    ) -> ModelPredicate {
        compare(keyPath, .like, pattern, options: options)
    }

    /// The string property equals `value` with case or diacritics folded (`==[cd]`).
    public static func equals(
        _ keyPath: KeyPath<Model, String>, _ value: String, options: ComparisonOptions
    ) -> ModelPredicate {
        compare(keyPath, .equal, value, options: options)
    }

    /// The property's value is one of `values` (`IN`).
    public static func isIn<V: ModelValue>(_ keyPath: KeyPath<Model, V>, _ values: [V]) -> ModelPredicate {
        ModelPredicate(key(keyPath).flatMap { key in
            do {
                return .success(key.in(try values.map { try $0.storeValue }))
            } catch {
                return .failure(.invalidArgument("\(keyPath): a value cannot be stored: \(error)"))
            }
        })
    }
}

extension KeyPath where Root: PersistentModel {
    /// The property equals the value.
    public static func == (lhs: KeyPath, rhs: Value) -> ModelPredicate<Root> where Value: ModelValue & Equatable {
        .compare(lhs, .equal, rhs)
    }

    /// The property differs from the value.
    public static func != (lhs: KeyPath, rhs: Value) -> ModelPredicate<Root> where Value: ModelValue & Equatable {
        .compare(lhs, .notEqual, rhs)
    }

    /// The property is less than the value.
    public static func < (lhs: KeyPath, rhs: Value) -> ModelPredicate<Root> where Value: ModelValue & Comparable {
        .compare(lhs, .less, rhs)
    }

    /// The property is at most the value.
    public static func <= (lhs: KeyPath, rhs: Value) -> ModelPredicate<Root> where Value: ModelValue & Comparable {
        .compare(lhs, .lessOrEqual, rhs)
    }

    /// The property is greater than the value.
    public static func > (lhs: KeyPath, rhs: Value) -> ModelPredicate<Root> where Value: ModelValue & Comparable {
        .compare(lhs, .greater, rhs)
    }

    /// The property is at least the value.
    public static func >= (lhs: KeyPath, rhs: Value) -> ModelPredicate<Root> where Value: ModelValue & Comparable {
        .compare(lhs, .greaterOrEqual, rhs)
    }

    /// The optional property is less than the value (`nil` never is).
    public static func < <V: ModelValue & Comparable>(lhs: KeyPath, rhs: V) -> ModelPredicate<Root> where Value == V? {
        .compare(lhs, .less, rhs)
    }

    /// The optional property is at most the value (`nil` never is).
    public static func <= <V: ModelValue & Comparable>(lhs: KeyPath, rhs: V) -> ModelPredicate<Root> where Value == V? {
        .compare(lhs, .lessOrEqual, rhs)
    }

    /// The optional property is greater than the value (`nil` never is).
    public static func > <V: ModelValue & Comparable>(lhs: KeyPath, rhs: V) -> ModelPredicate<Root> where Value == V? {
        .compare(lhs, .greater, rhs)
    }

    /// The optional property is at least the value (`nil` never is).
    public static func >= <V: ModelValue & Comparable>(lhs: KeyPath, rhs: V) -> ModelPredicate<Root> where Value == V? {
        .compare(lhs, .greaterOrEqual, rhs)
    }
}

/// A sort order over a model type's property: `.ascending(\.title)`, `.descending(\.pages)`.
public struct ModelSort<Model: PersistentModel>: Sendable {
    let built: Result<SortKey, StoreError>

    /// Smallest value first.
    public static func ascending(_ keyPath: PartialKeyPath<Model>) -> ModelSort {
        ModelSort(built: ModelPredicate<Model>.key(keyPath).map { SortKey($0.components.joined(separator: "."), ascending: true) })
    }

    /// Largest value first.
    public static func descending(_ keyPath: PartialKeyPath<Model>) -> ModelSort {
        ModelSort(built: ModelPredicate<Model>.key(keyPath).map { SortKey($0.components.joined(separator: "."), ascending: false) })
    }
}

extension FetchRequest {
    /// The request for `model`'s records matching `predicate`, sorted, sliced.
    init<M: PersistentModel>(
        _ model: M.Type, where predicate: ModelPredicate<M>?, sortedBy sort: [ModelSort<M>], offset: Int = 0,
        limit: Int? = nil
    ) throws {
        self.init(entity: M.entityName, predicate: try predicate?.built.get(),
                  sortDescriptors: try sort.map { try $0.built.get() }, offset: offset, limit: limit)
    }
}
