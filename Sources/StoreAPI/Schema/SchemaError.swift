import Foundation

/// Why a schema is invalid. Every case names the entity (and property) at fault.
public enum SchemaError: Error, Sendable, Hashable, CustomStringConvertible {
    /// Two entities share a name.
    case duplicateEntity(String)
    /// Two properties of an entity share a name, counting inherited ones and attributes and relationships alike.
    case duplicateProperty(entity: String, property: String)
    /// An entity (`property` nil) or property has an empty name.
    case invalidName(entity: String, property: String?)
    /// An entity inherits from an entity the schema does not define.
    case unknownParent(entity: String, parent: String)
    /// An entity is its own ancestor.
    case inheritanceCycle(entity: String)
    /// A relationship points to an entity the schema does not define.
    case unknownDestination(entity: String, relationship: String, destination: String)
    /// A relationship's inverse is missing, names a different relationship, points elsewhere, or differs in being transient.
    case inverseMismatch(entity: String, relationship: String, reason: String)
    /// A relationship's min/max counts are negative, inverted, or above 1 on a to-one relationship.
    case invalidCount(entity: String, relationship: String)
    /// An attribute's default value is not a value of its type.
    case defaultValueMismatch(entity: String, attribute: String, type: AttributeType)
    /// A uniqueness constraint is empty or names something that is not a stored attribute of the entity.
    case invalidUniquenessConstraint(entity: String, attribute: String)
    /// A fetch index has no name or no elements, shares its name with another of the entity's, or names something
    /// that is not a property of the entity; `reason` says which.
    case invalidFetchIndex(entity: String, index: String, reason: String)
    /// A configuration lists an entity the schema does not define.
    case unknownConfigurationMember(configuration: String, entity: String)
    /// An attribute names a type this framework does not know.
    case unknownAttributeType(entity: String, attribute: String, type: String)
    /// A model file or JSON document could not be read; `file` names it.
    case unreadableModel(file: String, reason: String)
    /// A model file was read but describes an invalid schema: `file` names it and `error` says what is wrong.
    /// Loaders wrap validation errors in this case so that every error names the file; ``rootCause`` unwraps it.
    indirect case invalidModel(file: String, error: SchemaError)

    /// The error without the file that ``invalidModel(file:error:)`` adds, for callers that match on the cause.
    public var rootCause: SchemaError {
        if case .invalidModel(_, let inner) = self { return inner.rootCause }
        return self
    }

    /// A sentence naming the file, entity and property at fault.
    public var description: String {
        switch self {
        case .duplicateEntity(let e): "schema: entity '\(e)' is defined twice"
        case .duplicateProperty(let e, let p): "schema: entity '\(e)' has two properties named '\(p)' (inherited ones included)"
        case .invalidName(let e, let p): "schema: entity '\(e)' has an empty \(p == nil ? "name" : "property name")"
        case .unknownParent(let e, let p): "schema: entity '\(e)' inherits from unknown entity '\(p)'"
        case .inheritanceCycle(let e): "schema: entity '\(e)' inherits from itself"
        case .unknownDestination(let e, let r, let d): "schema: relationship '\(e).\(r)' points to unknown entity '\(d)'"
        case .inverseMismatch(let e, let r, let why): "schema: relationship '\(e).\(r)' has a bad inverse: \(why)"
        case .invalidCount(let e, let r): "schema: relationship '\(e).\(r)' has an invalid min/max count"
        case .defaultValueMismatch(let e, let a, let t): "schema: default value of '\(e).\(a)' is not a \(t.rawValue)"
        case .invalidUniquenessConstraint(let e, let a):
            "schema: uniqueness constraint of '\(e)' names '\(a)', which is not a stored attribute"
        case .invalidFetchIndex(let e, let i, let why): "schema: fetch index '\(i)' of '\(e)' is invalid: \(why)"
        case .unknownConfigurationMember(let c, let e): "schema: configuration '\(c)' names unknown entity '\(e)'"
        case .unknownAttributeType(let e, let a, let t): "schema: attribute '\(e).\(a)' has unknown type '\(t)'"
        case .unreadableModel(let f, let why): "\(f): \(why)"
        case .invalidModel(let f, let inner): "\(f): \(inner.description)"
        }
    }
}
