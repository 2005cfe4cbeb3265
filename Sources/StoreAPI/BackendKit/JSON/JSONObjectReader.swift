import Foundation

/// Why a JSON document does not have the shape a reader expects, with the path of the value at fault
/// (`.entities[2].attributes[0].optional`).
struct JSONShapeError: Error, CustomStringConvertible {
    let description: String

    static func missingKey(_ key: String, in path: String) -> JSONShapeError {
        JSONShapeError(description: "missing key '\(key)' at \(path.isEmpty ? "top level" : path)")
    }

    static func wrongType(at path: String, expected: String, found: JSONValue) -> JSONShapeError {
        JSONShapeError(description: "wrong type at \(path.isEmpty ? "top level" : path): expected \(expected), found \(found.summary)")
    }

    static func invalid(at path: String, _ reason: String) -> JSONShapeError {
        JSONShapeError(description: "invalid value at \(path.isEmpty ? "top level" : path): \(reason)")
    }
}

/// Typed reads of one parsed JSON object (see ``JSONParser``) for the readers of the framework's own JSON forms —
/// the schema and the store metadata every open decodes.
///
/// Those forms were read with `JSONDecoder`, whose first use in a process instantiates Codable's generic machinery,
/// which cost more than the rest of opening a store (storebench's open section shows the open). The rules are
/// `JSONDecoder`'s: an absent key and `null` are the same for optional values, whole numbers written with a
/// fraction or exponent (`2.0`, `1e3`) are integers, unknown keys are ignored.
struct JSONObjectReader {
    /// The object's path in the document, for error messages.
    let path: String
    private let members: [(key: String, value: JSONValue)]

    /// Reads `value` as an object; anything else is a ``JSONShapeError``.
    init(_ value: JSONValue, path: String) throws(JSONShapeError) {
        guard case .object(let members) = value else { throw .wrongType(at: path, expected: "an object", found: value) }
        self.members = members
        self.path = path
    }

    /// The value of `key`, `nil` when it is absent or `null`.
    func value(_ key: String) -> JSONValue? {
        guard let member = members.first(where: { $0.key == key }) else { return nil }
        if case .null = member.value { return nil }
        return member.value
    }

    /// The path of the member `key`.
    func path(_ key: String) -> String { "\(path).\(key)" }

    /// The value of `key`; absent or `null` is a ``JSONShapeError``.
    func required(_ key: String) throws(JSONShapeError) -> JSONValue {
        guard let v = value(key) else { throw .missingKey(key, in: path) }
        return v
    }

    // MARK: Strings

    func string(_ key: String) throws(JSONShapeError) -> String {
        try Self.string(try required(key), path: path(key))
    }

    func optionalString(_ key: String) throws(JSONShapeError) -> String? {
        guard let v = value(key) else { return nil }
        return try Self.string(v, path: path(key))
    }

    static func string(_ value: JSONValue, path: String) throws(JSONShapeError) -> String {
        guard case .string(let s) = value else { throw .wrongType(at: path, expected: "a string", found: value) }
        return s
    }

    // MARK: Booleans and numbers

    func bool(_ key: String, default fallback: Bool) throws(JSONShapeError) -> Bool {
        guard let v = value(key) else { return fallback }
        guard case .bool(let b) = v else { throw .wrongType(at: path(key), expected: "a boolean", found: v) }
        return b
    }

    func int(_ key: String) throws(JSONShapeError) -> Int {
        try Self.int(try required(key), path: path(key))
    }

    func optionalInt(_ key: String) throws(JSONShapeError) -> Int? {
        guard let v = value(key) else { return nil }
        return try Self.int(v, path: path(key))
    }

    static func int(_ value: JSONValue, path: String) throws(JSONShapeError) -> Int {
        guard let i = try int64(value, path: path), let n = Int(exactly: i) else {
            throw .wrongType(at: path, expected: "an integer", found: value)
        }
        return n
    }

    /// An integer, `nil` for a number that is not a whole number in `Int64`'s range.
    static func int64(_ value: JSONValue, path: String) throws(JSONShapeError) -> Int64? {
        guard case .number(let text) = value else { throw .wrongType(at: path, expected: "a number", found: value) }
        return exactInteger(text)
    }

    /// `text` (JSON number syntax) as an `Int64` when it is a whole number in range, as `JSONDecoder` reads it.
    static func exactInteger(_ text: String) -> Int64? {
        if let i = Int64(text) { return i }
        guard let d = Double(text), d.isFinite else { return nil }
        return Int64(exactly: d)
    }

    // MARK: Containers

    func object(_ key: String) throws(JSONShapeError) -> JSONObjectReader {
        try JSONObjectReader(try required(key), path: path(key))
    }

    func optionalObject(_ key: String) throws(JSONShapeError) -> JSONObjectReader? {
        guard let v = value(key) else { return nil }
        return try JSONObjectReader(v, path: path(key))
    }

    /// The elements of the array `key` with their paths; `[]` when the key is absent or `null`.
    func array(_ key: String, required isRequired: Bool = false) throws(JSONShapeError) -> [(value: JSONValue, path: String)] {
        guard let v = value(key) else {
            if isRequired { throw .missingKey(key, in: path) }
            return []
        }
        return try Self.array(v, path: path(key))
    }

    static func array(_ value: JSONValue, path: String) throws(JSONShapeError) -> [(value: JSONValue, path: String)] {
        guard case .array(let elements) = value else { throw .wrongType(at: path, expected: "an array", found: value) }
        return elements.enumerated().map { (value: $0.element, path: "\(path)[\($0.offset)]") }
    }

    /// The members of the object `key` in document order; `[]` when the key is absent or `null`, unless it is
    /// `required`.
    func members(_ key: String, required isRequired: Bool = false) throws(JSONShapeError) -> [(key: String, value: JSONValue, path: String)] {
        guard let v = value(key) else {
            if isRequired { throw .missingKey(key, in: path) }
            return []
        }
        return try JSONObjectReader(v, path: path(key)).all
    }

    /// Every member, in document order.
    var all: [(key: String, value: JSONValue, path: String)] {
        members.map { (key: $0.key, value: $0.value, path: "\(path).\($0.key)") }
    }

    /// `value` as an array of strings.
    static func strings(_ value: JSONValue, path: String) throws(JSONShapeError) -> [String] {
        var strings: [String] = []
        for element in try array(value, path: path) { strings.append(try string(element.value, path: element.path)) }
        return strings
    }

    func stringDictionary(_ key: String, required isRequired: Bool = false) throws(JSONShapeError) -> [String: String] {
        var result: [String: String] = [:]
        for m in try members(key, required: isRequired) { result[m.key] = try Self.string(m.value, path: m.path) }
        return result
    }
}
