import Foundation

/// A plan compiled against its two schemas: positions instead of names, so each record maps with array reads.
struct MigrationRecordMapper: Sendable {
    /// How one destination attribute gets its value.
    struct AttributeStep: Sendable {
        /// Position in the source record's attributes; `nil` for an added attribute.
        let source: Int?
        /// The destination type, when values are converted.
        let convertTo: AttributeType?
        /// What a record with no value gets: the default of an added attribute, or of one made required.
        let fill: StoreValue
    }

    /// How one destination relationship gets its links.
    struct RelationshipStep: Sendable {
        let source: Int?
        let toMany: Bool
    }

    /// The mapping of one concrete destination entity.
    struct EntityStep: Sendable {
        let destination: Entity
        let source: Entity
        let attributes: [AttributeStep]
        let relationships: [RelationshipStep]
    }

    let plan: SchemaMigrationPlan
    let source: Schema
    let destination: Schema
    /// Destination entity name → its mapping (entities with a source only).
    let steps: [String: EntityStep]
    /// Source entity name → destination entity name, for kept entities.
    let destinationNames: [String: String]
    /// Per entity (destination name): source property name → destination property name, for renamed history keys.
    let propertyNames: [String: [String: String]]

    /// The custom step, run on each record after the plan's mapping.
    let customStep: RecordMigrationStep?
    /// Per destination entity: positions of attributes the custom step must convert.
    let customAttributes: [String: [Int]]
    /// Where records the custom step inserts get their keys; laid out once the check before writing has counted
    /// them (until then inserted records are counted, not made).
    var insertions: MigrationInsertions?
    /// The store being upgraded, for steps that read related records.
    var sourceLookup: MigrationSourceLookup?

    init(plan: SchemaMigrationPlan, source: Schema, destination: Schema,
         customStep: RecordMigrationStep? = nil) throws(StoreError) {
        self.plan = plan
        self.customStep = customStep
        self.source = source
        self.destination = destination
        var steps: [String: EntityStep] = [:]
        var names: [String: String] = [:]
        var properties: [String: [String: String]] = [:]
        var custom: [String: [Int]] = [:]
        for e in plan.entities {
            custom[e.name] = e.attributes.indices.filter { e.attributes[$0].change == .custom }
            guard let sourceName = e.source else { continue }
            let d = try destination.requireEntity(e.name)
            let s = try source.requireEntity(sourceName)
            names[sourceName] = e.name
            var renamed: [String: String] = [:]
            var attributes: [AttributeStep] = []
            for (a, m) in zip(d.attributes, e.attributes) {
                let index = m.source.flatMap { s.attributeIndex($0) }
                let from = index.map { s.attributes[$0].type }
                let converts = from.map { AttributeConversion(from: $0, to: a.type) }
                // An optional attribute the store already had keeps its nil: a default applies to records
                // created from now on, not to values someone left empty on purpose.
                let fills = index == nil || !a.isOptional
                attributes.append(AttributeStep(
                    source: index, convertTo: converts == .some(.same) || converts == nil ? nil : a.type,
                    fill: fills ? a.defaultValue ?? .null : .null))
                if let src = m.source, src != a.name { renamed[src] = a.name }
            }
            var relationships: [RelationshipStep] = []
            for (r, m) in zip(d.relationships, e.relationships) {
                relationships.append(RelationshipStep(source: m.source.flatMap { s.relationshipIndex($0) }, toMany: r.isToMany))
                if let src = m.source, src != r.name { renamed[src] = r.name }
            }
            properties[e.name] = renamed
            steps[e.name] = EntityStep(destination: d, source: s, attributes: attributes, relationships: relationships)
        }
        self.steps = steps
        self.customAttributes = custom
        self.destinationNames = names
        self.propertyNames = properties
    }

    /// The destination record a source record becomes: same primary key and global ID.
    func map(_ record: Record, with step: EntityStep) -> Record {
        var attributes: [StoreValue] = []
        attributes.reserveCapacity(step.attributes.count)
        for a in step.attributes {
            var value = a.source.map { $0 < record.attributes.count ? record.attributes[$0] : .null } ?? .null
            if let type = a.convertTo { value = AttributeConversion.convert(value, to: type) }
            attributes.append(value.isNull ? a.fill : value)
        }
        var relationships: [RelationshipValue] = []
        relationships.reserveCapacity(step.relationships.count)
        for r in step.relationships {
            let value = r.source.map { $0 < record.relationships.count ? record.relationships[$0] : nil } ?? nil
            switch (value, r.toMany) {
            case (nil, true): relationships.append(.toMany([]))
            case (nil, false): relationships.append(.toOne(nil))
            case (.toOne(let k)?, true): relationships.append(.toMany(k.map { [$0] } ?? []))
            case (let v?, _): relationships.append(v)
            }
        }
        return Record(entity: step.destination.name, primaryKey: record.primaryKey, globalID: record.globalID,
                      attributes: attributes, relationships: relationships)
    }

