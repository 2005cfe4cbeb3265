import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif

/// Reads the XML `contents` file of one `.xcdatamodel` into entity definitions and configurations.
///
/// What is kept: entities (name, parent, abstract, class name, version-hash modifier, renaming identifier, user
/// info, uniqueness constraints, fetch indexes), attributes (type, optional, default, transient, value-transformer
/// name, version-hash modifier, renaming identifier, external-storage, preserve-after-deletion and `indexed` flags,
/// user info),
/// derived attributes (apart, in ``EntityDescription/derivedAttributes``, with their derivation expression),
/// relationships (destination, inverse, to-many, ordered, counts both normalised and as written, delete rule,
/// optional, transient, version-hash modifier, renaming identifier, user info) and configurations. Core Data's
/// version hash needs the renaming-free part of this; migrations need the renaming identifiers.
/// Fetch indexes and `indexed` flags decide which indexes a store has, so they are kept; a fetch index with an
/// element over an expression rather than a property is dropped whole (the schema's indexes are over properties).
/// What is deliberately dropped, because it decides neither what a store holds nor Core Data's version hash:
/// fetched properties, fetch request templates, legacy compound indexes, validation rules (min/max value, regular
/// expressions), custom class names and the diagram layout.
final class XcodeModelParser: NSObject, XMLParserDelegate {
    private let file: String
    private(set) var entities: [EntityDescription] = []
    private(set) var configurations: [String: [String]] = [:]
    private(set) var failure: SchemaError?
    /// The first error the XML parser reported.
    private var xmlError: SchemaError?

    /// Open elements, outermost first.
    private var stack: [String] = []
    /// While set, every element down to this depth is skipped (subtrees the schema does not keep).
    private var skipDepth: Int?
    private var sawModel = false
    private var entity: EntityDescription?
    private var attribute: AttributeDescription?
    private var relationship: RelationshipDescription?
    private var constraint: [String]?
    /// The fetch index being read; `nil` inside one that is dropped.
    private var fetchIndex: FetchIndex?
    private var configuration: (name: String, members: [String])?

    init(file: String) {
        self.file = file
    }

    /// Parses `data`. Refuses documents with a DTD: Xcode never writes one, and refusing it up front rules out
    /// entity-expansion and external-entity attacks whatever the XML parser's defaults are.
    func parse(_ data: Data) throws(SchemaError) -> (entities: [EntityDescription], configurations: [String: [String]]) {
        if Self.contains(data, "<!DOCTYPE") || Self.contains(data, "<!ENTITY") {
            throw .unreadableModel(file: file, reason: "the XML declares a DTD or entities, which an Xcode data model never does; refusing to read it")
        }
        // FoundationXML traps on an element or attribute name that is not valid UTF-8, so such a file must never
        // reach it. Xcode writes models in UTF-8 (which also makes the byte search above sound).
        guard String(validating: data, as: UTF8.self) != nil else {
            throw .unreadableModel(file: file, reason: "the file is not valid UTF-8 text, which Xcode always writes models in")
        }
        let scan = XMLAttributeGuard.allows(data)
        guard scan.allowed else {
            throw .unreadableModel(file: file, reason: "line \(scan.line): an element has more than \(XMLAttributeGuard.limit) attributes, which no model has; refusing to read it (the XML parser would take minutes over it)")
        }
        let parser = XMLParser(data: data)
        parser.shouldResolveExternalEntities = false
        parser.shouldProcessNamespaces = false
        parser.delegate = self
        let ok = parser.parse()
        if let failure { throw failure }
        // FoundationXML on Linux returns true from parse() for malformed documents and reports the error only
        // through the delegate and parserError, so check all three.
        if let xmlError { throw xmlError }
        if !ok || parser.parserError != nil {
            throw .unreadableModel(
                file: file,
                reason: "not well-formed XML at line \(parser.lineNumber), column \(parser.columnNumber): "
                    + Self.describe(parser.parserError))
        }
        guard sawModel else {
            throw .unreadableModel(file: file, reason: "no <model> element: not an Xcode data model")
        }
        return (entities, configurations)
    }

    // MARK: XMLParserDelegate

