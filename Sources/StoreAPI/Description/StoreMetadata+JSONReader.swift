import Foundation

/// Reading stored metadata (the JSON ``StoreMetadata/encoded()`` writes) without `JSONDecoder`; see
/// ``JSONObjectReader`` for why and for the rules, which are the synthesized Codable conformance's.
extension StoreMetadata {
    init(json value: JSONValue) throws {
        let object = try JSONObjectReader(value, path: "")
        let uuidText = try object.string("storeUUID")
        guard let uuid = UUID(uuidString: uuidText) else {
            throw JSONShapeError.invalid(at: object.path("storeUUID"), "'\(uuidText)' is not a UUID")
        }
        self.init(storeType: try object.string("storeType"), storeUUID: uuid,
                  schema: try Schema(json: try object.required("schema"), path: object.path("schema")),
                  configuration: try object.optionalString("configuration"),
                  syncOptions: try object.optionalObject("syncOptions").map { (o) throws(JSONShapeError) in try SyncOptions(json: o) })
        versionHashes = try object.stringDictionary("versionHashes", required: true)
        for member in try object.members("custom", required: true) { custom[member.key] = MetadataValue(json: member.value) }
        formatVersion = try object.int("formatVersion")
        if object.value("primaryKeyCounters") != nil {
            var counters: [String: Int64] = [:]
            for member in try object.members("primaryKeyCounters") {
                guard let n = try JSONObjectReader.int64(member.value, path: member.path) else {
                    throw JSONShapeError.wrongType(at: member.path, expected: "an integer", found: member.value)
                }
                counters[member.key] = n
            }
            primaryKeyCounters = counters
        }
    }
}

extension SyncOptions {
    init(json object: JSONObjectReader) throws(JSONShapeError) {
        let remote = try object.string("remote")
        guard let url = URL(string: remote) else { throw .invalid(at: object.path("remote"), "'\(remote)' is not a URL") }
        let scopeName = try object.string("scope")
        guard let scope = Scope(rawValue: scopeName) else {
            throw .invalid(at: object.path("scope"), "'\(scopeName)' is not a scope (private, public, shared)")
        }
        self.init(remote: url, containerIdentifier: try object.string("containerIdentifier"), scope: scope)
    }
}

extension MetadataValue {
    /// The value of a JSON value, as ``MetadataValue/init(from:)`` reads it: whole numbers in `Int64`'s range are
    /// integers, other numbers doubles.
    init(json value: JSONValue) {
        switch value {
        case .null: self = .null
        case .bool(let b): self = .bool(b)
        case .string(let s): self = .string(s)
        case .number(let text):
            if let i = JSONObjectReader.exactInteger(text) { self = .integer(i) }
            else { self = .double(Double(text) ?? .nan) }
        case .array(let elements): self = .array(elements.map(MetadataValue.init(json:)))
        case .object(let members):
            var d: [String: MetadataValue] = [:]
            for m in members { d[m.key] = MetadataValue(json: m.value) }
            self = .dictionary(d)
        }
    }

    /// Parses `text` as one JSON value; `nil` when it is not JSON.
    public init?(jsonText text: String) {
        guard let value = try? JSONParser.parse(ArraySlice(text.utf8)) else { return nil }
        self.init(json: value)
    }
}
