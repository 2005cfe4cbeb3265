import Foundation

/// One line of an interchange file, checked against the schema: entity, identity, attribute values and the global
/// IDs its relationships name.
struct ParsedRecord {
    let line: Int
    let entity: Entity
    let globalID: UUID
    var attributes: [StoreValue]
    /// Per relationship (aligned with ``Entity/relationships``): the targets the line names, in order, or `nil`
    /// when the line leaves the relationship out (then the other side, if any line gives it, decides). An explicit
    /// `null` for a to-one is an empty list.
    var relationships: [[UUID]?]
}

/// Turns NDJSON lines into ``ParsedRecord``s, reporting every problem with its line number.
struct NDJSONLineParser {
    let schema: Schema
    /// The entities the target store holds (its configuration).
    let allowed: Set<String>
    let configuration: String?

    private static let topLevelKeys: Set<String> = ["entity", "id", "attributes", "relationships"]

    /// Parses one line; returns `nil` and records problems when it is invalid.
    func parse(_ bytes: ArraySlice<UInt8>, line: Int, problems: inout ProblemList) -> ParsedRecord? {
        let json: Any
        do {
            json = try JSONSerialization.jsonObject(with: Data(bytes), options: [])
        } catch {
            problems.add(line: line, "malformed JSON: \(Self.reason(error))")
            return nil
        }
        guard let object = json as? [String: Any] else {
            problems.add(line: line, "expected a JSON object with \"entity\", \"id\", \"attributes\" and \"relationships\"; got \(Self.describe(json))")
            return nil
        }
        var ok = true
        for key in object.keys where !Self.topLevelKeys.contains(key) {
            problems.add(line: line, "unknown key \"\(key)\" (a line has \"entity\", \"id\", \"attributes\" and \"relationships\")")
            ok = false
        }
        guard let name = object["entity"] as? String else {
            problems.add(line: line, object["entity"] == nil ? "missing \"entity\"" : "\"entity\" must be a string; got \(Self.describe(object["entity"]))")
            return nil
        }
        guard let entity = schema.entity(named: name) else {
            problems.add(line: line, "unknown entity '\(name)'")
            return nil
        }
        if entity.isAbstract {
            let concrete = entity.hierarchyNames.filter { schema.entity(named: $0)?.isAbstract == false }
            problems.add(line: line, "entity '\(name)' is abstract and cannot have records of its own"
                + (concrete.isEmpty ? "" : "; use one of \(concrete.joined(separator: ", "))"))
            return nil
        }
        guard allowed.contains(name) else {
            problems.add(line: line, "entity '\(name)' is not part of this store (configuration '\(configuration ?? "")')")
            return nil
        }

        var globalID = UUID()
        switch object["id"] {
        case nil, is NSNull: break
        case let text as String:
            if let id = UUID(uuidString: text) { globalID = id } else {
                problems.add(line: line, "\"id\" is not a UUID: \(Self.describe(text))")
                ok = false
            }
        case let other:
            problems.add(line: line, "\"id\" must be a UUID string; got \(Self.describe(other))")
            ok = false
        }

        var attributes = entity.attributes.map { $0.defaultValue ?? .null }
        var given = [Bool](repeating: false, count: attributes.count)
        switch object["attributes"] {
        case nil, is NSNull: break
        case let values as [String: Any]:
            for (key, raw) in values {
                guard let index = entity.attributeIndex(key) else {
                    problems.add(line: line, unknownProperty(key, of: entity, expecting: "attribute"))
                    ok = false
                    continue
                }
                let attribute = entity.attributes[index]
                guard let value = StoreValue(json: raw, type: attribute.type) else {
                    problems.add(line: line, "attribute '\(key)' of \(entity.name) is \(Self.article(attribute.type)) \(attribute.type.rawValue); got \(Self.describe(raw))")
                    ok = false
                    continue
                }
                attributes[index] = value
                given[index] = true
            }
        case let other:
            problems.add(line: line, "\"attributes\" must be an object; got \(Self.describe(other))")
            ok = false
        }
        for (i, attribute) in entity.attributes.enumerated() where !attribute.isOptional && attributes[i].isNull {
            if given[i] {
                problems.add(line: line, "attribute '\(attribute.name)' of \(entity.name) is required; got null")
            } else {
                problems.add(line: line, "attribute '\(attribute.name)' of \(entity.name) is required and has no default value")
            }
            ok = false
        }

        var relationships = [[UUID]?](repeating: nil, count: entity.relationships.count)
        switch object["relationships"] {
        case nil, is NSNull: break
        case let values as [String: Any]:
            for (key, raw) in values {
                guard let index = entity.relationshipIndex(key) else {
                    problems.add(line: line, unknownProperty(key, of: entity, expecting: "relationship"))
                    ok = false
                    continue
                }
                if let targets = parseTargets(raw, relationship: entity.relationships[index], entity: entity, line: line, problems: &problems) {
                    relationships[index] = targets
                } else {
                    ok = false
                }
            }
        case let other:
            problems.add(line: line, "\"relationships\" must be an object; got \(Self.describe(other))")
            ok = false
        }
        guard ok else { return nil }
        return ParsedRecord(line: line, entity: entity, globalID: globalID, attributes: attributes, relationships: relationships)
    }

