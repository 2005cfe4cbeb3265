import Foundation

/// Computes entity version hashes.
///
/// The hash covers exactly what decides how an entity's records are stored and related: the entity's name, parent
/// chain and abstractness, each stored attribute's name, type and optionality, each stored relationship's name,
/// destination, inverse, cardinality, order and counts, the uniqueness constraints and the version-hash modifier.
/// It ignores what does not touch storage: defaults, delete rules, user info, class names, transient properties and
/// declaration order. Two schemas whose entity hashes agree can read each other's stores.
enum VersionHash {
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
