import Foundation

/// One value of a binary property list (`bplist00`), as Apple's formats store it.
///
/// Core Data keeps its store metadata (`Z_METADATA.Z_PLIST`) and, inside an `NSKeyedArchiver` archive, its compiled
/// model (`Z_MODELCACHE`) in this form. Dictionaries keep their members in file order, like ``JSONValue``, so a value
/// read and written again comes out the same.
@_spi(BackendKit) public enum PropertyListValue: Sendable, Equatable {
    /// The null object (marker `0x00`); `NSKeyedArchiver` never writes it, some other writers do.
    case null
    case bool(Bool)
    /// A signed integer (1, 2, 4 or 8 bytes in the file, or 16 bytes holding a value that fits in 64 signed bits).
    case integer(Int64)
    /// An integer above `Int64.max`, which the format stores in 16 bytes.
    case unsignedInteger(UInt64)
    /// A real (4 or 8 bytes in the file; a 4-byte real is widened exactly).
    case real(Double)
    /// A date: seconds since 2001-01-01T00:00:00Z, bit for bit.
    case date(Date)
    case data(Data)
    /// A string (stored as ASCII or as big-endian UTF-16 in the file).
    case string(String)
    /// An `NSKeyedArchiver` object reference (`CF$UID`): an index into the archive's `$objects`.
    case uid(UInt64)
    case array([PropertyListValue])
    case set([PropertyListValue])
    /// Members in file order. Keys are strings (the only kind Apple's formats use; the reader refuses others).
    case dictionary([(key: String, value: PropertyListValue)])

    /// The member named `key` of a dictionary.
    public subscript(key: String) -> PropertyListValue? {
        guard case .dictionary(let members) = self else { return nil }
        return members.first { $0.key == key }?.value
    }

    /// A short description for error messages.
    public var summary: String {
        switch self {
        case .null: return "null"
        case .bool(let b): return b ? "true" : "false"
        case .integer(let i): return "the integer \(i)"
        case .unsignedInteger(let u): return "the integer \(u)"
        case .real(let d): return "the real \(d)"
        case .date: return "a date"
        case .data(let d): return "\(d.count) bytes of data"
        case .string(let s): return "the string \"\(s.count > 60 ? String(s.prefix(57)) + "…" : s)\""
        case .uid(let u): return "the object reference \(u)"
        case .array(let a): return "an array of \(a.count)"
        case .set(let a): return "a set of \(a.count)"
        case .dictionary(let d): return "a dictionary of \(d.count)"
        }
    }

    public static func == (lhs: PropertyListValue, rhs: PropertyListValue) -> Bool {
        switch (lhs, rhs) {
        case (.null, .null): return true
        case (.bool(let a), .bool(let b)): return a == b
        case (.integer(let a), .integer(let b)): return a == b
        case (.unsignedInteger(let a), .unsignedInteger(let b)): return a == b
        // Bit patterns, so a value read back from a file equals the value written, NaN included.
        case (.real(let a), .real(let b)): return a.bitPattern == b.bitPattern
        case (.date(let a), .date(let b)):
            return a.timeIntervalSinceReferenceDate.bitPattern == b.timeIntervalSinceReferenceDate.bitPattern
        case (.data(let a), .data(let b)): return a == b
        case (.string(let a), .string(let b)): return a == b
        case (.uid(let a), .uid(let b)): return a == b
        case (.array(let a), .array(let b)), (.set(let a), .set(let b)): return a == b
        case (.dictionary(let a), .dictionary(let b)):
            return a.count == b.count && zip(a, b).allSatisfy { $0.key == $1.key && $0.value == $1.value }
        default: return false
        }
    }
}

/// Why bytes are not a binary property list the reader accepts, and where: the byte offset of the object or
/// structure at fault, when there is one.
@_spi(BackendKit) public struct PropertyListError: Error, Sendable, CustomStringConvertible {
    /// What is wrong, in a few words.
    public let message: String
    /// The 0-based byte offset of the object or structure at fault, if the error has one.
    public let offset: Int?

    /// Creates an error.
    public init(_ message: String, offset: Int? = nil) {
        self.message = message
        self.offset = offset
    }

    public var description: String {
        offset.map { "binary property list: \(message) (at byte \($0))" } ?? "binary property list: \(message)"
    }
}
