import Foundation

extension SchemaMigrationPlan {
    /// Infers how a store of `source` becomes a store of `destination`.
    ///
    /// Entities and properties are matched by renaming identifier (Xcode's `elementID`: a destination element whose
    /// identifier equals a source element's identifier, or a source element's name), else by name. What is
    /// inferred: entities and attributes added or removed; optional ↔ required (required needs a value in every
    /// record or a default); renames; integer and float widening and exact conversions to string; relationships
    /// added or removed, to-one → to-many, ordered ↔ unordered; uniqueness constraints added.
    ///
    /// - Throws: ``StoreError/migrationRefused(_:problems:)`` (with no URL) listing every change that cannot be
    ///   inferred: another type change, to-many → to-one, a changed destination, a new inverse of an existing
    ///   relationship, an entity becoming abstract, an entity leaving a hierarchy whose relationships may link its
    ///   records. An entity that moves within its hierarchy, or into or out of one, keeps its records' primary
    ///   keys (``EntityMigration/parentChange``); where they join another hierarchy, the upgrade checks that no two
    ///   records of the new hierarchy share one.
    public init(from source: Schema, to destination: Schema) throws(StoreError) {
        try self.init(from: source, to: destination, customStep: false)
    }

    /// The plan for an upgrade with a custom step (``RecordMigrationStep``): as ``init(from:to:)``, but an attribute
    /// whose type changes without a lossless conversion is left to the step (``PropertyMigration/Change/custom``)
    /// instead of refused; the upgrade checks that the step gave every such value the new type.
    public init(from source: Schema, to destination: Schema, customStep: Bool) throws(StoreError) {
        var planner = SchemaMigrationPlanner(source: source, destination: destination)
        planner.customStep = customStep
        let plan = planner.plan()
        guard planner.problems.isEmpty else { throw .migrationRefused(nil, problems: planner.problems) }
        self = plan
    }
}

/// Matches the elements of two schemas and decides how each maps.
struct SchemaMigrationPlanner {
    let source: Schema
    let destination: Schema
    var problems: [SchemaMigrationProblem] = []
    /// Whether a custom step converts what the plan cannot.
    var customStep = false

    /// Destination entity name → source entity name.
    private(set) var entityMatch: [String: String] = [:]

    init(source: Schema, destination: Schema) {
        self.source = source
        self.destination = destination
        entityMatch = Self.match(
            destination.definitions.map { ($0.name, $0.renamingIdentifier) },
            source.definitions.map { ($0.name, $0.renamingIdentifier) })
    }

    /// Destination name → source name, for two lists of (name, renaming identifier): equal identifiers first (an
    /// element's identifier is its renaming identifier, else its name), then a destination renaming identifier that
    /// names a source element, then equal names. Each source element is matched at most once.
    static func match(_ destination: [(String, String?)], _ source: [(String, String?)]) -> [String: String] {
        var result: [String: String] = [:]
        var used: Set<String> = []
        let passes: [(_ d: (String, String?), _ s: (String, String?)) -> Bool] = [
            { d, s in (d.1 ?? d.0) == (s.1 ?? s.0) },
            { d, s in d.1 != nil && d.1 == s.0 },
            { d, s in d.0 == s.0 },
        ]
        for pass in passes {
            for d in destination where result[d.0] == nil {
                if let s = source.first(where: { !used.contains($0.0) && pass(d, $0) }) {
                    result[d.0] = s.0
                    used.insert(s.0)
                }
            }
        }
        return result
    }

    /// Destination property name → source property name, for one matched pair of entities.
    static func attributeMatch(_ d: Entity, _ s: Entity) -> [String: String] {
        match(d.attributes.map { ($0.name, $0.renamingIdentifier) }, s.attributes.map { ($0.name, $0.renamingIdentifier) })
    }

    static func relationshipMatch(_ d: Entity, _ s: Entity) -> [String: String] {
        match(d.relationships.map { ($0.name, $0.renamingIdentifier) }, s.relationships.map { ($0.name, $0.renamingIdentifier) })
    }

    /// The source entity a destination entity comes from.
    func sourceEntity(of d: Entity) -> Entity? { entityMatch[d.name].flatMap { source.entity(named: $0) } }

    /// The destination name of a source entity, if it is kept.
    func destinationName(ofSource name: String) -> String? { entityMatch.first { $0.value == name }?.key }

    mutating func plan() -> SchemaMigrationPlan {
        var entities: [EntityMigration] = []
        for d in destination.entities {
            guard let s = sourceEntity(of: d) else {
                entities.append(EntityMigration(
                    name: d.name, source: nil, change: .added,
                    attributes: d.attributes.map { Self.added($0) }, relationships: d.relationships.map { Self.added($0) },
                    removedAttributes: [], removedRelationships: [], addedUniquenessConstraints: []))
                continue
            }
            entities.append(plan(d, from: s))
        }
        let kept = Set(entityMatch.values)
        let removed = source.entities.map(\.name).filter { !kept.contains($0) }
        return SchemaMigrationPlan(
            sourceVersionHashes: source.versionHashes, destinationVersionHashes: destination.versionHashes,
            entities: entities, removedEntities: removed)
    }

