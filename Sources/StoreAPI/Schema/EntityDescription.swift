import Foundation

/// What happens to related records when a record is deleted.
public enum DeleteRule: String, Codable, Sendable, Hashable, CaseIterable {
    /// Clear the inverse relationship of the related records.
    case nullify
    /// Delete the related records too.
    case cascade
    /// Refuse the delete while any related record exists.
    case deny
    /// Do nothing: related records keep a reference to the deleted record until the app fixes it.
    case noAction
}

/// A stored attribute of an entity, as written by the schema author.
public struct AttributeDescription: Sendable, Hashable {
    /// The attribute's name, unique among the entity's properties (inherited ones included).
    public var name: String
    /// The stored type.
    public var type: AttributeType
    /// Whether the attribute may be `nil` when a record is saved.
    public var isOptional: Bool
    /// The value a new record starts with. `nil` means no default (the record starts with ``StoreValue/null``).
    public var defaultValue: StoreValue?
    /// Transient attributes are part of the schema but are never stored.
    public var isTransient: Bool
    /// For transformable attributes: the name of the value transformer the app uses (kept, never run).
    public var valueTransformerName: String?
    /// Free-form key/value pairs from the schema author.
    public var userInfo: [String: String]
    /// Changes the property's Core Data version hash without changing its structure (Core Data's per-property
    /// `versionHashModifier`). Not part of ``Entity/versionHash``.
    public var versionHashModifier: String?
    /// Core Data's read-only flag (`NSPropertyDescription.isReadOnly`): part of the Core Data version hash, not
    /// enforced here.
    public var isReadOnly: Bool
    /// Core Data may keep large values of this binary attribute in files beside the store
    /// (`allowsExternalBinaryDataStorage`).
    public var allowsExternalBinaryDataStorage: Bool
    /// Core Data keeps the value in the persistent history's tombstone when the record is deleted
    /// (`preservesValueInHistoryOnDeletion`; Xcode's "preserve after deletion").
    public var preservesValueInHistoryOnDeletion: Bool
    /// The renaming identifier a migration uses to match this attribute with one of an earlier model version
    /// (Xcode's `elementID`, Core Data's `renamingIdentifier`).
    public var renamingIdentifier: String?
    /// For a derived attribute (kept in ``EntityDescription/derivedAttributes``): how Core Data computes it.
    public var derivation: AttributeDerivation?
    /// The attribute is indexed on its own (Xcode's legacy `indexed` flag, Core Data's `NSIsIndexed`). Core Data
    /// compiles it into a fetch index named after the attribute, so a store keeps the same index as for an entry
    /// of ``EntityDescription/fetchIndexes`` of that name (see ``EntityDescription/allFetchIndexes``).
    public var isIndexed: Bool

    /// Creates an attribute description.
    public init(
        name: String, type: AttributeType, isOptional: Bool = true, defaultValue: StoreValue? = nil,
        isTransient: Bool = false, valueTransformerName: String? = nil, userInfo: [String: String] = [:],
        versionHashModifier: String? = nil, isReadOnly: Bool = false, allowsExternalBinaryDataStorage: Bool = false,
        preservesValueInHistoryOnDeletion: Bool = false, renamingIdentifier: String? = nil,
        derivation: AttributeDerivation? = nil, isIndexed: Bool = false
    ) {
        self.name = name
        self.type = type
        self.isOptional = isOptional
        self.defaultValue = defaultValue
        self.isTransient = isTransient
        self.valueTransformerName = valueTransformerName
        self.userInfo = userInfo
        self.versionHashModifier = versionHashModifier
        self.isReadOnly = isReadOnly
        self.allowsExternalBinaryDataStorage = allowsExternalBinaryDataStorage
        self.preservesValueInHistoryOnDeletion = preservesValueInHistoryOnDeletion
        self.renamingIdentifier = renamingIdentifier
        self.derivation = derivation
        self.isIndexed = isIndexed
    }
}

/// How Core Data computes a derived attribute (`NSDerivedAttributeDescription`): the framework keeps the
/// description so that Core Data's version hash and store layout can be reproduced; it never computes the value.
public struct AttributeDerivation: Sendable, Hashable {
    /// The derivation expression as the model writes it, e.g. `pages.@count` or `title.lowercase:`.
    public var expression: String
    /// The filtering predicate's format, when the derivation has one.
    public var filteringPredicate: String?

    /// Creates a derivation.
    public init(expression: String, filteringPredicate: String? = nil) {
        self.expression = expression
        self.filteringPredicate = filteringPredicate
    }
}

/// A relationship of an entity, as written by the schema author.
public struct RelationshipDescription: Sendable, Hashable {
    /// The relationship's name, unique among the entity's properties (inherited ones included).
    public var name: String
    /// The destination entity's name.
    public var destination: String
    /// The name of the inverse relationship on the destination entity, if there is one.
    public var inverse: String?
    /// Whether the relationship holds many records.
    public var isToMany: Bool
    /// For to-many relationships: whether the order of the related records is kept.
    public var isOrdered: Bool
    /// What a delete of the source record does to the related records.
    public var deleteRule: DeleteRule
    /// Whether the relationship may be empty when a record is saved.
    public var isOptional: Bool
    /// The minimum number of related records (0 for no minimum).
    public var minCount: Int
    /// The maximum number of related records (0 for no maximum). A to-one relationship has a maximum of 1.
    public var maxCount: Int
    /// Transient relationships are part of the schema but are never stored.
    public var isTransient: Bool
    /// Free-form key/value pairs from the schema author.
    public var userInfo: [String: String]
    /// Changes the property's Core Data version hash without changing its structure (Core Data's per-property
    /// `versionHashModifier`). Not part of ``Entity/versionHash``.
    public var versionHashModifier: String?
    /// Core Data's read-only flag (`NSPropertyDescription.isReadOnly`): part of the Core Data version hash, not
    /// enforced here.
    public var isReadOnly: Bool
    /// The renaming identifier a migration uses to match this relationship with one of an earlier model version
    /// (Xcode's `elementID`, Core Data's `renamingIdentifier`).
    public var renamingIdentifier: String?
    /// The minimum count exactly as the model file wrote it (Xcode's `minCount`), `nil` when it wrote none.
    /// ``minCount`` is normalised (a to-one's is always 0); Core Data's version hash covers the written value.
    public var declaredMinCount: Int?
    /// The maximum count exactly as the model file wrote it (Xcode's `maxCount`; `-1` in old models), `nil` when it
    /// wrote none. ``maxCount`` is normalised (0 for an unbounded to-many); Core Data's version hash covers the
    /// written value.
    public var declaredMaxCount: Int?

