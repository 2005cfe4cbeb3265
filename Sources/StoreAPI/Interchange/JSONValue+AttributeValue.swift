import Foundation

extension JSONValue {
    /// The value as `StoreValue(json:type:)` expects it (a `String`, `NSNumber`, boolean `NSNumber` or `NSNull`),
    /// with numbers converted exactly for `type`. Arrays and objects come back empty (no attribute accepts them; the
    /// caller only needs to tell they are not values). `nil` when a number cannot be represented at all.
    func foundationObject(for type: AttributeType) -> Any? {
        switch self {
        case .null: return NSNull()
        case .bool(let b): return NSNumber(value: b)
        case .string(let s): return s
        case .array: return [Any]()
        case .object: return [String: Any]()
        case .number(let text): return Self.number(text, for: type)
        }
    }

    private static func number(_ text: String, for type: AttributeType) -> NSNumber? {
        switch type {
        case .integer16, .integer32, .integer64:
            if let i = Int64(text) { return NSNumber(value: i) }
            // `1.0` and `1e3` are whole numbers too; the value check decides whether they fit.
            guard let d = Double(text), d.isFinite else { return nil }
            return NSNumber(value: d)
        case .float:
            guard let f = Float(text), f.isFinite else { return nil }
            return NSNumber(value: f)
        case .decimal:
            guard let d = Decimal(string: text, locale: Locale(identifier: "en_US_POSIX")) else { return nil }
            return NSDecimalNumber(decimal: d)
        default:
            guard let d = Double(text), d.isFinite else { return nil }
            return NSNumber(value: d)
        }
    }
}
