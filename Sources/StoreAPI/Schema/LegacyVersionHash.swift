import Foundation

/// The framework's first version hash, which stores written before version hashes became Core Data's carry
/// (``StoreMetadata/formatVersion`` 1). Used only to check such a store against the schema it is opened with; new
/// stores carry ``Entity/versionHash``.
///
/// It is a hex SHA-256 of a canonical text of what decides how an entity's records are stored and related: the
/// entity's name, parent chain and abstractness, each stored attribute's name, type and optionality, each stored
/// relationship's name, destination, inverse, cardinality, order and counts, the uniqueness constraints (inherited
/// ones included) and the version-hash modifier. It must never change: the stores that carry it cannot be rewritten.
enum LegacyVersionHash {
    /// The legacy hash of a resolved entity.
    static func of(_ entity: Entity) -> String {
        compute(entity: entity.definition, ancestors: entity.ancestorNames, attributes: entity.attributes,
                relationships: entity.relationships, uniquenessConstraints: entity.uniquenessConstraints)
    }

    static func compute(
        entity: EntityDescription, ancestors: [String], attributes: [AttributeDescription],
        relationships: [RelationshipDescription], uniquenessConstraints: [[String]]
    ) -> String {
        var canonical = "entity:\(entity.name)\u{1}parents:\(ancestors.joined(separator: ","))"
        canonical += "\u{1}abstract:\(entity.isAbstract)"
        for a in attributes.sorted(by: { $0.name < $1.name }) {
            canonical += "\u{1}attr:\(a.name):\(a.type.rawValue):\(a.isOptional)"
        }
        for r in relationships.sorted(by: { $0.name < $1.name }) {
            canonical += "\u{1}rel:\(r.name):\(r.destination):\(r.inverse ?? ""):\(r.isToMany):\(r.isOrdered)"
            canonical += ":\(r.minCount):\(r.maxCount)"
        }
        for c in uniquenessConstraints.map({ $0.sorted() }).sorted(by: { $0.joined(separator: ",") < $1.joined(separator: ",") }) {
            canonical += "\u{1}unique:\(c.joined(separator: ","))"
        }
        if let m = entity.versionHashModifier, !m.isEmpty { canonical += "\u{1}modifier:\(m)" }
        return StoreDigest.sha256Hex(Array(canonical.utf8))
    }
}

extension Schema {
    /// Entity name → the entity's legacy version hash (hex), as stores of ``StoreMetadata/formatVersion`` 1 carry
    /// it. Only for reading and testing such stores: new stores carry ``versionHashes``.
    @_spi(BackendKit) public var legacyVersionHashes: [String: String] {
        Dictionary(uniqueKeysWithValues: entities.map { ($0.name, LegacyVersionHash.of($0)) })
    }
}
