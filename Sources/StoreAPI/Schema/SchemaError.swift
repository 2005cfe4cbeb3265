import Foundation

/// Why a schema is invalid. Every case names the entity (and property) at fault.
public enum SchemaError: Error, Sendable, Hashable, CustomStringConvertible {
    case duplicateEntity(String)
    case duplicateProperty(entity: String, property: String)
    case invalidName(entity: String, property: String?)
    case unknownParent(entity: String, parent: String)
    case inheritanceCycle(entity: String)
    case unknownDestination(entity: String, relationship: String, destination: String)
    case inverseMismatch(entity: String, relationship: String, reason: String)
    case invalidCount(entity: String, relationship: String)
    case defaultValueMismatch(entity: String, attribute: String, type: AttributeType)
    case invalidUniquenessConstraint(entity: String, attribute: String)
    case unknownConfigurationMember(configuration: String, entity: String)
    case unknownAttributeType(entity: String, attribute: String, type: String)
    /// A model file or JSON document could not be read; `file` names it.
    case unreadableModel(file: String, reason: String)

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
        case .unknownConfigurationMember(let c, let e): "schema: configuration '\(c)' names unknown entity '\(e)'"
        case .unknownAttributeType(let e, let a, let t): "schema: attribute '\(e).\(a)' has unknown type '\(t)'"
        case .unreadableModel(let f, let why): "\(f): \(why)"
        }
    }
}
