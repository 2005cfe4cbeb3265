import Foundation

/// A validated data model: entities with inheritance resolved, and named configurations.
///
/// Build one from Swift (``init(entities:configurations:)``), from the JSON form (``init(jsonData:file:)``) or from an
/// Xcode model (``init(xcodeModelAt:)``). Construction validates everything and throws ``SchemaError`` naming the
/// entity and property at fault, so a `Schema` in hand is always consistent.
///
/// A schema is a value: it is `Sendable`, `Hashable` (by its definitions) and `Codable` (the JSON form), and stores
/// embed it in their metadata so they can be opened without the schema file.
public struct Schema: Sendable, Hashable {
    /// The entity definitions as written, in order.
    public let definitions: [EntityDescription]
    /// Named subsets of entities. Each store added to a coordinator may name one; a store without one holds every
    /// entity.
    public let configurations: [String: [String]]
    /// The resolved entities, in definition order.
    public let entities: [Entity]

    private let byName: [String: Entity]

    /// Validates the definitions and resolves inheritance.
    ///
    /// - Throws: ``SchemaError`` for duplicate names, unknown parents or destinations, inheritance cycles,
    ///   mismatched inverses, defaults of the wrong type, constraints on unknown attributes and configurations that
    ///   name unknown entities.
    public init(entities definitions: [EntityDescription], configurations: [String: [String]] = [:]) throws {
        self.definitions = definitions
        self.configurations = configurations
        let resolved = try SchemaResolver(definitions: definitions, configurations: configurations).resolve()
        self.entities = resolved
        var map: [String: Entity] = [:]
        for e in resolved { map[e.name] = e }
        self.byName = map
    }

    /// The resolved entity named `name`.
    public func entity(named name: String) -> Entity? { byName[name] }

    /// The resolved entity named `name`, or ``StoreError/unknownEntity(_:)``.
    public func requireEntity(_ name: String) throws(StoreError) -> Entity {
        guard let e = byName[name] else { throw .unknownEntity(name) }
        return e
    }

    /// The entities a store with configuration `name` holds (every entity for `nil`). Sub-entities of a member are
    /// members too, since they share its key space.
    public func entities(inConfiguration name: String?) throws(StoreError) -> [Entity] {
        guard let name else { return entities }
        guard let members = configurations[name] else { throw .unknownConfiguration(name) }
        let wanted = Set(members.flatMap { byName[$0]?.hierarchyNames ?? [] })
        return entities.filter { wanted.contains($0.name) }
    }

    /// The root entities (those without a parent): one key space each.
    public var rootEntities: [Entity] { entities.filter { $0.definition.parent == nil } }

    /// Entity name → version hash (``Entity/versionHash``: Core Data's, in base64, as a Core Data store's
    /// `NSStoreModelVersionHashes` holds it), for every entity. ``coreDataVersionHashes`` has them as bytes, with
    /// the digest and checksum that summarise the whole schema.
    public var versionHashes: [String: String] {
        Dictionary(uniqueKeysWithValues: entities.map { ($0.name, $0.versionHash) })
    }

    /// The inverse of `relationship` declared on its destination, if any.
    public func inverse(of relationship: RelationshipDescription) -> RelationshipDescription? {
        guard let inv = relationship.inverse else { return nil }
        return byName[relationship.destination]?.relationship(inv)
    }

    public static func == (lhs: Schema, rhs: Schema) -> Bool {
        lhs.definitions == rhs.definitions && lhs.configurations == rhs.configurations
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(definitions)
        hasher.combine(configurations)
    }
}

/// Resolves inheritance and validates a set of entity definitions.
struct SchemaResolver {
    let definitions: [EntityDescription]
    let configurations: [String: [String]]

