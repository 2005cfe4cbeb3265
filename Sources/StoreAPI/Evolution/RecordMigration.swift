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
    /// The record the new schema gets: values the plan carried over, added attributes at their defaults, and
    /// attributes whose type changed in a way the plan cannot convert still holding the old value, for the step to
    /// replace. Its key and global ID are kept whatever the step does.
    public var record: Record

    /// The value the store held for `name` (a name in the store's schema), or `nil` when the entity had no such
    /// attribute.
    public func sourceValue(_ name: String) -> StoreValue? {
        sourceEntity.attributeIndex(name).map { source.attributes[$0] }
    }

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
}

/// A custom migration step: called once per record of the store, in key order, page by page; it changes
/// ``RecordMigration/record`` (attribute values; links are the plan's). Throw to stop the upgrade — nothing is then
/// written.
public typealias RecordMigrationStep = @Sendable (inout RecordMigration) throws -> Void
