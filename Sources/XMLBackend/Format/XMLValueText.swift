import Foundation
@_spi(BackendKit) import StoreAPI

/// The text form of attribute values in XML stores (see ``XMLStoreFormat``): exact for every type, and tolerant of
/// the variations Core Data's own files show (surrounding whitespace, base64 broken over lines).
enum XMLValueText {

    /// The text of a non-null value.
    static func text(for value: StoreValue) -> String {
        switch value {
        case .null: ""
        case .integer16(let v): String(v)
        case .integer32(let v): String(v)
        case .integer64(let v): String(v)
        case .decimal(let v): DecimalText.string(for: v)
        case .double(let v): text(for: v)
        case .float(let v): text(for: v)
        case .string(let v): v
        case .boolean(let v): v ? "1" : "0"
        case .date(let v): text(for: v.timeIntervalSinceReferenceDate)
        case .binary(let v): v.base64EncodedString()
        case .uuid(let v): v.uuidString
        case .uri(let v): v.absoluteString
        }
    }

    /// The shortest text that reads back to the same bits; NaNs other than the canonical one keep their payload.
    static func text(for v: Double) -> String {
        guard v.isNaN else { return v.description }
        return v.bitPattern == Double.nan.bitPattern ? "nan" : "nan(0x" + String(v.bitPattern, radix: 16) + ")"
    }

    /// The shortest text that reads back to the same bits; NaNs other than the canonical one keep their payload.
    static func text(for v: Float) -> String {
        guard v.isNaN else { return v.description }
        return v.bitPattern == Float.nan.bitPattern ? "nan" : "nan(0x" + String(v.bitPattern, radix: 16) + ")"
    }

    /// Reads a value of `type` from its text; `nil` when the text is not a valid value of that type.
    static func value(from raw: String, type: AttributeType) -> StoreValue? {
        if type == .string { return .string(raw) }
        if type == .binary || type == .transformable { return base64(raw).map { .binary($0) } }
        let s = trimmed(raw)
        switch type {
        case .integer16: return Int16(s).map { .integer16($0) }
        case .integer32: return Int32(s).map { .integer32($0) }
        case .integer64: return Int64(s).map { .integer64($0) }
        case .decimal:
            return DecimalText.decimal(from: s).map { .decimal($0) }
        case .double: return double(s).map { .double($0) }
        case .float: return float(s).map { .float($0) }
        case .boolean:
            switch s.lowercased() {
            case "1", "true", "yes": return .boolean(true)
            case "0", "false", "no": return .boolean(false)
            default: return nil
            }
        case .date: return date(s).map { .date($0) }
        case .uuid: return UUID(uuidString: s).map { .uuid($0) }
        case .uri: return URL(string: s).map { .uri($0) }
        case .string, .binary, .transformable: return nil
        }
    }

    /// Reads a value of `type` from the UTF-8 bytes of its text; integers and booleans without making a string.
    static func value(from bytes: UnsafeBufferPointer<UInt8>, type: AttributeType) -> StoreValue? {
        switch type {
        case .integer16, .integer32, .integer64:
            if let v = XMLBytes.int64(bytes) {
                switch type {
                case .integer16: return Int16(exactly: v).map { .integer16($0) }
                case .integer32: return Int32(exactly: v).map { .integer32($0) }
                default: return .integer64(v)
                }
            }
        case .boolean:
            if bytes.count == 1 {
                if bytes[0] == UInt8(ascii: "1") { return .boolean(true) }
                if bytes[0] == UInt8(ascii: "0") { return .boolean(false) }
            }
        case .binary, .transformable:
            if let d = XMLBytes.base64(bytes) { return .binary(d) }
        case .uuid:
            if let u = FastUUID.parse(bytes) { return .uuid(u) }
        case .double:
            if let d = XMLBytes.exactDouble(bytes) ?? plainNumber(bytes).flatMap(Double.init) { return .double(d) }
        case .float:
            if let f = XMLBytes.exactFloat(bytes) ?? plainNumber(bytes).flatMap(Float.init) { return .float(f) }
        case .date:
            if let t = XMLBytes.exactDouble(bytes) ?? plainNumber(bytes).flatMap(Double.init) {
                return .date(Date(timeIntervalSinceReferenceDate: t))
            }
        default:
            break
        }
        return value(from: String(decoding: bytes, as: UTF8.self), type: type)
    }

