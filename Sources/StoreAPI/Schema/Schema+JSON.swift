import Foundation

/// The JSON form of a schema. Optional keys may be left out; their defaults are shown.
///
/// ```json
/// {
///   "entities": [
///     { "name": "Author",
///       "attributes": [ { "name": "name", "type": "string", "optional": false } ],
///       "relationships": [ { "name": "books", "destination": "Book", "inverse": "author",
///                            "toMany": true, "ordered": true, "deleteRule": "cascade" } ],
///       "uniquenessConstraints": [ ["name"] ] },
///     { "name": "Book", "parent": null, "abstract": false,
///       "attributes": [ { "name": "title", "type": "string", "default": "Untitled" },
///                       { "name": "pages", "type": "integer32", "optional": true, "default": 0 } ],
///       "relationships": [ { "name": "author", "destination": "Author", "inverse": "books" } ] }
///   ],
///   "configurations": { "Local": ["Author", "Book"] }
/// }
/// ```
///
/// Attribute keys: `name`, `type` (an ``AttributeType`` raw value), `optional` (true), `default` (absent; in the
/// JSON form of the type, see ``StoreValue/jsonObject``), `transient` (false), `valueTransformer`, `userInfo`,
/// `versionHashModifier`, `readOnly` (false), `allowsExternalBinaryDataStorage` (false),
/// `preservesValueInHistoryOnDeletion` (false), `renamingIdentifier`, `derivation` (an object: `expression`,
/// `filteringPredicate`), `indexed` (false).
/// Relationship keys: `name`, `destination`, `inverse`, `toMany` (false), `ordered` (false), `deleteRule`
/// (`nullify`; also `cascade`, `deny`, `noAction`), `optional` (true), `minCount` (0), `maxCount` (1 for to-one,
/// 0 = unbounded for to-many), `transient` (false), `userInfo`, `versionHashModifier`, `readOnly` (false),
/// `renamingIdentifier`, `declaredMinCount`, `declaredMaxCount` (the counts as a model file wrote them).
/// Entity keys: `name`, `parent`, `abstract` (false), `attributes`, `relationships`, `uniquenessConstraints`,
/// `userInfo`, `versionHashModifier`, `className`, `derivedAttributes` (attributes with a `derivation`),
/// `renamingIdentifier`, `fetchIndexes` (each an object: `name`, `elements`, each element an object: `property`,
/// `kind` (`binary`; also `rTree`), `ascending` (true)). Keys added later are optional, so documents written before
/// them still read.
extension Schema: Codable {
    private enum CodingKeys: String, CodingKey { case entities, configurations }

    public init(from decoder: Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        let entities = try c.decode([EntityDescription].self, forKey: .entities)
        let configurations = try c.decodeIfPresent([String: [String]].self, forKey: .configurations) ?? [:]
        try self.init(entities: entities, configurations: configurations)
    }

    public func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(definitions, forKey: .entities)
        if !configurations.isEmpty { try c.encode(configurations, forKey: .configurations) }
    }

    /// Reads the JSON form.
    ///
    /// - Throws: ``SchemaError/unreadableModel(file:reason:)`` for malformed JSON (naming `file`), or the
    ///   ``SchemaError`` validation found.
    public init(jsonData: Data, file: String = "schema.json") throws {
        var bytes = ArraySlice(jsonData)
        // Editors on some systems start UTF-8 files with a byte order mark; JSON (RFC 8259 §8.1) lets readers skip it.
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { bytes = bytes.dropFirst(3) }
        do {
            self = try Schema(json: try JSONParser.parse(bytes), path: "")
        } catch let e as SchemaError {
            throw e
        } catch let e as JSONSyntaxError {
            throw SchemaError.unreadableModel(file: file, reason: "invalid JSON at byte \(e.offset): \(e.message)")
        } catch {
            throw SchemaError.unreadableModel(file: file, reason: "\(error)")
        }
    }

    /// The JSON form, pretty-printed with sorted keys.
    ///
    /// The text is the one `JSONEncoder` writes for this conformance with `[.prettyPrinted, .sortedKeys,
    /// .withoutEscapingSlashes]`, written without it (see `Schema+JSONWriter.swift` for why).
    public func jsonData() throws -> Data {
        Data(jsonValue.text(.init(prettyPrinted: true, sortedKeys: true, escapesSlashes: false)))
    }
}