    private func parseTargets(_ raw: Any, relationship r: RelationshipDescription, entity: Entity, line: Int,
                              problems: inout ProblemList) -> [UUID]? {
        let label = "relationship '\(r.name)' of \(entity.name)"
        if !r.isToMany {
            switch raw {
            case is NSNull: return []
            case let text as String:
                guard let id = UUID(uuidString: text) else {
                    problems.add(line: line, "\(label) must be a UUID or null; got \(Self.describe(text))")
                    return nil
                }
                return [id]
            case is [Any]:
                problems.add(line: line, "\(label) is to-one; got an array (give one UUID or null)")
                return nil
            default:
                problems.add(line: line, "\(label) must be a UUID or null; got \(Self.describe(raw))")
                return nil
            }
        }
        if raw is NSNull { return [] }
        guard let items = raw as? [Any] else {
            problems.add(line: line, "\(label) is to-many; give an array of UUIDs, got \(Self.describe(raw))")
            return nil
        }
        var ids: [UUID] = []
        ids.reserveCapacity(items.count)
        var seen: Set<UUID> = []
        for (position, item) in items.enumerated() {
            guard let text = item as? String, let id = UUID(uuidString: text) else {
                problems.add(line: line, "\(label): element \(position + 1) is not a UUID: \(Self.describe(item))")
                return nil
            }
            guard seen.insert(id).inserted else {
                problems.add(line: line, "\(label) lists \(id.uuidString) twice")
                return nil
            }
            ids.append(id)
        }
        return ids
    }

    private func unknownProperty(_ key: String, of entity: Entity, expecting kind: String) -> String {
        let def = entity.definition
        let transient = def.attributes.contains { $0.name == key && $0.isTransient }
            || def.relationships.contains { $0.name == key && $0.isTransient }
        if transient { return "'\(key)' of \(entity.name) is transient and not stored" }
        if kind == "attribute", entity.relationshipIndex(key) != nil {
            return "'\(key)' is a relationship of \(entity.name); put it under \"relationships\""
        }
        if kind == "relationship", entity.attributeIndex(key) != nil {
            return "'\(key)' is an attribute of \(entity.name); put it under \"attributes\""
        }
        return "entity '\(entity.name)' has no \(kind) '\(key)'"
    }

    static func article(_ type: AttributeType) -> String {
        switch type {
        case .integer16, .integer32, .integer64, .uuid, .uri: "an"
        default: "a"
        }
    }

    /// A short description of a JSON value for error messages.
    static func describe(_ value: Any?) -> String {
        switch value {
        case nil: return "nothing"
        case is NSNull: return "null"
        case let s as String:
            let shown = s.count > 60 ? String(s.prefix(57)) + "…" : s
            return "the string \"\(shown)\""
        case let n as NSNumber:
            if StoreValue.isBool(n) { return n.boolValue ? "true" : "false" }
            return "the number \(n)"
        case is [Any]: return "an array"
        case is [String: Any]: return "an object"
        default: return "\(value.map { "\(type(of: $0))" } ?? "a value")"
        }
    }

    static func reason(_ error: Error) -> String {
        let ns = error as NSError
        if let debug = ns.userInfo[NSDebugDescriptionErrorKey] as? String, !debug.isEmpty { return debug }
        return error.localizedDescription
    }
}
