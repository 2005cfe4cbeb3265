import Foundation

/// Writing the schema's JSON form (documented on `Schema: Codable`) without `JSONEncoder`: every store created and
/// every conversion writes the schema into the new store, and `JSONEncoder`'s first use in a process cost more than
/// writing the rest of a small store's metadata. The members are the Codable conformance's, key for key and value
/// for value (optional keys left out when they hold their default), and the text is the one `JSONEncoder` writes
/// (see ``JSONValue/text(_:)``); `JSONDocumentTextTests` compares the two.
extension Schema {
    /// The JSON form as a value.
    var jsonValue: JSONValue {
        .members([
            "entities": .array(definitions.map(\.jsonValue)),
            "configurations": configurations.isEmpty ? nil : .dictionary(configurations.mapValues(JSONValue.strings)),
        ])
    }
}

extension EntityDescription {
    var jsonValue: JSONValue {
        .members([
            "name": .string(name),
            "parent": parent.map(JSONValue.string),
            "abstract": isAbstract ? .bool(true) : nil,
            "attributes": attributes.isEmpty ? nil : .array(attributes.map(\.jsonValue)),
            "relationships": relationships.isEmpty ? nil : .array(relationships.map(\.jsonValue)),
            "uniquenessConstraints": uniquenessConstraints.isEmpty ? nil : .array(uniquenessConstraints.map(JSONValue.strings)),
            "userInfo": userInfo.isEmpty ? nil : .dictionary(userInfo.mapValues(JSONValue.string)),
            "versionHashModifier": versionHashModifier.map(JSONValue.string),
            "className": representedClassName.map(JSONValue.string),
            "derivedAttributes": derivedAttributes.isEmpty ? nil : .array(derivedAttributes.map(\.jsonValue)),
            "renamingIdentifier": renamingIdentifier.map(JSONValue.string),
            "fetchIndexes": fetchIndexes.isEmpty ? nil : .array(fetchIndexes.map(\.jsonValue)),
        ])
    }
}

extension FetchIndex {
    var jsonValue: JSONValue {
        .members([
            "name": .string(name),
            "elements": .array(elements.map { element in
                .members([
                    "property": .string(element.property),
                    "kind": element.kind == .binary ? nil : .string(element.kind.rawValue),
                    "ascending": element.isAscending ? nil : .bool(false),
                ])
            }),
        ])
    }
}

extension AttributeDescription {
    var jsonValue: JSONValue {
        var defaultJSON: JSONValue?
        if let d = defaultValue, !d.isNull { defaultJSON = Self.fragment(d.jsonObject) }
        return .members([
            "name": .string(name),
            "type": .string(type.rawValue),
            "optional": isOptional ? nil : .bool(false),
            "default": defaultJSON,
            "transient": isTransient ? .bool(true) : nil,
            "valueTransformer": valueTransformerName.map(JSONValue.string),
            "userInfo": userInfo.isEmpty ? nil : .dictionary(userInfo.mapValues(JSONValue.string)),
            "versionHashModifier": versionHashModifier.map(JSONValue.string),
            "readOnly": isReadOnly ? .bool(true) : nil,
            "allowsExternalBinaryDataStorage": allowsExternalBinaryDataStorage ? .bool(true) : nil,
            "preservesValueInHistoryOnDeletion": preservesValueInHistoryOnDeletion ? .bool(true) : nil,
            "renamingIdentifier": renamingIdentifier.map(JSONValue.string),
            "derivation": derivation.map { d in
                .members(["expression": .string(d.expression), "filteringPredicate": d.filteringPredicate.map(JSONValue.string)])
            },
            "indexed": isIndexed ? .bool(true) : nil,
        ])
    }

    /// A default's interchange form as JSON, decided as `JSONFragment.encode(to:)` decides it (a non-finite double,
    /// which `JSONEncoder` refuses, has a name in the interchange form and never reaches a number here).
    private static func fragment(_ object: Any) -> JSONValue {
        switch object {
        case is NSNull: return .null
        case let s as String: return .string(s)
        // NSNumber before Bool: on Linux `NSNumber(value: 1) as? Bool` succeeds.
        case let n as NSNumber:
            if StoreValue.isBool(n) { return .bool(n.boolValue) }
            if !StoreValue.isFloat(n), let i = StoreValue.exactInt64(n) { return .integer(i) }
            return JSONValue.double(n.doubleValue) ?? .null
        case let b as Bool: return .bool(b)
        default: return .null
        }
    }
}

extension RelationshipDescription {
    var jsonValue: JSONValue {
        .members([
            "name": .string(name),
            "destination": .string(destination),
            "inverse": inverse.map(JSONValue.string),
            "toMany": isToMany ? .bool(true) : nil,
            "ordered": isOrdered ? .bool(true) : nil,
            "deleteRule": deleteRule == .nullify ? nil : .string(deleteRule.rawValue),
            "optional": isOptional ? nil : .bool(false),
            "minCount": minCount == 0 ? nil : .integer(minCount),
            "maxCount": maxCount == (isToMany ? 0 : 1) ? nil : .integer(maxCount),
            "transient": isTransient ? .bool(true) : nil,
            "userInfo": userInfo.isEmpty ? nil : .dictionary(userInfo.mapValues(JSONValue.string)),
            "versionHashModifier": versionHashModifier.map(JSONValue.string),
            "readOnly": isReadOnly ? .bool(true) : nil,
            "renamingIdentifier": renamingIdentifier.map(JSONValue.string),
            "declaredMinCount": declaredMinCount.map { JSONValue.integer($0) },
            "declaredMaxCount": declaredMaxCount.map { JSONValue.integer($0) },
        ])
    }
}
