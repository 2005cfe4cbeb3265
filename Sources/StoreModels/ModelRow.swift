import Foundation
import StoreAPI

/// Where each stored property of a model type lives in its entity's records: resolved once per fetch or write,
/// so that reading a record is an array index per property, never a name lookup.
struct ModelLayout: Sendable {
    enum Slot: Sendable {
        case attribute(Int, AttributeType)
        case relationship(Int)
    }

    let entity: Entity
    let names: [String]
    let slots: [Slot]

    init<M: PersistentModel>(_ type: M.Type, in schema: Schema) throws {
        let entity = try schema.requireEntity(M.entityName)
        var names: [String] = []
        var slots: [Slot] = []
        for property in M.modelProperties {
            switch property.kind {
            case .attribute(let a, _):
                guard let i = entity.attributeIndex(a.name) else {
                    throw StoreError.unknownProperty(entity: entity.name, property: a.name)
                }
                slots.append(.attribute(i, entity.attributes[i].type))
            case .relationship(let r):
                guard let i = entity.relationshipIndex(r.name) else {
                    throw StoreError.unknownProperty(entity: entity.name, property: r.name)
                }
                slots.append(.relationship(i))
            }
            names.append(property.name)
        }
        self.entity = entity
        self.names = names
        self.slots = slots
    }
}

/// One stored record, as a model's generated `init(from:)` reads it: property by property, in declaration order.
///
/// The typed accessors are inlinable so that they are specialized for each property's type inside the model's
/// own module: called as unspecialized generics, each value read looked up the metadata of its optional type at
/// run time, which cost more than reading the row. What they do with the record stays in the non-generic helpers
/// below.
public struct ModelRow {
    let record: Record
    let layout: ModelLayout
    @usableFromInline let storeUUID: UUID

    init(record: Record, layout: ModelLayout, storeUUID: UUID) {
        self.record = record
        self.layout = layout
        self.storeUUID = storeUUID
    }

    /// The record's identity and the values it holds now.
    public var persistentID: PersistentID? {
        PersistentID(objectID: ObjectID(storeUUID: storeUUID, entity: record.entity, primaryKey: record.primaryKey),
                     snapshot: record)
    }

    /// The value of the attribute that is stored property `index`.
    @inlinable
    public func attribute<T: ModelValue>(_ index: Int) throws -> T {
        let stored = try storedAttribute(index)
        guard let value = T(storeValue: stored) else { throw attributeMismatch(index, stored, T.self) }
        return value
    }

    /// The target of the to-one relationship that is stored property `index`.
    @inlinable
    public func toOne<M: PersistentModel>(_ index: Int) throws -> ModelRef<M>? {
        try toOneKey(index).map { ModelRef(objectID: ObjectID(storeUUID: storeUUID, entity: M.entityName, primaryKey: $0)) }
    }

    /// The target of the required to-one relationship that is stored property `index`.
    @inlinable
    public func requiredToOne<M: PersistentModel>(_ index: Int) throws -> ModelRef<M> {
        guard let ref: ModelRef<M> = try toOne(index) else { throw missingToOne(index) }
        return ref
    }

    /// The targets of the to-many relationship that is stored property `index` (in order, when it is ordered).
    @inlinable
    public func toMany<M: PersistentModel>(_ index: Int) throws -> [ModelRef<M>] {
        try toManyKeys(index).map { ModelRef(objectID: ObjectID(storeUUID: storeUUID, entity: M.entityName, primaryKey: $0)) }
    }

    // MARK: What the inlinable accessors call

    /// The stored value of the attribute that is stored property `index`.
    @usableFromInline
    func storedAttribute(_ index: Int) throws -> StoreValue {
        guard case .attribute(let i, _) = layout.slots[index] else { throw mismatch(index, "an attribute") }
        return record.attributes[i]
    }

    /// The error for a stored value that is not a value of the property's type `type`.
    @usableFromInline
    func attributeMismatch(_ index: Int, _ stored: StoreValue, _ type: Any.Type) -> StoreError {
        guard case .attribute(_, let expected) = layout.slots[index] else { return mismatch(index, "an attribute") }
        return .typeMismatch(entity: layout.entity.name, property: layout.names[index], expected: expected,
                             got: "\(stored.type?.rawValue ?? "nil") for a value of type \(type)")
    }

    /// The related key of the to-one relationship that is stored property `index` (`nil` for none).
    @usableFromInline
    func toOneKey(_ index: Int) throws -> Int64? {
        guard case .relationship(let i) = layout.slots[index] else { throw mismatch(index, "a relationship") }
        guard case .toOne(let key) = record.relationships[i] else { throw mismatch(index, "a to-one relationship") }
        return key
    }

    /// The error for a required to-one relationship that has no target.
    @usableFromInline
    func missingToOne(_ index: Int) -> StoreError {
        .missingValue(entity: layout.entity.name, property: layout.names[index],
                      object: ObjectID(storeUUID: storeUUID, entity: record.entity, primaryKey: record.primaryKey))
    }

    /// The related keys of the to-many relationship that is stored property `index`.
    @usableFromInline
    func toManyKeys(_ index: Int) throws -> [Int64] {
        guard case .relationship(let i) = layout.slots[index] else { throw mismatch(index, "a relationship") }
        guard case .toMany(let keys) = record.relationships[i] else { throw mismatch(index, "a to-many relationship") }
        return keys
    }

    private func mismatch(_ index: Int, _ what: String) -> StoreError {
        .invalidArgument("\(layout.entity.name).\(layout.names[index]) is not \(what) in the schema the store was opened with")
    }
}

/// What a model's generated `encode(to:)` writes: one field per stored property, in declaration order.
public struct ModelRowWriter {
    enum Field {
        case value(StoreValue)
        /// A value whose stored form could not be made (a `Codable` value that does not encode).
        case unencodable(String)
        case toOne(ObjectID?, isSet: Bool)
        case toMany([ObjectID?])
    }

    var fields: [Field] = []

    init() {}

    /// Writes an attribute value.
    public mutating func attribute<T: ModelValue>(_ value: T) {
        do {
            fields.append(.value(try value.storeValue))
        } catch {
            fields.append(.unencodable("\(error)"))
        }
    }

    /// Writes a to-one relationship.
    public mutating func toOne<M: PersistentModel>(_ ref: ModelRef<M>?) {
        fields.append(.toOne(ref?.objectID, isSet: ref != nil))
    }

    /// Writes a to-many relationship.
    public mutating func toMany<M: PersistentModel>(_ refs: [ModelRef<M>]) {
        fields.append(.toMany(refs.map(\.objectID)))
    }
}
