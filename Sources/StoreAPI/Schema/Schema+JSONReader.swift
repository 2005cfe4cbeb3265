import Foundation

/// Reading the schema's JSON form (documented on `Schema: Codable`) from a parsed document, without `JSONDecoder`:
/// every store open decodes the schema in the store's metadata, and `JSONDecoder`'s first use in a process cost
/// more than the rest of opening. The Codable conformance stays for schemas embedded in other Codable values; both
/// read the same documents to the same schema (`SchemaJSONReaderTests`).
extension Schema {
    /// Reads a schema from `value`, the JSON form's top-level object at `path`.
    ///
    /// - Throws: ``JSONShapeError`` for a document of the wrong shape, ``SchemaError`` for an invalid schema.
    init(json value: JSONValue, path: String) throws {
        let object = try JSONObjectReader(value, path: path)
        var entities: [EntityDescription] = []
        for element in try object.array("entities", required: true) {
            entities.append(try EntityDescription(json: try JSONObjectReader(element.value, path: element.path)))
        }
        var configurations: [String: [String]] = [:]
        for member in try object.members("configurations") {
            configurations[member.key] = try JSONObjectReader.strings(member.value, path: member.path)
        }
        try self.init(entities: entities, configurations: configurations)
    }
}

extension EntityDescription {
    init(json object: JSONObjectReader) throws {
        let name = try object.string("name")
        var attributes: [AttributeDescription] = []
        for element in try object.array("attributes") {
            attributes.append(try AttributeDescription(json: try JSONObjectReader(element.value, path: element.path), entity: name))
        }
        var relationships: [RelationshipDescription] = []
        for element in try object.array("relationships") {
            relationships.append(try RelationshipDescription(json: try JSONObjectReader(element.value, path: element.path)))
        }
        var derivedAttributes: [AttributeDescription] = []
        for element in try object.array("derivedAttributes") {
            derivedAttributes.append(try AttributeDescription(json: try JSONObjectReader(element.value, path: element.path), entity: name))
        }
        var constraints: [[String]] = []
        for element in try object.array("uniquenessConstraints") {
            constraints.append(try JSONObjectReader.strings(element.value, path: element.path))
        }
        var fetchIndexes: [FetchIndex] = []
        for element in try object.array("fetchIndexes") {
            fetchIndexes.append(try FetchIndex(json: try JSONObjectReader(element.value, path: element.path)))
        }
        self.init(
            name: name,
            parent: try object.optionalString("parent"),
            isAbstract: try object.bool("abstract", default: false),
            attributes: attributes,
            relationships: relationships,
            uniquenessConstraints: constraints,
            userInfo: try object.stringDictionary("userInfo"),
            versionHashModifier: try object.optionalString("versionHashModifier"),
            representedClassName: try object.optionalString("className"),
            derivedAttributes: derivedAttributes,
            renamingIdentifier: try object.optionalString("renamingIdentifier"),
            fetchIndexes: fetchIndexes)
    }
}

extension FetchIndex {
    init(json object: JSONObjectReader) throws {
        var elements: [Element] = []
        for element in try object.array("elements", required: true) {
            let e = try JSONObjectReader(element.value, path: element.path)
            var kind = Kind.binary
            if let kindName = try e.optionalString("kind") {
                guard let k = Kind(rawValue: kindName) else {
                    throw JSONShapeError.invalid(at: e.path("kind"), "'\(kindName)' is not a fetch index kind (\(Kind.allCases.map(\.rawValue).joined(separator: ", ")))")
                }
                kind = k
            }
            elements.append(Element(
                property: try e.string("property"), kind: kind, isAscending: try e.bool("ascending", default: true)))
        }
        self.init(name: try object.string("name"), elements: elements)
    }
}

extension AttributeDescription {
    init(json object: JSONObjectReader, entity: String) throws {
        let name = try object.string("name")
        let typeName = try object.string("type")
        guard let type = AttributeType(rawValue: typeName) else {
            throw SchemaError.unknownAttributeType(entity: entity, attribute: name, type: typeName)
        }
        var defaultValue: StoreValue?
        if let json = object.value("default") {
            // The value's JSON form for its type (see StoreValue(json:type:)), numbers converted straight from their
            // digits, as the interchange reader does.
            guard let v = StoreValue(json: json.foundationObject(for: type), type: type) else {
                throw SchemaError.defaultValueMismatch(entity: entity, attribute: name, type: type)
            }
            defaultValue = v.isNull ? nil : v
        }
        var derivation: AttributeDerivation?
        if let d = try object.optionalObject("derivation") {
            derivation = AttributeDerivation(
                expression: try d.string("expression"), filteringPredicate: try d.optionalString("filteringPredicate"))
        }
        self.init(
            name: name, type: type, isOptional: try object.bool("optional", default: true),
            defaultValue: defaultValue, isTransient: try object.bool("transient", default: false),
            valueTransformerName: try object.optionalString("valueTransformer"),
            userInfo: try object.stringDictionary("userInfo"),
            versionHashModifier: try object.optionalString("versionHashModifier"),
            isReadOnly: try object.bool("readOnly", default: false),
            allowsExternalBinaryDataStorage: try object.bool("allowsExternalBinaryDataStorage", default: false),
            preservesValueInHistoryOnDeletion: try object.bool("preservesValueInHistoryOnDeletion", default: false),
            renamingIdentifier: try object.optionalString("renamingIdentifier"),
            derivation: derivation, isIndexed: try object.bool("indexed", default: false))
    }
}

extension RelationshipDescription {
    init(json object: JSONObjectReader) throws {
        var deleteRule = DeleteRule.nullify
        if let ruleName = try object.optionalString("deleteRule") {
            guard let rule = DeleteRule(rawValue: ruleName) else {
                throw JSONShapeError.invalid(at: object.path("deleteRule"), "'\(ruleName)' is not a delete rule (\(DeleteRule.allCases.map(\.rawValue).joined(separator: ", ")))")
            }
            deleteRule = rule
        }
        self.init(
            name: try object.string("name"),
            destination: try object.string("destination"),
            inverse: try object.optionalString("inverse"),
            isToMany: try object.bool("toMany", default: false),
            isOrdered: try object.bool("ordered", default: false),
            deleteRule: deleteRule,
            isOptional: try object.bool("optional", default: true),
            minCount: try object.optionalInt("minCount") ?? 0,
            maxCount: try object.optionalInt("maxCount"),
            isTransient: try object.bool("transient", default: false),
            userInfo: try object.stringDictionary("userInfo"),
            versionHashModifier: try object.optionalString("versionHashModifier"),
            isReadOnly: try object.bool("readOnly", default: false),
            renamingIdentifier: try object.optionalString("renamingIdentifier"),
            declaredMinCount: try object.optionalInt("declaredMinCount"),
            declaredMaxCount: try object.optionalInt("declaredMaxCount"))
    }
}