    func parser(_ parser: XMLParser, parseErrorOccurred parseError: Error) {
        guard failure == nil, xmlError == nil else { return }
        xmlError = .unreadableModel(
            file: file,
            reason: "not well-formed XML at line \(parser.lineNumber), column \(parser.columnNumber): "
                + Self.describe(parseError))
    }

    func parser(
        _ parser: XMLParser, didStartElement name: String, namespaceURI: String?, qualifiedName: String?,
        attributes attrs: [String: String] = [:]
    ) {
        defer { stack.append(name) }
        guard failure == nil, skipDepth == nil else { return }
        let parent = stack.last
        switch (parent, name) {
        case (nil, "model"):
            sawModel = true
        case (nil, _):
            fail(parser, "the root element is <\(name)>, not <model>: not an Xcode data model")
        case ("model", "entity"):
            startEntity(parser, attrs)
        case ("entity", "attribute"):
            startAttribute(parser, attrs)
        case ("entity", "relationship"):
            startRelationship(parser, attrs)
        case ("entity", "uniquenessConstraints"):
            break
        case ("entity", "fetchIndex"):
            guard let indexName = attrs["name"], !indexName.isEmpty else {
                return fail(parser, "entity '\(entity?.name ?? "?")' has a <fetchIndex> without a name")
            }
            fetchIndex = FetchIndex(name: indexName, elements: [])
        case ("fetchIndex", "fetchIndexElement"):
            startFetchIndexElement(parser, attrs)
        case ("uniquenessConstraints", "uniquenessConstraint"):
            constraint = []
        case ("uniquenessConstraint", "constraint"):
            guard let value = attrs["value"], !value.isEmpty else {
                return fail(parser, "a uniqueness constraint of entity '\(entity?.name ?? "?")' has an entry without a value")
            }
            constraint?.append(value)
        case (_, "userInfo") where ["entity", "attribute", "relationship"].contains(parent ?? ""):
            break
        case ("userInfo", "entry") where stack.count >= 2:
            addUserInfo(key: attrs["key"] ?? "", value: attrs["value"] ?? "", owner: stack[stack.count - 2])
        case ("model", "configuration"):
            guard let config = attrs["name"], !config.isEmpty else {
                return fail(parser, "a <configuration> has no name")
            }
            guard configurations[config] == nil else {
                return fail(parser, "configuration '\(config)' is defined twice")
            }
            configuration = (config, [])
        case ("configuration", "memberEntity"):
            guard let member = attrs["name"], !member.isEmpty else {
                return fail(parser, "configuration '\(configuration?.name ?? "?")' has a member without a name")
            }
            configuration?.members.append(member)
        case (_, "composite"), (_, "compositeAttribute"):
            fail(parser, "composite attributes (Xcode 15) are not supported; flatten them into plain attributes")
        default:
            // Fetched properties, fetch requests, legacy compound indexes, diagram layout, and anything a
            // newer Xcode adds: none of it decides what a store holds.
            skipDepth = stack.count
        }
    }

    func parser(_ parser: XMLParser, didEndElement name: String, namespaceURI: String?, qualifiedName: String?) {
        stack.removeLast()
        if let depth = skipDepth {
            if depth == stack.count { skipDepth = nil }
            return
        }
        guard failure == nil else { return }
        switch name {
        case "entity":
            if let entity { entities.append(entity) }
            entity = nil
        case "attribute":
            if let attribute {
                if attribute.derivation != nil { entity?.derivedAttributes.append(attribute) }
                else { entity?.attributes.append(attribute) }
            }
            attribute = nil
        case "relationship":
            if let relationship { entity?.relationships.append(relationship) }
            relationship = nil
        case "uniquenessConstraint":
            if let constraint, !constraint.isEmpty { entity?.uniquenessConstraints.append(constraint) }
            constraint = nil
        case "fetchIndex":
            if let fetchIndex, !fetchIndex.elements.isEmpty { entity?.fetchIndexes.append(fetchIndex) }
            fetchIndex = nil
        case "configuration":
            if let configuration { configurations[configuration.name] = configuration.members }
            configuration = nil
        default:
            break
        }
    }

    // MARK: Elements