    private mutating func plan(_ d: Entity, from s: Entity) -> EntityMigration {
        let parent = s.definition.parent.map { destinationName(ofSource: $0) ?? "(removed) \($0)" }
        var parentChange: EntityMigration.ParentChange?
        if parent != d.definition.parent {
            // Records keep their keys: within one hierarchy nothing else changes; joining another is checked against
            // its records' keys when the data is read.
            let sameHierarchy = destinationName(ofSource: s.rootName) == d.rootName
            parentChange = EntityMigration.ParentChange(from: parent, to: d.definition.parent, changesHierarchy: !sameHierarchy)
            if !sameHierarchy { checkLinksIntoMovedEntity(d, from: s) }
        }
        if d.isAbstract && !s.isAbstract {
            problems.append(.notInferable(entity: d.name, property: nil, reason:
                "becomes abstract; its records would have no entity to belong to"))
        }
        let am = Self.attributeMatch(d, s)
        let attributes = d.attributes.map { a in
            am[a.name].flatMap { s.attribute($0) }.map { attribute(a, from: $0, in: d) } ?? Self.added(a)
        }
        let rm = Self.relationshipMatch(d, s)
        let relationships = d.relationships.map { r in
            rm[r.name].flatMap { s.relationship($0) }.map { relationship(r, from: $0, in: d) } ?? addedRelationship(r, in: d)
        }
        let keptAttributes = Set(am.values)
        let keptRelationships = Set(rm.values)
        // Constraints compared in destination names: a source constraint over renamed attributes is the same one.
        let toDestination = Dictionary(am.map { ($0.value, $0.key) }, uniquingKeysWith: { a, _ in a })
        let existing = Set(s.uniquenessConstraints.map { Set($0.compactMap { toDestination[$0] }) })
        let addedConstraints = d.definition.uniquenessConstraints.filter { !existing.contains(Set($0)) }
        var migration = EntityMigration(
            name: d.name, source: s.name, change: .unchanged, attributes: attributes, relationships: relationships,
            removedAttributes: s.attributes.map(\.name).filter { !keptAttributes.contains($0) },
            removedRelationships: s.relationships.map(\.name).filter { !keptRelationships.contains($0) },
            addedUniquenessConstraints: addedConstraints)
        migration.parentChange = parentChange
        if s.name != d.name {
            migration.change = .renamed
        } else if migration.isModified || s.versionHash != d.versionHash {
            migration.change = .modified
        }
        return migration
    }

    /// A relationship of the source schema whose destination is a proper ancestor of `s` may link `s`'s records; when
    /// `s` leaves that hierarchy, such links would point into the wrong one, unless the relationship's destination
    /// in the new schema still includes `d`.
    private mutating func checkLinksIntoMovedEntity(_ d: Entity, from s: Entity) {
        for owner in source.entities {
            guard let ownerDestination = destinationName(ofSource: owner.name).flatMap({ destination.entity(named: $0) }) else { continue }
            let kept = Self.relationshipMatch(ownerDestination, owner)
            for (newName, oldName) in kept {
                guard let old = owner.relationship(oldName), s.ancestorNames.contains(old.destination),
                      let new = ownerDestination.relationship(newName), !d.isKind(of: new.destination) else { continue }
                problems.append(.notInferable(entity: d.name, property: nil, reason:
                    "leaves the hierarchy of \(old.destination), but \(owner.name).\(oldName) may link its records "
                    + "and leads to \(new.destination) in the new schema; move the links in a custom migration first"))
            }
        }
    }

    static func added(_ a: AttributeDescription) -> PropertyMigration {
        let required = !a.isOptional && (a.defaultValue?.isNull ?? true)
        let how = if let dv = a.defaultValue, !dv.isNull { "added; records get its default \(dv)" }
            else if required { "added, required with no default: allowed only while the entity has no records" }
            else { "added; records get no value" }
        return PropertyMigration(name: a.name, source: nil, change: .added, how: how, requiresValue: required)
    }

    static func added(_ r: RelationshipDescription) -> PropertyMigration {
        let required = !r.isOptional || r.minCount > 0
        return PropertyMigration(name: r.name, source: nil, change: .added,
                                 how: required ? "added, required: allowed only while the entity has no records"
                                     : "added; records get no link", requiresValue: required)
    }

    private mutating func addedRelationship(_ r: RelationshipDescription, in d: Entity) -> PropertyMigration {
        // A new inverse of a relationship that exists would need its links derived from the other side's.
        if let inverseName = r.inverse, let target = destination.entity(named: r.destination),
           let targetSource = sourceEntity(of: target), Self.relationshipMatch(target, targetSource)[inverseName] != nil {
            problems.append(.notInferable(entity: d.name, property: r.name, reason:
                "is added as the inverse of the existing \(target.name).\(inverseName); its links would have to be "
                + "derived from that relationship's, which needs a custom migration"))
        }
        return Self.added(r)
    }

