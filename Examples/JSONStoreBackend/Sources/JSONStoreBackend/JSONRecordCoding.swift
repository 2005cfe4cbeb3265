import Foundation
import StoreAPI

/// Turns records into JSON objects and back:
/// `{"entity":"Book","pk":7,"gid":"91D3…","attributes":{"title":"Dune"},"relationships":{"author":1,"tags":[2,3]}}`.
///
/// The values' JSON form is the framework's (`StoreValue.jsonObject` and `StoreValue(json:type:)`): it is already
/// lossless for every attribute type, so a backend should not invent its own.
struct JSONRecordCoding {
    let schema: Schema
    let url: URL

    /// The JSON object of `record`, ready for `JSONSerialization`.
    static func object(for record: Record, in entity: Entity) -> [String: Any] {
        var attributes: [String: Any] = [:]
        for (attribute, value) in zip(entity.attributes, record.attributes) {
            attributes[attribute.name] = value.jsonObject  // nil is written as null, never left out
        }
        var relationships: [String: Any] = [:]
        for (relationship, value) in zip(entity.relationships, record.relationships) {
            switch value {
            case .toOne(let key): relationships[relationship.name] = key.map { NSNumber(value: $0) } ?? NSNull()
            case .toMany(let keys): relationships[relationship.name] = keys.map { NSNumber(value: $0) }
            }
        }
        return [
            "entity": record.entity, "pk": NSNumber(value: record.primaryKey), "gid": record.globalID.uuidString,
            "attributes": attributes, "relationships": relationships,
        ]
    }

    /// The record in `object`, element `index` of the `records` array. The file is not trusted: every member is
    /// checked, and anything wrong is a `corruptStore` error saying where (`records[12] (Book/p7): …`).
    func record(from object: Any, at index: Int) throws -> Record {
        var place = "records[\(index)]"
        guard let members = object as? [String: Any] else { throw corrupt(place, "is not an object") }
        guard let name = members["entity"] as? String else { throw corrupt(place, "has no \"entity\" name") }
        guard let entity = schema.entity(named: name), !entity.isAbstract else {
            throw corrupt(place, "names entity '\(name)', which the store's schema has no concrete entity for")
        }
        guard let primaryKey = Self.int64(members["pk"]) else { throw corrupt(place, "has no integer \"pk\"") }
        place += " (\(name)/p\(primaryKey))"
        guard let gidText = members["gid"] as? String, let globalID = UUID(uuidString: gidText) else {
            throw corrupt(place, "has no UUID \"gid\"")
        }
        let unknown = Set(members.keys).subtracting(["entity", "pk", "gid", "attributes", "relationships"])
        guard unknown.isEmpty else { throw corrupt(place, "has unknown members \(unknown.sorted())") }

        let attributeValues = try nestedObject(members["attributes"], place, "attributes")
        try checkNames(attributeValues.keys, known: entity.attributes.map(\.name), place, "attribute")
        let attributes = try entity.attributes.map { attribute in
            // A missing member reads as nil, so a hand-written file may leave nils out.
            guard let value = StoreValue(json: attributeValues[attribute.name], type: attribute.type) else {
                throw corrupt(place, "attribute '\(attribute.name)' is not a valid \(attribute.type.rawValue)")
            }
            return value
        }

        let relationshipValues = try nestedObject(members["relationships"], place, "relationships")
        try checkNames(relationshipValues.keys, known: entity.relationships.map(\.name), place, "relationship")
        let relationships = try entity.relationships.map { relationship -> RelationshipValue in
            let value = relationshipValues[relationship.name]
            if relationship.isToMany {
                guard let items = (value ?? [Any]()) as? [Any] else {
                    throw corrupt(place, "relationship '\(relationship.name)' is not an array of keys")
                }
                let keys = items.compactMap(Self.int64)
                guard keys.count == items.count else {
                    throw corrupt(place, "relationship '\(relationship.name)' holds something other than integer keys")
                }
                return .toMany(keys)
            }
            if value == nil || value is NSNull { return .toOne(nil) }
            guard let key = Self.int64(value) else {
                throw corrupt(place, "relationship '\(relationship.name)' is not an integer key or null")
            }
            return .toOne(key)
        }
        return Record(entity: name, primaryKey: primaryKey, globalID: globalID, attributes: attributes, relationships: relationships)
    }

    /// An exact 64-bit integer, through the framework's value reader: it refuses fractions, booleans and numbers
    /// out of range instead of rounding them.
    static func int64(_ json: Any?) -> Int64? {
        guard let json, case .integer64(let value)? = StoreValue(json: json, type: .integer64) else { return nil }
        return value
    }

    /// The members of an optional JSON object (absent reads as empty).
    private func nestedObject(_ json: Any?, _ place: String, _ name: String) throws -> [String: Any] {
        guard let json else { return [:] }
        guard let members = json as? [String: Any] else { throw corrupt(place, "has \"\(name)\" that is not an object") }
        return members
    }

    private func checkNames(_ names: Dictionary<String, Any>.Keys, known: [String], _ place: String, _ kind: String) throws {
        let unknown = Set(names).subtracting(known)
        guard unknown.isEmpty else { throw corrupt(place, "has no \(kind) named \(unknown.sorted().joined(separator: ", "))") }
    }

    private func corrupt(_ place: String, _ problem: String) -> StoreError {
        .corruptStore(url, reason: "\(place) \(problem)")
    }
}