    private func startEntity(_ parser: XMLParser, _ attrs: [String: String]) {
        guard let name = attrs["name"], !name.isEmpty else { return fail(parser, "an <entity> has no name") }
        entity = EntityDescription(
            name: name, parent: nonEmpty(attrs["parentEntity"]), isAbstract: XcodeModelValues.flag(attrs["isAbstract"]),
            versionHashModifier: nonEmpty(attrs["versionHashModifier"]),
            representedClassName: nonEmpty(attrs["representedClassName"]),
            renamingIdentifier: nonEmpty(attrs["elementID"]))
    }

    private func startAttribute(_ parser: XMLParser, _ attrs: [String: String]) {
        let entityName = entity?.name ?? "?"
        guard let name = attrs["name"], !name.isEmpty else {
            return fail(parser, "entity '\(entityName)' has an <attribute> without a name")
        }
        let isTransient = XcodeModelValues.flag(attrs["transient"])
        let typeName = attrs["attributeType"] ?? "Undefined"
        let type: AttributeType
        if let known = XcodeModelValues.attributeTypes[typeName] {
            type = known
        } else if typeName == "Undefined" && isTransient {
            // Core Data allows untyped values only on transient attributes, which are never stored: an opaque
            // archived value is the closest kind.
            type = .transformable
        } else if typeName == "Undefined" {
            return fail(parser, "attribute '\(entityName).\(name)' has type Undefined, which Core Data allows only on transient attributes")
        } else if typeName == "Composite" {
            return fail(parser, "attribute '\(entityName).\(name)' is a composite attribute (Xcode 15), which is not supported; flatten it into plain attributes")
        } else {
            return fail(.unknownAttributeType(entity: entityName, attribute: name, type: typeName), parser)
        }
        var defaultValue: StoreValue?
        if typeName != "Undefined" {
            switch XcodeModelValues.defaultValue(
                type: type, valueString: attrs["defaultValueString"], dateTimeInterval: attrs["defaultDateTimeInterval"])
            {
            case .success(let v): defaultValue = v
            case .failure:
                return fail(.defaultValueMismatch(entity: entityName, attribute: name, type: type), parser)
            }
        }
        // A derived attribute is computed by Core Data from other properties and never written by the app; it is
        // kept apart (see didEndElement) for Core Data's version hash and store layout. Xcode writes the expression
        // in the key-path form (`pages.@count`).
        let derivation = XcodeModelValues.flag(attrs["derived"])
            ? AttributeDerivation(expression: attrs["derivationExpression"] ?? "") : nil
        attribute = AttributeDescription(
            name: name, type: type, isOptional: XcodeModelValues.flag(attrs["optional"]), defaultValue: defaultValue,
            isTransient: isTransient, valueTransformerName: nonEmpty(attrs["valueTransformerName"]),
            versionHashModifier: nonEmpty(attrs["versionHashModifier"]),
            allowsExternalBinaryDataStorage: XcodeModelValues.flag(attrs["allowsExternalBinaryDataStorage"]),
            preservesValueInHistoryOnDeletion: XcodeModelValues.flag(attrs["preserveAfterDeletion"]),
            renamingIdentifier: nonEmpty(attrs["elementID"]), derivation: derivation,
            isIndexed: XcodeModelValues.flag(attrs["indexed"]))
    }

    /// `<fetchIndexElement property="…" type="Binary|RTree" order="ascending|descending"/>`. An element over an
    /// expression (no `property`) drops its whole index.
    private func startFetchIndexElement(_ parser: XMLParser, _ attrs: [String: String]) {
        guard fetchIndex != nil else { return }
        guard let property = nonEmpty(attrs["property"]) else {
            fetchIndex = nil
            return
        }
        let typeName = attrs["type"] ?? "Binary"
        let kind: FetchIndex.Kind
        switch typeName.lowercased() {
        case "binary": kind = .binary
        case "rtree": kind = .rTree
        default:
            return fail(parser, "fetch index '\(fetchIndex?.name ?? "?")' of entity '\(entity?.name ?? "?")' has unknown type '\(typeName)'")
        }
        let order = attrs["order"] ?? "ascending"
        guard order == "ascending" || order == "descending" else {
            return fail(parser, "fetch index '\(fetchIndex?.name ?? "?")' of entity '\(entity?.name ?? "?")' has unknown order '\(order)'")
        }
        fetchIndex?.elements.append(FetchIndex.Element(property: property, kind: kind, isAscending: order == "ascending"))
    }

