import Foundation

/// One record on its way through a custom migration step (SwiftData's `MigrationStage.custom`, Core Data's custom
/// mapping): the record as the store held it, and the record the new schema gets, already mapped by the inferred
/// plan, which the step may change.
public struct RecordMigration: Sendable {
    /// The entity the record had in the store's schema.
    public let sourceEntity: Entity
    /// The record as the store held it.
    public let source: Record
    /// The entity the record has in the new schema.
    public let entity: Entity
    /// The new schema.
    public let schema: Schema
    /// The record the new schema gets: values the plan carried over, added attributes at their defaults, and
    /// attributes whose type changed in a way the plan cannot convert still holding the old value, for the step to
    /// replace. Its key and global ID are kept whatever the step does.
    public var record: Record

    /// The store being upgraded, for ``sourceRelated(_:)``.
    let lookup: MigrationSourceLookup?

    /// Records the step creates beside this one, in the order it created them (see ``insert(_:values:linkedBy:)``).
    public internal(set) var inserted: [InsertedRecord] = []

    /// The value the store held for `name` (a name in the store's schema), or `nil` when the entity had no such
    /// attribute.
    public func sourceValue(_ name: String) -> StoreValue? {
        sourceEntity.attributeIndex(name).map { source.attributes[$0] }
    }

    /// The records the store held that this record's relationship `name` (a name in the store's schema) linked, in
    /// link order — for a merge, which folds the values of a related record (of an entity the new schema drops, say)
    /// into this one. Reading an atomic store's records this way loads the store the first time a step asks.
    ///
    /// - Throws: ``StoreError/unknownProperty(entity:property:)``, or the store's errors.
    public func sourceRelated(_ name: String) throws -> [Record] {
        guard let i = sourceEntity.relationshipIndex(name) else { throw StoreError.unknownProperty(entity: sourceEntity.name, property: name) }
        let keys = source.relationships[i].keys
        guard !keys.isEmpty, let lookup else { return [] }
        let root = schemaOfSource?.entity(named: sourceEntity.relationships[i].destination)?.rootName ?? sourceEntity.relationships[i].destination
        return try lookup.records(withKeys: keys, root: root)
    }

    /// The store's schema, to find a relationship's destination hierarchy.
    let schemaOfSource: Schema?

    /// The new record's value of `name` (a name in the new schema).
    public func value(_ name: String) -> StoreValue? {
        entity.attributeIndex(name).map { record.attributes[$0] }
    }

    /// Sets the new record's attribute `name`.
    ///
    /// - Throws: ``StoreError/unknownProperty(entity:property:)`` or ``StoreError/typeMismatch(entity:property:expected:got:)``.
    public mutating func set(_ name: String, _ value: StoreValue) throws {
        guard let i = entity.attributeIndex(name) else { throw StoreError.unknownProperty(entity: entity.name, property: name) }
        let type = entity.attributes[i].type
        guard value.fits(type) else {
            throw StoreError.typeMismatch(entity: entity.name, property: name, expected: type, got: value.type?.rawValue ?? "nil")
        }
        record.attributes[i] = value
    }

    /// Creates a record of `entity` (of the new schema) linked to this one through its to-one relationship
    /// `relationship`, whose inverse on this record's entity lists it — a split: values of one entity become records
    /// of another (Core Data's custom entity mapping, SwiftData's `MigrationStage.custom`).
    ///
    /// `values` are attribute values by name; attributes left out get their defaults. The new record gets a primary
    /// key above every record its hierarchy had, and a global ID derived from this record's and the position of the
    /// insertion, so the same step over the same store creates the same records with the same identities. The step
    /// may run more than once per record (a check before anything is written, then the writing passes), so it must
    /// depend on the record alone.
    ///
    /// - Throws: ``StoreError/unknownEntity(_:)``, ``StoreError/unknownProperty(entity:property:)`` (also for a
    ///   `relationship` that is not a to-one leading to this record's entity), or
    ///   ``StoreError/typeMismatch(entity:property:expected:got:)``.
    public mutating func insert(_ entity: String, values: [String: StoreValue], linkedBy relationship: String) throws {
        guard let e = schema.entity(named: entity), !e.isAbstract else { throw StoreError.unknownEntity(entity) }
        guard let r = e.relationshipIndex(relationship), !e.relationships[r].isToMany,
              self.entity.isKind(of: e.relationships[r].destination) else {
            throw StoreError.unknownProperty(entity: entity, property: relationship)
        }
        var attributes = e.attributes.map { $0.defaultValue ?? .null }
        for (name, value) in values {
            guard let i = e.attributeIndex(name) else { throw StoreError.unknownProperty(entity: entity, property: name) }
            guard value.fits(e.attributes[i].type) else {
                throw StoreError.typeMismatch(entity: entity, property: name, expected: e.attributes[i].type, got: value.type?.rawValue ?? "nil")
            }
            attributes[i] = value
        }
        for (i, a) in e.attributes.enumerated() where !a.isOptional && attributes[i].isNull {
            throw StoreError.invalidArgument("the custom migration step inserted a \(entity) without a value for its required attribute \(a.name)")
        }
        inserted.append(InsertedRecord(entity: e, attributes: attributes, backLink: r))
    }
}

/// A record a custom migration step created (``RecordMigration/insert(_:values:linkedBy:)``): its entity, its
/// attribute values, and the to-one relationship that links it to the record whose step created it.
public struct InsertedRecord: Sendable {
    /// The new record's entity (in the new schema).
    public let entity: Entity
    /// Its attribute values, in ``Entity/attributes`` order.
    public let attributes: [StoreValue]
    /// The position in ``Entity/relationships`` of the to-one relationship leading back to the creating record.
    public let backLink: Int
}

/// A custom migration step: called once per record of the store, in key order, page by page; it changes
/// ``RecordMigration/record`` (attribute values; links are the plan's) and may create records of other entities
/// linked to it (``RecordMigration/insert(_:values:linkedBy:)``). Throw to stop the upgrade — nothing is then
/// written.
public typealias RecordMigrationStep = @Sendable (inout RecordMigration) throws -> Void