extension EntityDescription: Codable {
    private enum CodingKeys: String, CodingKey {
        case name, parent, abstract, attributes, relationships, uniquenessConstraints, userInfo, versionHashModifier
        case className, derivedAttributes, renamingIdentifier, fetchIndexes
    }

    public init(from decoder: Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        let name = try c.decode(String.self, forKey: .name)
        let attributes: [AttributeDescription]
        let derivedAttributes: [AttributeDescription]
        do {
            attributes = try c.decodeIfPresent([AttributeDescription].self, forKey: .attributes) ?? []
            derivedAttributes = try c.decodeIfPresent([AttributeDescription].self, forKey: .derivedAttributes) ?? []
        } catch let e as SchemaError {
            // An attribute's decoder cannot see the entity's name; put it in place of the coding path.
            switch e {
            case .unknownAttributeType(_, let a, let t): throw SchemaError.unknownAttributeType(entity: name, attribute: a, type: t)
            case .defaultValueMismatch(_, let a, let t): throw SchemaError.defaultValueMismatch(entity: name, attribute: a, type: t)
            default: throw e
            }
        }
        self.init(
            name: name,
            parent: try c.decodeIfPresent(String.self, forKey: .parent),
            isAbstract: try c.decodeIfPresent(Bool.self, forKey: .abstract) ?? false,
            attributes: attributes,
            relationships: try c.decodeIfPresent([RelationshipDescription].self, forKey: .relationships) ?? [],
            uniquenessConstraints: try c.decodeIfPresent([[String]].self, forKey: .uniquenessConstraints) ?? [],
            userInfo: try c.decodeIfPresent([String: String].self, forKey: .userInfo) ?? [:],
            versionHashModifier: try c.decodeIfPresent(String.self, forKey: .versionHashModifier),
            representedClassName: try c.decodeIfPresent(String.self, forKey: .className),
            derivedAttributes: derivedAttributes,
            renamingIdentifier: try c.decodeIfPresent(String.self, forKey: .renamingIdentifier),
            fetchIndexes: try c.decodeIfPresent([FetchIndex].self, forKey: .fetchIndexes) ?? [])
    }

    public func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(name, forKey: .name)
        try c.encodeIfPresent(parent, forKey: .parent)
        if isAbstract { try c.encode(true, forKey: .abstract) }
        if !attributes.isEmpty { try c.encode(attributes, forKey: .attributes) }
        if !relationships.isEmpty { try c.encode(relationships, forKey: .relationships) }
        if !uniquenessConstraints.isEmpty { try c.encode(uniquenessConstraints, forKey: .uniquenessConstraints) }
        if !userInfo.isEmpty { try c.encode(userInfo, forKey: .userInfo) }
        try c.encodeIfPresent(versionHashModifier, forKey: .versionHashModifier)
        try c.encodeIfPresent(representedClassName, forKey: .className)
        if !derivedAttributes.isEmpty { try c.encode(derivedAttributes, forKey: .derivedAttributes) }
        try c.encodeIfPresent(renamingIdentifier, forKey: .renamingIdentifier)
        if !fetchIndexes.isEmpty { try c.encode(fetchIndexes, forKey: .fetchIndexes) }
    }
}

extension FetchIndex: Codable {
    private enum CodingKeys: String, CodingKey { case name, elements }

    public init(from decoder: Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        self.init(name: try c.decode(String.self, forKey: .name), elements: try c.decode([Element].self, forKey: .elements))
    }

    public func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(name, forKey: .name)
        try c.encode(elements, forKey: .elements)
    }
}

extension FetchIndex.Element: Codable {
    private enum CodingKeys: String, CodingKey { case property, kind, ascending }

    public init(from decoder: Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            property: try c.decode(String.self, forKey: .property),
            kind: try c.decodeIfPresent(FetchIndex.Kind.self, forKey: .kind) ?? .binary,
            isAscending: try c.decodeIfPresent(Bool.self, forKey: .ascending) ?? true)
    }

    public func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(property, forKey: .property)
        if kind != .binary { try c.encode(kind, forKey: .kind) }
        if !isAscending { try c.encode(false, forKey: .ascending) }
    }
}

extension FetchIndex.Kind: Codable {}