    /// ``map(_:with:)`` followed by the custom step, if any, which must leave every value of the new type; linked to
    /// the records the step inserted, once ``insertions`` is laid out.
    func migrate(_ record: Record, with step: EntityStep) throws -> Record {
        try migrateInserting(record, with: step).record
    }

    /// ``migrate(_:with:)``, with the records the custom step inserted: as the step described them (`requested`),
    /// and as records with keys and global IDs (`inserted`, empty until ``insertions`` is laid out).
    func migrateInserting(_ record: Record, with step: EntityStep) throws
        -> (record: Record, requested: [InsertedRecord], inserted: [Record])
    {
        let mapped = map(record, with: step)
        guard let customStep else { return (mapped, [], []) }
        var migration = RecordMigration(sourceEntity: step.source, source: record, entity: step.destination, schema: destination,
                                        record: mapped, lookup: sourceLookup, schemaOfSource: source)
        try customStep(&migration)
        var result = migration.record
        // The step owns values, not identity or layout.
        result.entity = mapped.entity
        result.primaryKey = mapped.primaryKey
        result.globalID = mapped.globalID
        guard result.attributes.count == mapped.attributes.count else {
            throw StoreError.invalidArgument("the custom migration step changed the attribute layout of \(mapped.key)")
        }
        result.relationships = mapped.relationships
        for (i, value) in result.attributes.enumerated() where !value.fits(step.destination.attributeTypes[i]) {
            let a = step.destination.attributes[i]
            throw StoreError.typeMismatch(entity: step.destination.name, property: a.name,
                                          expected: a.type, got: "\(value) in \(mapped.key) after the custom step")
        }
        guard !migration.inserted.isEmpty, let insertions else { return (result, migration.inserted, []) }
        let inserted = try insertions.records(migration.inserted, sourceEntity: step.source.name, sourceKey: record.primaryKey,
                                              creator: result)
        for (r, requested) in zip(inserted, migration.inserted) {
            // The creator's side of the link: the back link's inverse, when the creator's entity has it.
            guard let inverse = requested.entity.relationships[requested.backLink].inverse,
                  let i = step.destination.relationshipIndex(inverse) else { continue }
            switch result.relationships[i] {
            case .toMany(let keys): result.relationships[i] = .toMany(keys + [r.primaryKey])
            case .toOne: result.relationships[i] = .toOne(r.primaryKey)
            }
        }
        return (result, migration.inserted, inserted)
    }

    /// A history transaction with entity and property names as the destination schema has them.
    func map(_ transaction: HistoryTransaction) -> HistoryTransaction {
        var t = transaction
        t.changes = transaction.changes.map { c in
            var c = c
            if let name = destinationNames[c.entity] {
                c.entity = name
                if let renamed = propertyNames[name], !renamed.isEmpty {
                    c.changedKeys = c.changedKeys.map { renamed[$0] ?? $0 }
                    c.tombstone = Dictionary(c.tombstone.map { (renamed[$0.key] ?? $0.key, $0.value) }, uniquingKeysWith: { a, _ in a })
                }
            }
            return c
        }
        return t
    }

    /// The metadata of the upgraded store: the source's identity, custom keys and sync options, with the
    /// destination schema and its version hashes.
    func metadata(from stored: StoreMetadata) -> StoreMetadata {
        var m = stored
        m.schema = destination
        m.versionHashes = destination.versionHashes
        m.formatVersion = StoreMetadata.currentFormatVersion
        if let counters = stored.primaryKeyCounters {
            // Hierarchies the destination drops have no allocator to carry.
            let roots = Set(destination.rootEntities.map(\.name))
            m.primaryKeyCounters = Dictionary(counters.compactMap { (root, next) in
                destinationNames[root].flatMap { roots.contains($0) ? ($0, next) : nil }
            }, uniquingKeysWith: { max($0, $1) })
        }
        return m
    }
}
