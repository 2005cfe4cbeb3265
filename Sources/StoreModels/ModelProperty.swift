import StoreAPI

/// One stored property of a ``PersistentModel``: an attribute or a relationship, as the schema describes it.
/// ``Model(_:)`` writes these; use the static functions to write them by hand.
public struct ModelProperty: Sendable {
    /// What the property is.
    public enum Kind: Sendable {
        /// An attribute, and whether its value is unique among the entity's records.
        case attribute(AttributeDescription, unique: Bool)
        /// A relationship.
        case relationship(RelationshipDescription)
    }

    /// What the property is.
    public let kind: Kind

    /// The stored name.
    public var name: String {
        switch kind {
        case .attribute(let a, _): a.name
        case .relationship(let r): r.name
        }
    }

    /// An attribute of a ``ModelValue`` type.
    ///
    /// `defaultValue` is the schema's default: what records written before the attribute existed read after a
    /// schema upgrade, so that a required attribute can be added to a model with existing stores. ``Model(_:)``
    /// passes a property's initial value when it is a constant (a literal or an enum case), never an expression
    /// evaluated per instance such as `Date()`.
    public static func attribute<T: ModelValue>(
        _ name: String, _ type: T.Type, indexed: Bool = false, unique: Bool = false, default defaultValue: T? = nil
    ) -> ModelProperty {
        let stored = defaultValue.flatMap { try? $0.storeValue }
        return ModelProperty(kind: .attribute(
            AttributeDescription(name: name, type: T.attributeType, isOptional: T.isOptionalValue,
                                 defaultValue: stored?.isNull == true ? nil : stored, isIndexed: indexed),
            unique: unique))
    }

    /// A to-one relationship to `destination`'s records.
    public static func toOne<M: PersistentModel>(
        _ name: String, _ destination: M.Type, optional: Bool = true, inverse: String? = nil,
        deleteRule: DeleteRule = .nullify
    ) -> ModelProperty {
        ModelProperty(kind: .relationship(RelationshipDescription(
            name: name, destination: M.entityName, inverse: inverse, isToMany: false, deleteRule: deleteRule,
            isOptional: optional, minCount: optional ? 0 : 1)))
    }

    /// A to-many relationship to `destination`'s records, ordered or not.
    public static func toMany<M: PersistentModel>(
        _ name: String, _ destination: M.Type, ordered: Bool = false, inverse: String? = nil,
        deleteRule: DeleteRule = .nullify
    ) -> ModelProperty {
        ModelProperty(kind: .relationship(RelationshipDescription(
            name: name, destination: M.entityName, inverse: inverse, isToMany: true, isOrdered: ordered,
            deleteRule: deleteRule)))
    }
}