extension AttributeDescription: Codable {
    private enum CodingKeys: String, CodingKey {
        case name, type, optional, `default`, transient, valueTransformer, userInfo
        case versionHashModifier, readOnly, allowsExternalBinaryDataStorage, preservesValueInHistoryOnDeletion
        case renamingIdentifier, derivation, indexed
    }

    public init(from decoder: Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        let name = try c.decode(String.self, forKey: .name)
        let typeName = try c.decode(String.self, forKey: .type)
        guard let type = AttributeType(rawValue: typeName) else {
            throw SchemaError.unknownAttributeType(entity: Self.entityName(c.codingPath), attribute: name, type: typeName)
        }
        var defaultValue: StoreValue?
        if let fragment = try c.decodeIfPresent(JSONFragment.self, forKey: .default) {
            guard let v = StoreValue(json: fragment.object, type: type) else {
                throw SchemaError.defaultValueMismatch(entity: Self.entityName(c.codingPath), attribute: name, type: type)
            }
            defaultValue = v.isNull ? nil : v
        }
        self.init(
            name: name, type: type, isOptional: try c.decodeIfPresent(Bool.self, forKey: .optional) ?? true,
            defaultValue: defaultValue, isTransient: try c.decodeIfPresent(Bool.self, forKey: .transient) ?? false,
            valueTransformerName: try c.decodeIfPresent(String.self, forKey: .valueTransformer),
            userInfo: try c.decodeIfPresent([String: String].self, forKey: .userInfo) ?? [:],
            versionHashModifier: try c.decodeIfPresent(String.self, forKey: .versionHashModifier),
            isReadOnly: try c.decodeIfPresent(Bool.self, forKey: .readOnly) ?? false,
            allowsExternalBinaryDataStorage: try c.decodeIfPresent(Bool.self, forKey: .allowsExternalBinaryDataStorage) ?? false,
            preservesValueInHistoryOnDeletion: try c.decodeIfPresent(Bool.self, forKey: .preservesValueInHistoryOnDeletion) ?? false,
            renamingIdentifier: try c.decodeIfPresent(String.self, forKey: .renamingIdentifier),
            derivation: try c.decodeIfPresent(AttributeDerivation.self, forKey: .derivation),
            isIndexed: try c.decodeIfPresent(Bool.self, forKey: .indexed) ?? false)
    }

    public func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(name, forKey: .name)
        try c.encode(type.rawValue, forKey: .type)
        if !isOptional { try c.encode(false, forKey: .optional) }
        if let d = defaultValue, !d.isNull { try c.encode(JSONFragment(d.jsonObject), forKey: .default) }
        if isTransient { try c.encode(true, forKey: .transient) }
        try c.encodeIfPresent(valueTransformerName, forKey: .valueTransformer)
        if !userInfo.isEmpty { try c.encode(userInfo, forKey: .userInfo) }
        try c.encodeIfPresent(versionHashModifier, forKey: .versionHashModifier)
        if isReadOnly { try c.encode(true, forKey: .readOnly) }
        if allowsExternalBinaryDataStorage { try c.encode(true, forKey: .allowsExternalBinaryDataStorage) }
        if preservesValueInHistoryOnDeletion { try c.encode(true, forKey: .preservesValueInHistoryOnDeletion) }
        try c.encodeIfPresent(renamingIdentifier, forKey: .renamingIdentifier)
        try c.encodeIfPresent(derivation, forKey: .derivation)
        if isIndexed { try c.encode(true, forKey: .indexed) }
    }

    /// Decoding errors name the entity; its name is not in reach of a nested decoder, so use the coding path.
    fileprivate static func entityName(_ path: [CodingKey]) -> String {
        path.map { $0.intValue.map { "#\($0)" } ?? $0.stringValue }.joined(separator: ".")
    }
}

extension RelationshipDescription: Codable {
    private enum CodingKeys: String, CodingKey {
        case name, destination, inverse, toMany, ordered, deleteRule, optional, minCount, maxCount, transient, userInfo
        case versionHashModifier, readOnly, renamingIdentifier, declaredMinCount, declaredMaxCount
    }

