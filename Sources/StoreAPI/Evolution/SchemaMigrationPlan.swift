import Foundation

/// How a store written with one schema becomes a store of the next one, inferred from the two schemas alone
/// (Core Data's lightweight migration, SwiftData's `MigrationStage.lightweight`).
///
/// Make one with ``init(from:to:)``: it either maps every entity, attribute and relationship of the destination
/// schema, or throws ``StoreError/migrationRefused(_:problems:)`` listing every change it cannot map, before any
/// store is touched. A plan is a value: `Codable` (``jsonData()``) and printable (``description``), one line per
/// change saying how it maps. ``StoreOperations/upgradeStore(at:type:to:options:)`` carries it out.
public struct SchemaMigrationPlan: Sendable, Hashable, Codable, CustomStringConvertible {
    /// Entity name → version hash of the schema the plan starts from.
    public var sourceVersionHashes: [String: String]
    /// Entity name → version hash of the schema the plan ends with: an upgraded store records these.
    public var destinationVersionHashes: [String: String]
    /// One mapping per entity of the destination schema, in its definition order.
    public var entities: [EntityMigration]
    /// Entities of the source schema that the destination schema no longer has: their records are dropped.
    public var removedEntities: [String]

    /// Whether the two schemas have the same version hashes, so a store needs no upgrade at all.
    public var isEmpty: Bool { sourceVersionHashes == destinationVersionHashes }

    /// The entities whose records change (or that are added or removed), by destination name.
    public var changedEntities: [String] {
        entities.filter { $0.change != .unchanged }.map(\.name) + removedEntities
    }

    /// The plan as indented JSON (sorted keys), the form `storectl upgrade --dry-run --json` prints.
    public func jsonData() throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        do { return try encoder.encode(self) } catch {
            throw StoreError.io(nil, operation: "encoding the migration plan", reason: "\(error)")
        }
    }

    /// One line per change: what changes and how its values map. Unchanged entities and properties are left out.
    public var description: String {
        if isEmpty { return "no changes: the schemas have the same version hashes" }
        var lines: [String] = []
        for e in entities where e.change != .unchanged {
            lines.append("\(e.name): \(e.summary)")
            for a in e.attributes where a.change != .unchanged { lines.append("  \(a.name): \(a.how)") }
            for r in e.relationships where r.change != .unchanged { lines.append("  \(r.name): \(r.how)") }
            for a in e.removedAttributes { lines.append("  \(a): removed (values dropped)") }
            for r in e.removedRelationships { lines.append("  \(r): removed (links dropped)") }
            for c in e.addedUniquenessConstraints {
                lines.append("  unique (\(c.joined(separator: ", "))): added (existing records are checked for duplicates)")
            }
        }
        for name in removedEntities { lines.append("\(name): removed (its records are dropped)") }
        return lines.joined(separator: "\n")
    }
}

/// How the records of one destination entity come from the source store.
public struct EntityMigration: Sendable, Hashable, Codable {
    /// What happens to an entity.
    public enum Change: String, Sendable, Hashable, Codable {
        /// Same name and same version hash: records are copied as they are.
        case unchanged
        /// New in the destination schema: it starts with no records.
        case added
        /// Found through its renaming identifier under another name in the source schema.
        case renamed
        /// Same entity, with changed properties: each record is mapped.
        case modified
    }

    /// The entity's name in the destination schema.
    public var name: String
    /// The entity's name in the source schema; `nil` for an added entity.
    public var source: String?
    /// What happens to the entity.
    public var change: Change
    /// One mapping per stored attribute of the destination entity (inherited ones included), in its order.
    public var attributes: [PropertyMigration]
    /// One mapping per stored relationship of the destination entity (inherited ones included), in its order.
    public var relationships: [PropertyMigration]
    /// Source attributes the destination entity no longer has.
    public var removedAttributes: [String]
    /// Source relationships the destination entity no longer has.
    public var removedRelationships: [String]
    /// Uniqueness constraints the destination adds (attribute names in the destination schema); existing records
    /// are checked for duplicates before anything is written.
    public var addedUniquenessConstraints: [[String]]
    /// Where the entity's parent changes: its parent in the source schema (`nil` for a root) and in the destination
    /// schema, in destination names, and whether its records join another hierarchy (they keep their primary keys,
    /// which are checked not to collide with the records they join). `nil` when the parent stays.
    public var parentChange: ParentChange? = nil

    /// A change of an entity's place in an inheritance hierarchy.
    public struct ParentChange: Sendable, Hashable, Codable {
        /// The parent before (`nil`: the entity was a root).
        public var from: String?
        /// The parent after (`nil`: the entity becomes a root).
        public var to: String?
        /// Whether the entity's records leave their hierarchy for another (root → sub-entity, sub-entity → root, or
        /// across hierarchies), rather than moving within it.
        public var changesHierarchy: Bool
    }

    /// What the entity's line of ``SchemaMigrationPlan/description`` says.
    var summary: String {
        let what = switch change {
        case .unchanged: "unchanged"
        case .added: "added (no records yet)"
        case .renamed: "renamed from \(source ?? "?")" + (isModified ? ", properties changed" : "")
        case .modified: "properties changed"
        }
        guard let p = parentChange else { return what }
        return what + "; parent \(p.from ?? "none") → \(p.to ?? "none")"
            + (p.changesHierarchy ? " (joins another hierarchy; keys checked not to collide)" : "")
    }

    /// Whether any property changes (beyond the entity's own name).
    var isModified: Bool {
        attributes.contains { $0.change != .unchanged } || relationships.contains { $0.change != .unchanged }
            || !removedAttributes.isEmpty || !removedRelationships.isEmpty || !addedUniquenessConstraints.isEmpty
            || parentChange != nil
    }
}

/// How one stored attribute or relationship of a destination entity gets its values.
public struct PropertyMigration: Sendable, Hashable, Codable {
    /// What happens to a property.
    public enum Change: String, Sendable, Hashable, Codable {
        /// Copied as it is.
        case unchanged
        /// New: records get its default value (attributes) or no link (relationships).
        case added
        /// Copied from the source property its renaming identifier names.
        case renamed
        /// An integer widened to a larger integer type, or a float to a double: every value fits.
        case widened
        /// Converted to a string: numbers, UUIDs and URIs have an exact text form.
        case convertedToString
        /// An optional attribute or relationship becomes required: every record must have a value (or the
        /// attribute's default fills the gaps).
        case madeRequired
        /// A required property becomes optional: values are copied as they are.
        case madeOptional
        /// A to-one relationship becomes to-many: its one link becomes a one-element set.
        case madeToMany
        /// A to-many relationship becomes ordered (links keep their stored order) or unordered (order dropped).
        case orderingChanged
        /// A type change with no lossless conversion, left to a custom step (``RecordMigrationStep``).
        case custom
        /// Another change that keeps every stored value as it is (a default value, a delete rule, user info, a
        /// version-hash modifier, …).
        case modified
    }

    /// The property's name in the destination schema.
    public var name: String
    /// The property's name in the source schema; `nil` for an added property.
    public var source: String?
    /// What happens to the property (the most significant change when several apply).
    public var change: Change
    /// How values map, in words, for the printed plan.
    public var how: String
    /// For ``Change/madeRequired``: a record without a value gets the attribute's default, else the upgrade is
    /// refused naming the records that have none.
    public var requiresValue: Bool
    /// For a to-many relationship whose maximum count drops: the new maximum, which every record is checked against
    /// before anything is written.
    public var checkedMaximum: Int? = nil
}