    func resolve() throws(SchemaError) -> [Entity] {
        var defs: [String: EntityDescription] = [:]
        for d in definitions {
            guard !d.name.isEmpty else { throw .invalidName(entity: d.name, property: nil) }
            guard defs[d.name] == nil else { throw .duplicateEntity(d.name) }
            defs[d.name] = d
        }
        // Ancestor chains, refusing unknown parents and cycles.
        var ancestors: [String: [String]] = [:]
        for d in definitions {
            var chain: [String] = []
            var cursor = d.parent
            while let p = cursor {
                guard let parent = defs[p] else { throw .unknownParent(entity: d.name, parent: p) }
                guard p != d.name, !chain.contains(p) else { throw .inheritanceCycle(entity: d.name) }
                chain.append(p)
                cursor = parent.parent
            }
            ancestors[d.name] = chain
        }
        // Inherited properties first (root's first), then own.
        var allAttributes: [String: [AttributeDescription]] = [:]
        var allRelationships: [String: [RelationshipDescription]] = [:]
        var allConstraints: [String: [[String]]] = [:]
        for d in definitions {
            let lineage = (ancestors[d.name] ?? []).reversed().compactMap { defs[$0] } + [d]
            var seen: Set<String> = []
            var attrs: [AttributeDescription] = []
            var rels: [RelationshipDescription] = []
            var constraints: [[String]] = []
            for level in lineage {
                for a in level.attributes {
                    guard !a.name.isEmpty else { throw .invalidName(entity: d.name, property: a.name) }
                    guard seen.insert(a.name).inserted else { throw .duplicateProperty(entity: d.name, property: a.name) }
                    if let dv = a.defaultValue, !dv.isNull, !dv.fits(a.type) {
                        throw .defaultValueMismatch(entity: level.name, attribute: a.name, type: a.type)
                    }
                    if !a.isTransient { attrs.append(a) }
                }
                for r in level.relationships {
                    guard !r.name.isEmpty else { throw .invalidName(entity: d.name, property: r.name) }
                    guard seen.insert(r.name).inserted else { throw .duplicateProperty(entity: d.name, property: r.name) }
                    if !r.isTransient { rels.append(r) }
                }
                // Derived attributes share the property namespace but are computed by Core Data, never stored.
                for a in level.derivedAttributes {
                    guard !a.name.isEmpty else { throw .invalidName(entity: d.name, property: a.name) }
                    guard seen.insert(a.name).inserted else { throw .duplicateProperty(entity: d.name, property: a.name) }
                }
                constraints += level.uniquenessConstraints
            }
            var indexNames: Set<String> = []
            for index in d.fetchIndexes {
                guard !index.name.isEmpty else { throw .invalidFetchIndex(entity: d.name, index: "", reason: "it has no name") }
                guard indexNames.insert(index.name).inserted else {
                    throw .invalidFetchIndex(entity: d.name, index: index.name, reason: "the entity has two of that name")
                }
                guard !index.elements.isEmpty else {
                    throw .invalidFetchIndex(entity: d.name, index: index.name, reason: "it indexes no property")
                }
                for element in index.elements where !seen.contains(element.property) {
                    throw .invalidFetchIndex(
                        entity: d.name, index: index.name, reason: "'\(element.property)' is not a property of the entity")
                }
            }
            for c in d.uniquenessConstraints {
                guard !c.isEmpty else { throw .invalidUniquenessConstraint(entity: d.name, attribute: "") }
                for name in c where !attrs.contains(where: { $0.name == name }) {
                    throw .invalidUniquenessConstraint(entity: d.name, attribute: name)
                }
            }
            allAttributes[d.name] = attrs
            allRelationships[d.name] = rels
            allConstraints[d.name] = constraints
        }
        // Relationship destinations, inverses and counts.
        for d in definitions {
            for r in d.relationships {
                guard defs[r.destination] != nil else {
                    throw .unknownDestination(entity: d.name, relationship: r.name, destination: r.destination)
                }
                if r.minCount < 0 || r.maxCount < 0 || (r.maxCount > 0 && r.minCount > r.maxCount)
                    || (!r.isToMany && r.maxCount > 1)
                {
                    throw .invalidCount(entity: d.name, relationship: r.name)
                }
                guard let invName = r.inverse else { continue }
                guard let inv = allRelationships[r.destination]?.first(where: { $0.name == invName })
                        ?? defs[r.destination]?.relationships.first(where: { $0.name == invName })
                else {
                    throw .inverseMismatch(entity: d.name, relationship: r.name,
                                           reason: "\(r.destination) has no relationship '\(invName)'")
                }
                if let back = inv.inverse, back != r.name {
                    throw .inverseMismatch(entity: d.name, relationship: r.name,
                                           reason: "\(r.destination).\(invName) names '\(back)' as its inverse")
                }
                let invDest = inv.destination
                guard invDest == d.name || (ancestors[d.name] ?? []).contains(invDest)
                        || (ancestors[invDest] ?? []).contains(d.name)
                else {
                    throw .inverseMismatch(entity: d.name, relationship: r.name,
                                           reason: "\(r.destination).\(invName) points to \(invDest), not \(d.name)")
                }
                if r.isTransient != inv.isTransient {
                    throw .inverseMismatch(entity: d.name, relationship: r.name,
                                           reason: "one side is transient and the other is not")
                }
            }
        }
        for (config, members) in configurations {
            for m in members where defs[m] == nil {
                throw .unknownConfigurationMember(configuration: config, entity: m)
            }
        }
        // Hierarchies (self + descendants, schema order) and version hashes (Core Data's, now that the
        // definitions are known to be consistent).
        var result: [Entity] = []
        let hashes = VersionHashMemo.hashes(for: definitions) {
            var hasher = CoreDataVersionHash(definitions: definitions)
            var hashes: [String: String] = [:]
            for d in definitions { hashes[d.name] = Data(hasher.entityHash(d.name)).base64EncodedString() }
            return hashes
        }
        for d in definitions {
            let chain = ancestors[d.name] ?? []
            let hierarchy = definitions.filter { $0.name == d.name || (ancestors[$0.name] ?? []).contains(d.name) }
                .map(\.name)
            let attrs = allAttributes[d.name] ?? []
            let rels = allRelationships[d.name] ?? []
            let hash = hashes[d.name] ?? ""
            result.append(Entity(
                definition: d, rootName: chain.last ?? d.name, ancestorNames: chain, hierarchyNames: hierarchy,
                attributes: attrs, relationships: rels, uniquenessConstraints: allConstraints[d.name] ?? [],
                versionHash: hash))
        }
        return result
    }
}