    private func startRelationship(_ parser: XMLParser, _ attrs: [String: String]) {
        let entityName = entity?.name ?? "?"
        guard let name = attrs["name"], !name.isEmpty else {
            return fail(parser, "entity '\(entityName)' has a <relationship> without a name")
        }
        guard let destination = nonEmpty(attrs["destinationEntity"]) else {
            return fail(parser, "relationship '\(entityName).\(name)' has no destination entity")
        }
        let ruleName = attrs["deletionRule"] ?? "Nullify"
        guard let rule = XcodeModelValues.deleteRules[ruleName] else {
            return fail(parser, "relationship '\(entityName).\(name)' has unknown deletion rule '\(ruleName)'")
        }
        var counts: [String: Int] = [:]
        for key in ["minCount", "maxCount"] {
            guard let text = attrs[key] else { continue }
            guard let n = Int(text.trimmingCharacters(in: .whitespaces)) else {
                return fail(parser, "relationship '\(entityName).\(name)' has a non-numeric \(key) '\(text)'")
            }
            counts[key] = n
        }
        // Xcode writes toMany="YES"; models from older Xcode versions say the same with maxCount="-1" (or any
        // maximum above 1) instead.
        let declaredMax = counts["maxCount"]
        let isToMany = XcodeModelValues.flag(attrs["toMany"]) || declaredMax.map { $0 < 0 || $0 > 1 } ?? false
        let isOptional = XcodeModelValues.flag(attrs["optional"])
        let minCount: Int
        let maxCount: Int
        if isToMany {
            minCount = counts["minCount"] ?? 0
            maxCount = max(0, declaredMax ?? 0)  // -1 and absent both mean unbounded
        } else {
            // Xcode writes minCount="1" maxCount="1" on optional to-one relationships too: for a to-one the only
            // meaningful bound is optionality, which isOptional carries.
            minCount = 0
            maxCount = 1
        }
        relationship = RelationshipDescription(
            name: name, destination: destination, inverse: nonEmpty(attrs["inverseName"]), isToMany: isToMany,
            isOrdered: XcodeModelValues.flag(attrs["ordered"]), deleteRule: rule, isOptional: isOptional,
            minCount: minCount, maxCount: maxCount, isTransient: XcodeModelValues.flag(attrs["transient"]),
            versionHashModifier: nonEmpty(attrs["versionHashModifier"]), renamingIdentifier: nonEmpty(attrs["elementID"]),
            declaredMinCount: counts["minCount"], declaredMaxCount: counts["maxCount"])
    }

    private func addUserInfo(key: String, value: String, owner: String) {
        switch owner {
        case "attribute": attribute?.userInfo[key] = value
        case "relationship": relationship?.userInfo[key] = value
        case "entity": entity?.userInfo[key] = value
        default: break
        }
    }

    // MARK: Helpers

    private func nonEmpty(_ s: String?) -> String? {
        guard let s, !s.isEmpty else { return nil }
        return s
    }

    private func fail(_ parser: XMLParser, _ reason: String) {
        fail(.unreadableModel(file: file, reason: "line \(parser.lineNumber): \(reason)"), parser)
    }

    private func fail(_ error: SchemaError, _ parser: XMLParser) {
        if failure == nil {
            if case .unreadableModel = error { failure = error } else { failure = .invalidModel(file: file, error: error) }
        }
        parser.abortParsing()
    }

    /// libxml2's error codes carry no message through FoundationXML on Linux; name the common ones.
    private static func describe(_ error: Error?) -> String {
        guard let error else { return "unknown error" }
        let code = (error as NSError).code
        let known: [Int: String] = [
            4: "the document is empty", 5: "content after the root element, or the document ends too early",
            9: "invalid character", 23: "unterminated attribute value", 26: "undefined entity",
            38: "unterminated attribute value", 39: "malformed attribute", 41: "missing attribute value",
            64: "malformed XML declaration", 73: "expected '>'", 76: "an end tag does not match its start tag",
            77: "the document ends inside an element",
        ]
        return known[code].map { "\($0) (XML error \(code))" } ?? "XML error \(code)"
    }

    private static func contains(_ data: Data, _ needle: String) -> Bool {
        data.range(of: Data(needle.utf8)) != nil
    }
}
