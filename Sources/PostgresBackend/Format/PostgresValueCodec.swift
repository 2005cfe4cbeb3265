import Foundation
@_spi(BackendKit) import StoreAPI

/// Attribute values as the text-format parameters and results of libpq, exactly for every ``AttributeType``
/// (see ``PostgresLayout`` for the column types).
///
/// - Doubles, floats and dates (seconds since 2001) are written in their shortest round-trip form, infinities and
///   NaN by PostgreSQL's names, `-0` with its sign; the server prints them back the same way. A NaN comes back as
///   the standard quiet NaN (its sign and payload are not kept).
/// - Decimals are their compact text (`NaN` for NaN); `numeric` keeps every digit.
/// - Strings and URIs are their UTF-8 bytes in a `bytea`, binary values their bytes: `\x` and hex both ways.
enum PostgresValueCodec {
    /// The parameter text of `value` for an attribute of `type` (`nil` is NULL).
    static func parameter(_ value: StoreValue, type: AttributeType, entity: String, property: String) throws -> String? {
        switch (type, value) {
        case (_, .null): return nil
        case (.integer16, .integer16(let v)): return String(v)
        case (.integer32, .integer32(let v)): return String(v)
        case (.integer64, .integer64(let v)): return String(v)
        case (.boolean, .boolean(let v)): return v ? "t" : "f"
        case (.double, .double(let v)): return real(v)
        case (.date, .date(let v)): return real(v.timeIntervalSinceReferenceDate)
        case (.float, .float(let v)):
            if v.isNaN { return "NaN" }
            if v.isInfinite { return v < 0 ? "-Infinity" : "Infinity" }
            return v.description
        case (.decimal, .decimal(let v)): return DecimalText.string(for: v)
        case (.string, .string(let v)): return hex(Data(v.utf8))
        case (.uri, .uri(let v)): return hex(Data(v.absoluteString.utf8))
        case (.binary, .binary(let v)), (.transformable, .binary(let v)): return hex(v)
        case (.uuid, .uuid(let v)): return v.uuidString
        default:
            throw StoreError.typeMismatch(entity: entity, property: property, expected: type, got: value.type?.rawValue ?? "nil")
        }
    }

    static func real(_ v: Double) -> String {
        if v.isNaN { return "NaN" }
        if v.isInfinite { return v < 0 ? "-Infinity" : "Infinity" }
        return v.description
    }

    /// `\x` followed by the bytes in hex: `bytea`'s input form.
    static func hex(_ data: Data) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out = [UInt8]()
        out.reserveCapacity(2 + data.count * 2)
        out.append(UInt8(ascii: "\\"))
        out.append(UInt8(ascii: "x"))
        for b in data {
            out.append(digits[Int(b >> 4)])
            out.append(digits[Int(b & 0xF)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Decodes `bytea`'s `\x…` output form; `nil` for anything else.
    static func bytes(fromHex text: UnsafeBufferPointer<UInt8>) -> Data? {
        guard text.count >= 2, text[0] == UInt8(ascii: "\\"), text[1] == UInt8(ascii: "x"), text.count % 2 == 0 else {
            return nil
        }
        var out = Data(count: (text.count - 2) / 2)
        let ok = out.withUnsafeMutableBytes { (buffer: UnsafeMutableRawBufferPointer) -> Bool in
            var i = 2
            var j = 0
            while i < text.count {
                guard let hi = HexDigit.value(text[i]), let lo = HexDigit.value(text[i + 1]) else { return false }
                buffer[j] = hi << 4 | lo
                i += 2
                j += 1
            }
            return true
        }
        return ok ? out : nil
    }

    static func parseReal(_ text: String) -> Double? {
        switch text {
        case "NaN": return .nan
        case "Infinity": return .infinity
        case "-Infinity": return -.infinity
        default: return Double(text)
        }
    }

    /// Reads column `column` of `row` as a value of `type`; what this backend does not write is
    /// ``StoreError/corruptStore(_:reason:)`` naming the entity and attribute.
    static func read(_ rows: PostgresRows, _ row: Int, _ column: Int, type: AttributeType, url: URL, entity: String,
                     property: String) throws -> StoreValue {
        if rows.isNull(row, column) { return .null }
        func bad(_ what: String) -> StoreError {
            .corruptStore(url, reason: "'\(entity).\(property)' (\(type.rawValue)) holds \(what)")
        }
        switch type {
        case .string, .uri, .binary, .transformable:
            guard let data = rows.bytes(row, column, { bytes(fromHex: $0) }) ?? nil else { throw bad("a value that is not bytea") }
            switch type {
            case .string:
                // Decoded as it is: Foundation's UTF-8 decoding would drop a leading U+FEFF.
                guard let s = String(validating: data, as: UTF8.self) else { throw bad("bytes that are not UTF-8") }
                return .string(s)
            case .uri:
                guard let s = String(validating: data, as: UTF8.self), let u = URL(string: s) else { throw bad("an invalid URI") }
                return .uri(u)
            default:
                return .binary(data)
            }
        default:
            break
        }
        guard let text = rows.text(row, column) else { return .null }
        switch type {
        case .integer16: if let v = Int16(text) { return .integer16(v) }
        case .integer32: if let v = Int32(text) { return .integer32(v) }
        case .integer64: if let v = Int64(text) { return .integer64(v) }
        case .boolean: if text == "t" || text == "f" { return .boolean(text == "t") }
        case .double: if let v = parseReal(text) { return .double(v) }
        case .date: if let v = parseReal(text) { return .date(Date(timeIntervalSinceReferenceDate: v)) }
        case .float:
            switch text {
            case "NaN": return .float(.nan)
            case "Infinity": return .float(.infinity)
            case "-Infinity": return .float(-.infinity)
            default: if let v = Float(text) { return .float(v) }
            }
        case .decimal: if let v = DecimalText.decimal(from: text) { return .decimal(v) }
        case .uuid: if let v = UUID(uuidString: text) { return .uuid(v) }
        case .string, .uri, .binary, .transformable: break
        }
        throw bad("'\(text.prefix(40))'")
    }
}
