import Foundation

/// Builds JSON text into a byte buffer, for writers that emit millions of small documents (NDJSON lines) where
/// `JSONSerialization` per value would dominate the run time.
///
/// Values are written in their interchange form, ``StoreValue/jsonObject``; this type only decides how that form
/// is spelled as JSON text (numbers in Swift's shortest round-tripping notation, so doubles and floats read back bit
/// for bit).
struct JSONTextBuffer {
    private(set) var bytes: [UInt8] = []

    init(capacity: Int = 1 << 20) {
        bytes.reserveCapacity(capacity)
    }

    var count: Int { bytes.count }

    mutating func removeAll() { bytes.removeAll(keepingCapacity: true) }

    /// Appends literal JSON syntax (`{`, `":`, `null`, …).
    mutating func raw(_ text: StaticString) {
        text.withUTF8Buffer { bytes.append(contentsOf: $0) }
    }

    mutating func raw(_ byte: UInt8) { bytes.append(byte) }

    /// Appends already valid JSON text (a number's digits).
    mutating func rawString(_ text: String) {
        var text = text
        text.withUTF8 { bytes.append(contentsOf: $0) }
    }

    /// Appends `text` as a quoted, escaped JSON string.
    mutating func string(_ text: String) {
        var text = text
        text.withUTF8 { utf8 in
            bytes.append(0x22)
            var start = 0
            for i in 0..<utf8.count {
                let b = utf8[i]
                guard b < 0x20 || b == 0x22 || b == 0x5C else { continue }
                if start < i { bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[start..<i])) }
                start = i + 1
                switch b {
                case 0x22: raw("\\\"")
                case 0x5C: raw("\\\\")
                case 0x0A: raw("\\n")
                case 0x0D: raw("\\r")
                case 0x09: raw("\\t")
                case 0x08: raw("\\b")
                case 0x0C: raw("\\f")
                default:
                    raw("\\u00")
                    bytes.append(Self.hex[Int(b >> 4)])
                    bytes.append(Self.hex[Int(b & 0xF)])
                }
            }
            if start < utf8.count { bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[start...])) }
            bytes.append(0x22)
        }
    }

    private static let hex: [UInt8] = Array("0123456789abcdef".utf8)

    /// Appends a UUID in its canonical upper-case string form, quoted.
    mutating func uuid(_ id: UUID) {
        bytes.append(0x22)
        let u = id.uuid
        withUnsafeBytes(of: u) { raw in
            for (i, b) in raw.enumerated() {
                if i == 4 || i == 6 || i == 8 || i == 10 { bytes.append(0x2D) }
                bytes.append(Self.upperHex[Int(b >> 4)])
                bytes.append(Self.upperHex[Int(b & 0xF)])
            }
        }
        bytes.append(0x22)
    }

    private static let upperHex: [UInt8] = Array("0123456789ABCDEF".utf8)

    /// Appends an attribute value in its interchange form.
    mutating func value(_ value: StoreValue) {
        switch value {
        case .null: raw("null")
        case .boolean(let b): b ? raw("true") : raw("false")
        case .integer16(let v): rawString(String(v))
        case .integer32(let v): rawString(String(v))
        case .integer64(let v): rawString(String(v))
        case .string(let s): string(s)
        case .uuid(let u): uuid(u)
        case .double(let d):
            // Ordinary numbers are written directly; for the others (NaN, infinities, negative zero) the interchange
            // form decides the name.
            if d.isFinite && !(d == 0 && d.sign == .minus) { rawString(d.description) } else { special(value) }
        case .float(let f):
            if f.isFinite && !(f == 0 && f.sign == .minus) { rawString(f.description) } else { special(value) }
        default:
            if let text = value.jsonObject as? String { string(text) } else { raw("null") }
        }
    }

    private mutating func special(_ value: StoreValue) {
        switch value.jsonObject {
        case let name as String: string(name)
        case let n as NSNumber: rawString(n.stringValue)
        default: raw("null")
        }
    }
}
