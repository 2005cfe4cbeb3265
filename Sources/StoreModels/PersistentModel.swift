import StoreAPI

/// A Swift type stored as the records of one entity. Declare conformance with ``Model(_:)``, which writes every
/// requirement from the type's stored properties.
///
/// Models are values: a fetch returns snapshots that may cross actors and tasks; changing one changes nothing
/// stored until it is passed to ``ModelWriter/update(_:)`` inside ``ModelStore/write(_:)``.
public protocol PersistentModel: Sendable {
    /// The entity's name in the schema.
    static var entityName: String { get }
    /// The stored properties, in declaration order.
    static var modelProperties: [ModelProperty] { get }
    /// The stored name of the property a key path reaches, or `nil` when it is not a stored property.
    static func propertyName(for keyPath: PartialKeyPath<Self>) -> String?
    /// Reads a model from a stored record.
    init(from row: ModelRow) throws
    /// Writes the stored properties, in the order of ``modelProperties``.
    func encode(to row: inout ModelRowWriter)
    /// The record this value was read from or saved as; `nil` until it is inserted.
    var persistentID: PersistentID? { get set }
}

extension PersistentModel {
    /// The entity this type describes, derived from its properties.
    public static var entityDescription: EntityDescription {
        var attributes: [AttributeDescription] = []
        var relationships: [RelationshipDescription] = []
        var unique: [[String]] = []
        for property in modelProperties {
            switch property.kind {
            case .attribute(let a, let isUnique):
                attributes.append(a)
                if isUnique { unique.append([a.name]) }
            case .relationship(let r):
                relationships.append(r)
            }
        }
        return EntityDescription(name: entityName, attributes: attributes, relationships: relationships,
                                 uniquenessConstraints: unique)
    }

    /// A reference to this value's record, for the relationships of other models. A reference to a value that was
    /// never inserted is refused when it is written.
    public var ref: ModelRef<Self> { ModelRef(objectID: persistentID?.objectID) }
}

/// Where a model value's record lives, with the values it was read with: an update writes only the properties
/// that differ from them, so that it never undoes another writer's change to a property the app did not touch.
///
/// Two persistent IDs are equal when they name the same record.
public struct PersistentID: Sendable, Hashable, CustomStringConvertible {
    /// The record's object ID.
    public let objectID: ObjectID
    /// The record as this value was read or saved.
    let snapshot: Record

    init(objectID: ObjectID, snapshot: Record) {
        self.objectID = objectID
        self.snapshot = snapshot
    }

    /// Compares the records named, not the values read.
    public static func == (lhs: PersistentID, rhs: PersistentID) -> Bool { lhs.objectID == rhs.objectID }
    /// Hashes the record named.
    public func hash(into hasher: inout Hasher) { hasher.combine(objectID) }
    /// The object ID's text.
    public var description: String { objectID.description }
}

/// A typed reference to the record of a model: the value of a relationship property.
///
/// ```swift
/// let author = try tx.insert(Author(name: "Ursula K. Le Guin"))
/// try tx.insert(Book(title: "The Dispossessed", pages: 387, author: author.ref))
/// ```
public struct ModelRef<Model: PersistentModel>: Sendable, Hashable, CustomStringConvertible {
    /// The referenced record's object ID; `nil` for a reference to a value never inserted.
    public let objectID: ObjectID?

    /// A reference to the record with this object ID.
    public init(objectID: ObjectID?) {
        self.objectID = objectID
    }

    /// The object ID's text, or `unsaved`.
    public var description: String { objectID?.description ?? "unsaved \(Model.entityName)" }
}
