import Foundation

/// A parsed JSON value that keeps numbers as their text.
///
/// The interchange reader needs this because Foundation's `JSONSerialization` rounds some doubles on the way in (it
/// reads `0.30000000000000004` through a decimal type and returns its nearest double, `0.3000000000000001`), which
/// would break the format's bit-exact round trip. Keeping the digits lets each number be converted once, straight to
/// the type of the attribute it is for.
@_spi(BackendKit) public enum JSONValue {
    case null
    case bool(Bool)
    case number(String)
    case string(String)
    case array([JSONValue])
    /// Members in document order (keys are unique; the parser rejects duplicates).
    case object([(key: String, value: JSONValue)])

    /// The member named `key` of an object.
    subscript(key: String) -> JSONValue? {
        guard case .object(let members) = self else { return nil }
        return members.first { $0.key == key }?.value
    }

    /// A short description for error messages.
    var summary: String {
        switch self {
        case .null: return "null"
        case .bool(let b): return b ? "true" : "false"
        case .number(let text): return "the number \(text)"
        case .string(let s): return "the string \"\(s.count > 60 ? String(s.prefix(57)) + "…" : s)\""
        case .array: return "an array"
        case .object: return "an object"
        }
    }
}