    private mutating func attribute(_ a: AttributeDescription, from s: AttributeDescription, in d: Entity) -> PropertyMigration {
        var parts: [String] = []
        var change = PropertyMigration.Change.unchanged
        var requiresValue = false
        if s.name != a.name {
            parts.append("renamed from \(s.name)")
            change = .renamed
        }
        switch AttributeConversion(from: s.type, to: a.type) {
        case .same?: break
        case .widen?:
            parts.append("\(s.type.rawValue) → \(a.type.rawValue), widened (every value fits)")
            change = .widened
        case .toString?:
            parts.append("\(s.type.rawValue) → string, each value in its exact text form")
            change = .convertedToString
        case nil where customStep:
            parts.append("\(s.type.rawValue) → \(a.type.rawValue), converted by the custom step")
            change = .custom
        case nil:
            problems.append(.notInferable(entity: d.name, property: a.name, reason:
                "type changes from \(s.type.rawValue) to \(a.type.rawValue), which cannot be converted without loss"))
        }
        if s.isOptional && !a.isOptional {
            if let dv = a.defaultValue, !dv.isNull {
                parts.append("optional → required; records without a value get its default \(dv)")
            } else {
                parts.append("optional → required; every record must have a value (checked before anything is written)")
                requiresValue = true
            }
            if change == .unchanged || change == .renamed { change = .madeRequired }
        } else if !s.isOptional && a.isOptional {
            parts.append("required → optional")
            if change == .unchanged || change == .renamed { change = .madeOptional }
        }
        if change == .unchanged, !Self.sameExceptName(a, s) {
            parts.append("definition changed (default, flags or user info); values copied as they are")
            change = .modified
        }
        return PropertyMigration(name: a.name, source: s.name, change: change,
                                 how: parts.isEmpty ? "unchanged" : parts.joined(separator: "; "), requiresValue: requiresValue)
    }

    private mutating func relationship(_ r: RelationshipDescription, from q: RelationshipDescription, in d: Entity) -> PropertyMigration {
        var parts: [String] = []
        var change = PropertyMigration.Change.unchanged
        var requiresValue = false
        if q.name != r.name {
            parts.append("renamed from \(q.name)")
            change = .renamed
        }
        if entityMatch[r.destination] != q.destination {
            problems.append(.notInferable(entity: d.name, property: r.name, reason:
                "destination changes from \(q.destination) to \(r.destination); its links cannot be carried over"))
        }
        if q.isToMany && !r.isToMany {
            problems.append(.notInferable(entity: d.name, property: r.name, reason:
                "to-many becomes to-one; records with several links would lose all but one"))
        } else if !q.isToMany && r.isToMany {
            parts.append("to-one → to-many; a link becomes a one-element set")
            change = .madeToMany
        } else if q.isToMany && q.isOrdered != r.isOrdered {
            parts.append(r.isOrdered ? "unordered → ordered; links keep their stored order" : "ordered → unordered")
            if change == .unchanged || change == .renamed { change = .orderingChanged }
        }
        if let inverseName = r.inverse, let target = destination.entity(named: r.destination),
           let targetSource = sourceEntity(of: target) {
            let inverseSource = Self.relationshipMatch(target, targetSource)[inverseName]
            if inverseSource == nil || inverseSource != q.inverse {
                if inverseSource != nil {
                    problems.append(.notInferable(entity: d.name, property: r.name, reason:
                        "gets \(target.name).\(inverseName) as its inverse, which was not; the links of the two cannot "
                        + "be made to agree without a custom migration"))
                }
            }
        }
        if (q.isOptional && !r.isOptional) || r.minCount > q.minCount {
            parts.append("optional → required; every record must have a link (checked before anything is written)")
            requiresValue = true
            if change == .unchanged || change == .renamed { change = .madeRequired }
        } else if !q.isOptional && r.isOptional {
            parts.append("required → optional")
            if change == .unchanged || change == .renamed { change = .madeOptional }
        }
        var checkedMaximum: Int?
        if r.isToMany, r.maxCount > 0, q.maxCount == 0 || r.maxCount < q.maxCount {
            parts.append("at most \(r.maxCount) links now (checked before anything is written)")
            checkedMaximum = r.maxCount
            if change == .unchanged || change == .renamed { change = .modified }
        }
        if change == .unchanged, !Self.sameExceptName(r, q, destinationMatches: entityMatch[r.destination] == q.destination) {
            parts.append("definition changed (delete rule, counts or user info); links copied as they are")
            change = .modified
        }
        return PropertyMigration(name: r.name, source: q.name, change: change,
                                 how: parts.isEmpty ? "unchanged" : parts.joined(separator: "; "), requiresValue: requiresValue,
                                 checkedMaximum: checkedMaximum)
    }

    private static func sameExceptName(_ a: AttributeDescription, _ b: AttributeDescription) -> Bool {
        var b = b
        b.name = a.name
        b.renamingIdentifier = a.renamingIdentifier
        return a == b
    }

    private static func sameExceptName(_ r: RelationshipDescription, _ q: RelationshipDescription, destinationMatches: Bool) -> Bool {
        var q = q
        q.name = r.name
        q.renamingIdentifier = r.renamingIdentifier
        if destinationMatches { q.destination = r.destination }
        q.inverse = r.inverse
        return r == q
    }
}
