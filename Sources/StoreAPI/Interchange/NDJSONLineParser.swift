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
        let json: JSONValue
        do {
            json = try JSONParser.parse(bytes)
        } catch {
            problems.add(line: line, "malformed JSON at column \(error.offset + 1): \(error.message)")
            return nil
        }
        guard case .object(let members) = json else {
            problems.add(line: line, "expected a JSON object with \"entity\", \"id\", \"attributes\" and \"relationships\"; got \(json.summary)")
            return nil
        }
        var ok = true
        var entityValue, idValue, attributesValue, relationshipsValue: JSONValue?
        for (key, value) in members {
            switch key {
            case "entity": entityValue = value
            case "id": idValue = value
            case "attributes": attributesValue = value
            case "relationships": relationshipsValue = value
            default:
                problems.add(line: line, "unknown key \"\(key)\" (a line has \"entity\", \"id\", \"attributes\" and \"relationships\")")
                ok = false
            }
        }
        guard case .string(let name)? = entityValue else {
            problems.add(line: line, entityValue.map { "\"entity\" must be a string; got \($0.summary)" } ?? "missing \"entity\"")
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

        var globalID: UUID?
        switch idValue {
        case nil, .null?: break
        case .string(let text)?:
            if let id = FastUUID.parse(text) { globalID = id } else {
                problems.add(line: line, "\"id\" is not a UUID: \(JSONValue.string(text).summary)")
                ok = false
            }
        case let other?:
            problems.add(line: line, "\"id\" must be a UUID string; got \(other.summary)")
            ok = false
        }

        var attributes = entity.attributes.map { $0.defaultValue ?? .null }
        var given = [Bool](repeating: false, count: attributes.count)
        switch attributesValue {
        case nil, .null?: break
        case .object(let values)?:
            for (key, raw) in values {
                guard let index = entity.attributeIndex(key) else {
                    problems.add(line: line, unknownProperty(key, of: entity, expecting: "attribute"))
                    ok = false
                    continue
                }
                let attribute = entity.attributes[index]
                guard let value = Self.value(raw, type: attribute.type) else {
                    problems.add(line: line, "attribute '\(key)' of \(entity.name) is \(Self.article(attribute.type)) \(attribute.type.rawValue); got \(raw.summary)")
                    ok = false
                    continue
                }
                attributes[index] = value
                given[index] = true
            }
        case let other?:
            problems.add(line: line, "\"attributes\" must be an object; got \(other.summary)")
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
        switch relationshipsValue {
        case nil, .null?: break
        case .object(let values)?:
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
        case let other?:
            problems.add(line: line, "\"relationships\" must be an object; got \(other.summary)")
            ok = false
        }
        guard ok else { return nil }
        // Only lines without an id get a new one (generating a UUID reads the system's random source).
        return ParsedRecord(line: line, entity: entity, globalID: globalID ?? UUID(), attributes: attributes, relationships: relationships)
    }

    /// The stored value of a JSON value for an attribute of `type`, or `nil` when it is not a valid form.
    ///
    /// The interchange form is ``StoreValue/init(json:type:)``'s. The cases below are the ones where the JSON value
    /// already is the stored value (a string for a string, a literal for a boolean, digits for a number), taken
    /// directly because going through Foundation objects cost most of an import's time; everything else — and
    /// anything these do not accept — goes through `StoreValue(json:type:)`.
    static func value(_ raw: JSONValue, type: AttributeType) -> StoreValue? {
        switch (type, raw) {
        case (_, .null): return .null
        case (.string, .string(let s)): return .string(s)
        case (.boolean, .bool(let b)): return .boolean(b)
        case (.uuid, .string(let s)):
            if let u = FastUUID.parse(s) { return .uuid(u) }
        case (.integer64, .number(let text)):
            if let i = Int64(text) { return .integer64(i) }
        case (.integer32, .number(let text)):
            if let i = Int64(text) { return Int32(exactly: i).map { .integer32($0) } }
        case (.integer16, .number(let text)):
            if let i = Int64(text) { return Int16(exactly: i).map { .integer16($0) } }
        case (.double, .number(let text)):
            if let d = Double(text), d.isFinite { return .double(d) }
        case (.float, .number(let text)):
            if let f = Float(text), f.isFinite { return .float(f) }
        default:
            break
        }
        return raw.foundationObject(for: type).flatMap { StoreValue(json: $0, type: type) }
    }

    private func parseTargets(_ raw: JSONValue, relationship r: RelationshipDescription, entity: Entity, line: Int,
                              problems: inout ProblemList) -> [UUID]? {
        let label = "relationship '\(r.name)' of \(entity.name)"
        if !r.isToMany {
            switch raw {
            case .null: return []
            case .string(let text):
                guard let id = FastUUID.parse(text) else {
                    problems.add(line: line, "\(label) must be a UUID or null; got \(raw.summary)")
                    return nil
                }
                return [id]
            case .array:
                problems.add(line: line, "\(label) is to-one; got an array (give one UUID or null)")
                return nil
            default:
                problems.add(line: line, "\(label) must be a UUID or null; got \(raw.summary)")
                return nil
            }
        }
        if case .null = raw { return [] }
        guard case .array(let items) = raw else {
            problems.add(line: line, "\(label) is to-many; give an array of UUIDs, got \(raw.summary)")
            return nil
        }
        var ids: [UUID] = []
        ids.reserveCapacity(items.count)
        var seen: Set<UUID> = []
        for (position, item) in items.enumerated() {
            guard case .string(let text) = item, let id = FastUUID.parse(text) else {
                problems.add(line: line, "\(label): element \(position + 1) is not a UUID: \(item.summary)")
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
        case .integer16, .integer32, .integer64: "an"
        default: "a"
        }
    }
}