    /// The text of `bytes` when they are a plain decimal number — digits, signs, a point, an exponent; no spaces,
    /// no hex, no `nan(0x…)` — which `Double(String)` reads exactly as ``double(_:)`` would, so the checks for the
    /// rest can be skipped. (Letters other than `e`/`E` mean infinity, NaN or hex: those take the general path.)
    private static func plainNumber(_ bytes: UnsafeBufferPointer<UInt8>) -> String? {
        guard !bytes.isEmpty, bytes.count <= 40 else { return nil }
        for b in bytes {
            switch b {
            case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "."), UInt8(ascii: "-"), UInt8(ascii: "+"),
                 UInt8(ascii: "e"), UInt8(ascii: "E"):
                continue
            default:
                return nil
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    static func double(_ s: String) -> Double? {
        if let bits = nanPayload(s) {
            let d = Double(bitPattern: bits)
            return d.isNaN ? d : nil
        }
        guard !s.isEmpty, !s.hasPrefix("0x"), !s.hasPrefix("-0x"), !s.hasPrefix("+0x") else { return nil }
        return Double(s)
    }

    static func float(_ s: String) -> Float? {
        if let bits = nanPayload(s) {
            guard let b = UInt32(exactly: bits) else { return nil }
            let f = Float(bitPattern: b)
            return f.isNaN ? f : nil
        }
        guard !s.isEmpty, !s.hasPrefix("0x"), !s.hasPrefix("-0x"), !s.hasPrefix("+0x") else { return nil }
        return Float(s)
    }

    /// The bit pattern in `nan(0x…)`.
    private static func nanPayload(_ s: String) -> UInt64? {
        guard s.hasPrefix("nan(0x"), s.hasSuffix(")") else { return nil }
        return UInt64(s.dropFirst(6).dropLast(), radix: 16)
    }

    /// Seconds since 2001 (ours, exact); Core Data's own files are also accepted as ISO 8601 or
    /// `yyyy-MM-dd HH:mm:ss ±hhmm`, in case they were written that way.
    static func date(_ s: String) -> Date? {
        if let t = double(s) { return Date(timeIntervalSinceReferenceDate: t) }
        if let d = ExactISO8601.date(from: s) { return d }
        // `2010-05-13 12:00:00 +0000` → `2010-05-13T12:00:00+00:00`
        let parts = s.split(separator: " ")
        if parts.count == 3, parts[2].count == 5, let sign = parts[2].first, sign == "+" || sign == "-" {
            let zone = parts[2]
            return ExactISO8601.date(from: "\(parts[0])T\(parts[1])\(zone.prefix(3)):\(zone.suffix(2))")
        }
        return nil
    }

    /// Strict base64 that ignores the whitespace Core Data breaks long values with.
    static func base64(_ s: String) -> Data? {
        if let d = Data(base64Encoded: s) { return d }
        let compact = s.unicodeScalars.filter { !($0 == " " || $0 == "\n" || $0 == "\r" || $0 == "\t") }
        return Data(base64Encoded: String(String.UnicodeScalarView(compact)))
    }

    private static func trimmed(_ s: String) -> String {
        guard let f = s.utf8.first, let l = s.utf8.last, isSpace(f) || isSpace(l) else { return s }
        return s.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    @inline(__always)
    private static func isSpace(_ b: UInt8) -> Bool { b == 0x20 || b == 0x0A || b == 0x0D || b == 0x09 }
}