    /// Creates a relationship description.
    public init(
        name: String, destination: String, inverse: String? = nil, isToMany: Bool = false, isOrdered: Bool = false,
        deleteRule: DeleteRule = .nullify, isOptional: Bool = true, minCount: Int = 0, maxCount: Int? = nil,
        isTransient: Bool = false, userInfo: [String: String] = [:], versionHashModifier: String? = nil,
        isReadOnly: Bool = false, renamingIdentifier: String? = nil, declaredMinCount: Int? = nil,
        declaredMaxCount: Int? = nil
    ) {
        self.name = name
        self.destination = destination
        self.inverse = inverse
        self.isToMany = isToMany
        self.isOrdered = isToMany && isOrdered
        self.deleteRule = deleteRule
        self.isOptional = isOptional
        self.minCount = minCount
        self.maxCount = maxCount ?? (isToMany ? 0 : 1)
        self.isTransient = isTransient
        self.userInfo = userInfo
        self.versionHashModifier = versionHashModifier
        self.isReadOnly = isReadOnly
        self.renamingIdentifier = renamingIdentifier
        self.declaredMinCount = declaredMinCount
        self.declaredMaxCount = declaredMaxCount
    }

    /// `true` for a to-many relationship whose inverse is also to-many (the caller passes the inverse).
    public func isManyToMany(inverse: RelationshipDescription?) -> Bool {
        isToMany && (inverse?.isToMany ?? false)
    }
}

/// An entity as written by the schema author: its own properties only. ``Schema`` resolves inheritance into
/// ``Entity``.
public struct EntityDescription: Sendable, Hashable {
    /// The entity's name, unique in the schema. Names keep their case everywhere (stores, URIs, interchange).
    public var name: String
    /// The parent entity's name, for sub-entities.
    public var parent: String?
    /// Abstract entities have no records of their own, only of their sub-entities.
    public var isAbstract: Bool
    /// The attributes declared on this entity (not inherited ones).
    public var attributes: [AttributeDescription]
    /// The relationships declared on this entity (not inherited ones).
    public var relationships: [RelationshipDescription]
    /// Each inner array is a set of attribute names whose combined values must be unique among the records of this
    /// entity and its sub-entities.
    public var uniquenessConstraints: [[String]]
    /// Free-form key/value pairs from the schema author.
    public var userInfo: [String: String]
    /// Changes the version hash without changing the structure (Core Data's `versionHashModifier`).
    public var versionHashModifier: String?
    /// The class name the app uses for the entity (Xcode's *Class*, Core Data's `managedObjectClassName`), when the
    /// model names one: kept as written, never used.
    public var representedClassName: String?
    /// Attributes Core Data computes from other properties (each with a ``AttributeDescription/derivation``).
    /// Records never hold them and ``Entity/attributes`` leaves them out; they are kept because Core Data's version
    /// hash and store layout include them.
    public var derivedAttributes: [AttributeDescription]
    /// The renaming identifier a migration uses to match this entity with one of an earlier model version
    /// (Xcode's `elementID`, Core Data's `renamingIdentifier`).
    public var renamingIdentifier: String?
    /// The fetch indexes declared on this entity (not inherited ones), in the author's order. Indexed attributes
    /// (``AttributeDescription/isIndexed``) are not repeated here; ``allFetchIndexes`` has both.
    public var fetchIndexes: [FetchIndex]

    /// Creates an entity description.
    public init(
        name: String, parent: String? = nil, isAbstract: Bool = false, attributes: [AttributeDescription] = [],
        relationships: [RelationshipDescription] = [], uniquenessConstraints: [[String]] = [],
        userInfo: [String: String] = [:], versionHashModifier: String? = nil, representedClassName: String? = nil,
        derivedAttributes: [AttributeDescription] = [], renamingIdentifier: String? = nil,
        fetchIndexes: [FetchIndex] = []
    ) {
        self.name = name
        self.parent = parent
        self.isAbstract = isAbstract
        self.attributes = attributes
        self.relationships = relationships
        self.uniquenessConstraints = uniquenessConstraints
        self.userInfo = userInfo
        self.versionHashModifier = versionHashModifier
        self.representedClassName = representedClassName
        self.derivedAttributes = derivedAttributes
        self.renamingIdentifier = renamingIdentifier
        self.fetchIndexes = fetchIndexes
    }

    /// Every index the entity declares: a single-element ascending fetch index named after each indexed attribute
    /// (Core Data's compiler makes the same) that ``fetchIndexes`` does not already name, then ``fetchIndexes``.
    public var allFetchIndexes: [FetchIndex] {
        let named = Set(fetchIndexes.map(\.name))
        let implied = attributes.filter { $0.isIndexed && !named.contains($0.name) }.map {
            FetchIndex(name: $0.name, elements: [FetchIndex.Element(property: $0.name)])
        }
        return implied + fetchIndexes
    }
}
