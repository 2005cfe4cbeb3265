import Foundation

/// An entity with its inheritance resolved: every stored attribute and relationship, inherited ones first.
///
/// Records are laid out against an `Entity`: ``Record/attributes`` is aligned with ``attributes`` and
/// ``Record/relationships`` with ``relationships``. Transient properties are not part of that layout.
/// Instances are immutable and shared; get them from ``Schema/entity(named:)``.
public final class Entity: Sendable, CustomStringConvertible {
    /// The entity as the schema author wrote it.
    public let definition: EntityDescription
    /// The entity's name.
    public let name: String
    /// The name of the top entity of this entity's inheritance tree (itself when it has no parent). Primary keys are
    /// unique per root: records of an entity and of all its sub-entities share one key space.
    public let rootName: String
    /// The chain of ancestors, nearest first.
    public let ancestorNames: [String]
    /// This entity and every entity below it, in schema order.
    public let hierarchyNames: [String]
    /// Every stored attribute, inherited ones first, in declaration order.
    public let attributes: [AttributeDescription]
    /// Every stored relationship, inherited ones first, in declaration order.
    public let relationships: [RelationshipDescription]
    /// Uniqueness constraints that apply to this entity (inherited ones first).
    public let uniquenessConstraints: [[String]]
    /// The entity's version hash: a hex SHA-256 of everything that affects how its records are stored.
    public let versionHash: String
    /// Whether the entity is abstract.
    public var isAbstract: Bool { definition.isAbstract }

    private let attributeIndex: [String: Int]
    private let attributeNames: [String]
    /// Each attribute name's UTF-8 length and first byte (`length << 8 | byte`), aligned with ``attributes``: a
    /// lookup compares names only where these match.
    private let attributeNameShapes: [UInt32]
    /// A new record's values: shared (copy-on-write) by every record made, copied only once one is set.
    let blankAttributes: [StoreValue]
    let blankRelationships: [RelationshipValue]
    private let relationshipIndex: [String: Int]

    init(
        definition: EntityDescription, rootName: String, ancestorNames: [String], hierarchyNames: [String],
        attributes: [AttributeDescription], relationships: [RelationshipDescription],
        uniquenessConstraints: [[String]], versionHash: String
    ) {
        self.definition = definition
        self.name = definition.name
        self.rootName = rootName
        self.ancestorNames = ancestorNames
        self.hierarchyNames = hierarchyNames
        self.attributes = attributes
        self.relationships = relationships
        self.uniquenessConstraints = uniquenessConstraints
        self.versionHash = versionHash
        var ai: [String: Int] = [:]
        for (i, a) in attributes.enumerated() { ai[a.name] = i }
        var ri: [String: Int] = [:]
        for (i, r) in relationships.enumerated() { ri[r.name] = i }
        attributeIndex = ai
        attributeNames = attributes.map(\.name)
        attributeNameShapes = attributes.map { Self.shape(of: $0.name) }
        relationshipIndex = ri
        blankAttributes = attributes.map { $0.defaultValue ?? .null }
        blankRelationships = relationships.map { $0.isToMany ? .toMany([]) : .toOne(nil) }
    }

    /// The position of a stored attribute in ``attributes`` (and in ``Record/attributes``).
    public func attributeIndex(_ name: String) -> Int? {
        // Inserting and reading values looks names up once per value: for the usual handful of attributes,
        // comparing names (a few instructions when both are short) beats hashing one.
        // Comparing two short names that differ still costs a few dozen instructions; their lengths and first
        // bytes tell most of them apart in one.
        if attributes.count <= Self.linearLookupLimit {
            let shape = Self.shape(of: name)
            for i in attributeNameShapes.indices where attributeNameShapes[i] == shape && attributeNames[i] == name {
                return i
            }
            return nil
        }
        return attributeIndex[name]
    }

    @inline(__always)
    private static func shape(of name: String) -> UInt32 {
        let utf8 = name.utf8
        return UInt32(truncatingIfNeeded: utf8.count) << 8 | UInt32(utf8.first ?? 0)
    }

    private static let linearLookupLimit = 12
    /// The position of a stored relationship in ``relationships`` (and in ``Record/relationships``).
    public func relationshipIndex(_ name: String) -> Int? { relationshipIndex[name] }
    /// The stored attribute named `name`.
    public func attribute(_ name: String) -> AttributeDescription? { attributeIndex[name].map { attributes[$0] } }
    /// The stored relationship named `name`.
    public func relationship(_ name: String) -> RelationshipDescription? {
        relationshipIndex[name].map { relationships[$0] }
    }
    /// Whether `other` is this entity or one of its sub-entities.
    public func isKind(of other: String) -> Bool { name == other || ancestorNames.contains(other) }

    /// A record of this entity with every attribute at its default and every relationship empty.
    public func newRecord(primaryKey: Int64, globalID: UUID = UUID()) -> Record {
        Record(
            entity: name, primaryKey: primaryKey, globalID: globalID,
            attributes: blankAttributes, relationships: blankRelationships
        )
    }

    public var description: String { "Entity(\(name))" }
}
