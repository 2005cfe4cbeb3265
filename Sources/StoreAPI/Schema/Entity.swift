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
    /// The entity's version hash: Core Data's (`NSEntityDescription.versionHash`) in base64, as a Core Data store's
    /// metadata holds it. It covers everything that affects how the entity's records are stored; see
    /// <doc:VersionHashes>.
    public let versionHash: String
    /// Whether the entity is abstract.
    public var isAbstract: Bool { definition.isAbstract }

    private let attributeIndex: [String: Int]
    private let attributeNames: [String]
    /// The attributes by their names' representation (see ``attributeIndex(_:)``).
    private let attributeTable: NameTable
    /// Each attribute's type, aligned with ``attributes``.
    let attributeTypes: [AttributeType]
    /// A new record's values: shared (copy-on-write) by records made without values, the start of the others
    /// (``attributeValues(_:)``).
    let blankAttributes: [StoreValue]
    let blankRelationships: [RelationshipValue]
    /// Positions of the attributes a saved record must have a value for: found once here, so that a save checking
    /// every record does not copy each attribute's description per record.
    let requiredAttributes: [Int]
    /// Positions of the relationships a save checks per record: the required ones and the to-manys (whose counts
    /// are checked). An optional to-one passes whatever it holds.
    let checkedRelationships: [Int]
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
        attributeTable = NameTable(attributes.map(\.name))
        attributeTypes = attributes.map(\.type)
        relationshipIndex = ri
        blankAttributes = attributes.map { $0.defaultValue ?? .null }
        blankRelationships = relationships.map { $0.isToMany ? .toMany([]) : .toOne(nil) }
        requiredAttributes = attributes.indices.filter { !attributes[$0].isOptional }
        checkedRelationships = relationships.indices.filter { !relationships[$0].isOptional || relationships[$0].isToMany }
    }

    /// The position of a stored attribute in ``attributes`` (and in ``Record/attributes``).
    public func attributeIndex(_ name: String) -> Int? {
        attributePosition(name)
    }

    /// ``attributeIndex(_:)``, with its common case inlined into per-value loops (a batch insert looks a name up
    /// for every value it is given).
    @inline(__always) func attributePosition(_ name: String) -> Int? {
        // Inserting and reading values looks names up once per value. First by representation: a short name is
        // stored inside the string itself, so the caller's literal and the schema's name are the same 16 bytes
        // (and equal bytes always mean equal strings). Only other names are compared or hashed as strings.
        if let i = attributeTable.position(name) { return i }
        return attributeIndexComparingNames(name)
    }

    private func attributeIndexComparingNames(_ name: String) -> Int? {
        if attributes.count <= Self.linearLookupLimit {
            for i in attributeNames.indices where attributeNames[i] == name { return i }
            return nil
        }
        return attributeIndex[name]
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

/// A string's 16 bytes of representation: its text when the string is short enough to be stored inline (up to 15
/// UTF-8 bytes on 64-bit platforms), otherwise a reference to its storage and its flags. Two strings with equal
/// bytes are equal strings; equal strings may have different bytes (then the caller compares them the usual way).
struct StringBits: Equatable {
    let low: UInt64
    let high: UInt64

    /// Whether strings are 16 bytes (every 64-bit platform Swift supports); elsewhere, callers skip this.
    static var areAvailable: Bool { MemoryLayout<String>.size == 16 }

    init(_ s: String) {
        if Self.areAvailable {
            (low, high) = withUnsafeBytes(of: s) { ($0.loadUnaligned(as: UInt64.self), $0.loadUnaligned(fromByteOffset: 8, as: UInt64.self)) }
        } else {
            (low, high) = (0, 0)
        }
    }
}