    public init(from decoder: Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        let toMany = try c.decodeIfPresent(Bool.self, forKey: .toMany) ?? false
        self.init(
            name: try c.decode(String.self, forKey: .name),
            destination: try c.decode(String.self, forKey: .destination),
            inverse: try c.decodeIfPresent(String.self, forKey: .inverse),
            isToMany: toMany,
            isOrdered: try c.decodeIfPresent(Bool.self, forKey: .ordered) ?? false,
            deleteRule: try c.decodeIfPresent(DeleteRule.self, forKey: .deleteRule) ?? .nullify,
            isOptional: try c.decodeIfPresent(Bool.self, forKey: .optional) ?? true,
            minCount: try c.decodeIfPresent(Int.self, forKey: .minCount) ?? 0,
            maxCount: try c.decodeIfPresent(Int.self, forKey: .maxCount),
            isTransient: try c.decodeIfPresent(Bool.self, forKey: .transient) ?? false,
            userInfo: try c.decodeIfPresent([String: String].self, forKey: .userInfo) ?? [:],
            versionHashModifier: try c.decodeIfPresent(String.self, forKey: .versionHashModifier),
            isReadOnly: try c.decodeIfPresent(Bool.self, forKey: .readOnly) ?? false,
            renamingIdentifier: try c.decodeIfPresent(String.self, forKey: .renamingIdentifier),
            declaredMinCount: try c.decodeIfPresent(Int.self, forKey: .declaredMinCount),
            declaredMaxCount: try c.decodeIfPresent(Int.self, forKey: .declaredMaxCount))
    }

    public func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(name, forKey: .name)
        try c.encode(destination, forKey: .destination)
        try c.encodeIfPresent(inverse, forKey: .inverse)
        if isToMany { try c.encode(true, forKey: .toMany) }
        if isOrdered { try c.encode(true, forKey: .ordered) }
        if deleteRule != .nullify { try c.encode(deleteRule, forKey: .deleteRule) }
        if !isOptional { try c.encode(false, forKey: .optional) }
        if minCount != 0 { try c.encode(minCount, forKey: .minCount) }
        if maxCount != (isToMany ? 0 : 1) { try c.encode(maxCount, forKey: .maxCount) }
        if isTransient { try c.encode(true, forKey: .transient) }
        if !userInfo.isEmpty { try c.encode(userInfo, forKey: .userInfo) }
        try c.encodeIfPresent(versionHashModifier, forKey: .versionHashModifier)
        if isReadOnly { try c.encode(true, forKey: .readOnly) }
        try c.encodeIfPresent(renamingIdentifier, forKey: .renamingIdentifier)
        try c.encodeIfPresent(declaredMinCount, forKey: .declaredMinCount)
        try c.encodeIfPresent(declaredMaxCount, forKey: .declaredMaxCount)
    }
}

extension AttributeDerivation: Codable {
    private enum CodingKeys: String, CodingKey { case expression, filteringPredicate }

    public init(from decoder: Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            expression: try c.decode(String.self, forKey: .expression),
            filteringPredicate: try c.decodeIfPresent(String.self, forKey: .filteringPredicate))
    }

    public func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(expression, forKey: .expression)
        try c.encodeIfPresent(filteringPredicate, forKey: .filteringPredicate)
    }
}

/// A JSON scalar, for values whose type is only known from a sibling key.
struct JSONFragment: Codable {
    let object: Any?

    init(_ object: Any?) { self.object = object }

    init(from decoder: Decoder) throws {
        let c = try decoder.singleValueContainer()
        if c.decodeNil() { object = nil }
        else if let b = try? c.decode(Bool.self) { object = b }
        else if let i = try? c.decode(Int64.self) { object = NSNumber(value: i) }
        else if let d = try? c.decode(Double.self) { object = NSNumber(value: d) }
        else { object = try c.decode(String.self) }
    }

    func encode(to encoder: Encoder) throws {
        var c = encoder.singleValueContainer()
        switch object {
        case nil, is NSNull: try c.encodeNil()
        case let s as String: try c.encode(s)
        // NSNumber before Bool: on Linux `NSNumber(value: 1) as? Bool` succeeds, which wrote integer 1 as `true`.
        case let n as NSNumber:
            if StoreValue.isBool(n) { try c.encode(n.boolValue) }
            else if StoreValue.isFloat(n) { try c.encode(n.doubleValue) }
            else if let i = StoreValue.exactInt64(n) { try c.encode(i) }
            else { try c.encode(n.doubleValue) }
        case let b as Bool: try c.encode(b)
        default: try c.encodeNil()
        }
    }
}
