import Foundation

/// How a value of one attribute type becomes a value of another without loss.
enum AttributeConversion {
    /// Same stored form: copied as it is.
    case same
    /// A larger integer type, or float → double.
    case widen
    /// The value's exact text.
    case toString

    /// `nil` when no lossless conversion exists.
    init?(from s: AttributeType, to d: AttributeType) {
        let storage: (AttributeType) -> AttributeType = { $0 == .transformable ? .binary : $0 }
        if storage(s) == storage(d) { self = .same; return }
        switch (s, d) {
        case (.integer16, .integer32), (.integer16, .integer64), (.integer32, .integer64), (.float, .double):
            self = .widen
        case (.integer16, .string), (.integer32, .string), (.integer64, .string), (.decimal, .string),
             (.double, .string), (.float, .string), (.uuid, .string), (.uri, .string):
            self = .toString
        default:
            return nil
        }
    }

    /// Converts one stored value (null stays null) to `type`.
    static func convert(_ value: StoreValue, to type: AttributeType) -> StoreValue {
        switch (value, type) {
        case (.integer16(let v), .integer32): .integer32(Int32(v))
        case (.integer16(let v), .integer64): .integer64(Int64(v))
        case (.integer32(let v), .integer64): .integer64(Int64(v))
        case (.float(let v), .double): .double(Double(v))
        case (.integer16(let v), .string): .string(String(v))
        case (.integer32(let v), .string): .string(String(v))
        case (.integer64(let v), .string): .string(String(v))
        case (.decimal(let v), .string): .string(v.description)
        // Swift prints the shortest text that reads back as the same number.
        case (.double(let v), .string): .string(v.description)
        case (.float(let v), .string): .string(v.description)
        case (.uuid(let v), .string): .string(v.uuidString)
        case (.uri(let v), .string): .string(v.absoluteString)
        default: value
        }
    }
}
