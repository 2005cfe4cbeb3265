import Foundation

/// The JSON form of attribute values, shared by the schema's JSON form (defaults) and the NDJSON interchange format.
///
/// | type | JSON |
/// |---|---|
/// | integer16/32/64 | number |
/// | decimal | string (`"12.50"`), exact |
/// | double, float | number; `"NaN"`, `"Infinity"`, `"-Infinity"` and `"-0.0"` as strings |
/// | string, uuid, uri | string |
/// | boolean | `true` / `false` |
/// | date | ISO 8601 string, exact to the stored bit (see ``ExactISO8601``) |
/// | binary, transformable | base64 string |
/// | nil | `null` |
extension StoreValue {
    /// The JSON-serializable form (a `String`, `NSNumber`, `Bool` or `NSNull`), as in the table above.
    public var jsonObject: Any {
        switch self {
        case .null: return NSNull()
        case .integer16(let v): return NSNumber(value: v)
        case .integer32(let v): return NSNumber(value: v)
        case .integer64(let v): return NSNumber(value: v)
        case .decimal(let v): return v.description
        case .double(let v): return Self.jsonNumber(v)
        case .float(let v): return v.isFinite && !(v == 0 && v.sign == .minus) ? NSNumber(value: v) : Self.specialName(Double(v))
        case .string(let v): return v
        case .boolean(let v): return v
        case .date(let v): return ExactISO8601.string(from: v)
        case .binary(let v): return v.base64EncodedString()
        case .uuid(let v): return v.uuidString
        case .uri(let v): return v.absoluteString
        }
    }

    private static func jsonNumber(_ v: Double) -> Any {
        v.isFinite && !(v == 0 && v.sign == .minus) ? NSNumber(value: v) : specialName(v)
    }

    private static func specialName(_ v: Double) -> String {
        if v.isNaN { return "NaN" }
        if v.isInfinite { return v > 0 ? "Infinity" : "-Infinity" }
        return "-0.0"
    }

    /// Reads a value of `type` from its JSON form. Returns `nil` when `json` is not a valid form for the type.
    public init?(json: Any?, type: AttributeType) {
        guard let json, !(json is NSNull) else { self = .null; return }
        switch type {
        case .integer16, .integer32, .integer64:
            // Exact or nothing: NSNumber would truncate fractions and wrap values beyond Int64 silently.
            guard let n = json as? NSNumber, let i = Self.exactInt64(n) else { return nil }
            switch type {
            case .integer16: guard let v = Int16(exactly: i) else { return nil }; self = .integer16(v)
            case .integer32: guard let v = Int32(exactly: i) else { return nil }; self = .integer32(v)
            default: self = .integer64(i)
            }
        case .decimal:
            // Decimal(string:) alone reads a numeric prefix ("12abc" → 12); only a whole decimal literal is a value.
            if let s = json as? String, let d = Self.decimal(literal: s), !d.isNaN {
                self = .decimal(d)
            } else if let n = json as? NSNumber, !Self.isBool(n) {
                self = .decimal(n.decimalValue)
            } else { return nil }
        case .double, .float:
            let d: Double
            if let n = json as? NSNumber, !Self.isBool(n) {
                // JSONSerialization hands out NSDecimalNumber for numbers with many digits, and its `doubleValue` is
                // not correctly rounded (54516429953.940254 comes back as …94026); its text is exact.
                if let exact = n as? NSDecimalNumber {
                    let text = exact.description
                    guard let v = type == .double ? Double(text) : Float(text).map(Double.init) else { return nil }
                    d = v
                } else { d = n.doubleValue }
            } else if let s = json as? String {
                switch s {
                case "NaN": d = .nan
                case "Infinity": d = .infinity
                case "-Infinity": d = -.infinity
                case "-0.0": d = -0.0
                default: return nil
                }
            } else { return nil }
            self = type == .double ? .double(d) : .float(Float(d))
        case .string:
            guard let s = json as? String else { return nil }
            self = .string(s)
        case .boolean:
            guard let n = json as? NSNumber, Self.isBool(n) else { return nil }
            self = .boolean(n.boolValue)
        case .date:
            guard let s = json as? String, let d = ExactISO8601.date(from: s) else { return nil }
            self = .date(d)
        case .binary, .transformable:
            guard let s = json as? String, let d = Data(base64Encoded: s) else { return nil }
            self = .binary(d)
        case .uuid:
            guard let s = json as? String, let u = UUID(uuidString: s) else { return nil }
            self = .uuid(u)
        case .uri:
            guard let s = json as? String, let u = URL(string: s) else { return nil }
            self = .uri(u)
        }
    }

    /// JSON `true`/`false` arrive as the boolean subclass of NSNumber (`__NSCFBoolean` on every platform).
    static func isBool(_ n: NSNumber) -> Bool {
        String(describing: Swift.type(of: n)).contains("Boolean")
    }

    /// The integer an NSNumber holds exactly, or `nil` for booleans, fractions and values outside Int64.
    ///
    /// JSONSerialization hands out unsigned numbers (objCType `Q`) above Int64.max and NSDecimalNumbers for some
    /// large values; `int64Value` wraps or clamps those.
    static func exactInt64(_ n: NSNumber) -> Int64? {
        if isBool(n) { return nil }
        if let d = n as? NSDecimalNumber {
            return Int64(d.decimalValue.description)
        }
        switch String(cString: n.objCType) {
        case "d", "f": return Int64(exactly: n.doubleValue)
        case "Q", "L", "I", "S", "C": return Int64(exactly: n.uint64Value)
        default: return n.int64Value
        }
    }

    /// A decimal number, refusing text with trailing garbage (`Decimal(string:)` alone accepts `"12abc"` as 12).
    static func decimal(literal text: String) -> Decimal? {
        guard isDecimalLiteral(text) else { return nil }
        return Decimal(string: text, locale: Locale(identifier: "en_US_POSIX"))
    }

    /// `[+-]digits[.digits][e[+-]digits]`, with digits on at least one side of the point.
    static func isDecimalLiteral(_ text: String) -> Bool {
        var bytes = Substring(text).utf8[...]
        func digits() -> Int {
            let n = bytes.prefix { $0 >= 0x30 && $0 <= 0x39 }.count
            bytes = bytes.dropFirst(n)
            return n
        }
        if bytes.first == UInt8(ascii: "+") || bytes.first == UInt8(ascii: "-") { bytes = bytes.dropFirst() }
        var mantissa = digits()
        if bytes.first == UInt8(ascii: ".") {
            bytes = bytes.dropFirst()
            mantissa += digits()
        }
        guard mantissa > 0 else { return false }
        if bytes.first == UInt8(ascii: "e") || bytes.first == UInt8(ascii: "E") {
            bytes = bytes.dropFirst()
            if bytes.first == UInt8(ascii: "+") || bytes.first == UInt8(ascii: "-") { bytes = bytes.dropFirst() }
            guard digits() > 0 else { return false }
        }
        return bytes.isEmpty
    }

    static func isFloat(_ n: NSNumber) -> Bool {
        let t = String(cString: n.objCType)
        return t == "d" || t == "f"
    }
}
