import Foundation
@_spi(BackendKit) import StoreAPI

/// The binary form of one attribute value: a type tag, then the payload.
///
/// | tag | value | payload |
/// |---|---|---|
/// | 0 | nil | — |
/// | 1, 2, 3 | integer 16 / 32 / 64 | zig-zag varint |
/// | 4 | decimal | length + UTF-8 of its POSIX string form (`NaN` for NaN) |
/// | 5 | double | 8 bytes, the IEEE bit pattern (NaN payloads and -0 kept) |
/// | 6 | float | 4 bytes, the IEEE bit pattern |
/// | 7 | string | length + UTF-8 (NUL-safe) |
/// | 8, 9 | false, true | — |
/// | 10 | date | 8 bytes, the bit pattern of `timeIntervalSinceReferenceDate` |
/// | 11 | binary | length + bytes (empty is not nil) |
/// | 12 | UUID | 16 bytes |
/// | 13 | URI | length + UTF-8 of `absoluteString` |
///
/// The same form, concatenated, is the key of a uniqueness index, so equal stored values give equal keys.
enum LMDBValueCodec {
    enum Tag: UInt8 {
        case null = 0, integer16, integer32, integer64, decimal, double, float, string, boolFalse, boolTrue, date,
            binary, uuid, uri
    }

    /// Writes `value` and returns its tag (the save checks the tag against the attribute's type).
    /// Inlined into the record encoder's loop, where the writer then stays in registers.
    @discardableResult @inline(__always)
    static func encode(_ value: StoreValue, into w: inout RawWriter) -> UInt8 {
        switch value {
        case .null: return w.tagged(.null)
        case .integer16(let v): w.byte(Tag.integer16.rawValue); w.signed(Int64(v)); return Tag.integer16.rawValue
        case .integer32(let v): w.byte(Tag.integer32.rawValue); w.signed(Int64(v)); return Tag.integer32.rawValue
        case .integer64(let v): w.byte(Tag.integer64.rawValue); w.signed(v); return Tag.integer64.rawValue
        case .decimal(let v): w.byte(Tag.decimal.rawValue); w.string(decimalString(v)); return Tag.decimal.rawValue
        case .double(let v): w.byte(Tag.double.rawValue); w.fixed64(v.bitPattern); return Tag.double.rawValue
        case .float(let v): w.byte(Tag.float.rawValue); w.fixed32(v.bitPattern); return Tag.float.rawValue
        case .string(let v): w.byte(Tag.string.rawValue); w.string(v); return Tag.string.rawValue
        case .boolean(let v): return w.tagged(v ? .boolTrue : .boolFalse)
        case .date(let v):
            w.byte(Tag.date.rawValue)
            w.fixed64(v.timeIntervalSinceReferenceDate.bitPattern)
            return Tag.date.rawValue
        case .binary(let v): w.byte(Tag.binary.rawValue); w.lengthPrefixed(v); return Tag.binary.rawValue
        case .uuid(let v): w.byte(Tag.uuid.rawValue); w.uuid(v); return Tag.uuid.rawValue
        case .uri(let v): w.byte(Tag.uri.rawValue); w.string(v.absoluteString); return Tag.uri.rawValue
        }
    }

    /// The tags (as bits: `1 << tag`) of the values that may be stored in an attribute of `type`, derived from
    /// ``StoreValue/fits(_:)`` so the save's check by tag is exactly that rule.
    static func acceptedTags(_ type: AttributeType) -> UInt16 {
        guard let index = AttributeType.allCases.firstIndex(of: type) else { return deriveAcceptedTags(type) }
        return acceptedTagsByType[index]
    }

    /// ``acceptedTags(_:)`` of every type, in `AttributeType.allCases` order: derived once per process, not for each
    /// attribute of every store opened.
    private static let acceptedTagsByType: [UInt16] = AttributeType.allCases.map(deriveAcceptedTags)

    private static func deriveAcceptedTags(_ type: AttributeType) -> UInt16 {
        var mask: UInt16 = 0
        for sample in tagSamples {
            var scratch = ByteWriter(capacity: 64)
            let tag = scratch.encode { encode(sample, into: &$0) }
            if sample.fits(type) { mask |= 1 << UInt16(tag) }
        }
        return mask
    }

    /// One value per tag.
    private static let tagSamples: [StoreValue] = [
        .null, .integer16(0), .integer32(0), .integer64(0), .decimal(0), .double(0), .float(0), .string(""),
        .boolean(false), .boolean(true), .date(Date(timeIntervalSinceReferenceDate: 0)), .binary(Data()),
        .uuid(UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0))), .uri(URL(fileURLWithPath: "/")),
    ]

    static func decode(from r: inout ByteReader) throws -> StoreValue {
        let raw = try r.byte()
        guard let tag = Tag(rawValue: raw) else { throw ByteReader.Malformed(reason: "unknown value tag \(raw)") }
        switch tag {
        case .null: return .null
        case .integer16:
            let v = try r.signed()
            guard let x = Int16(exactly: v) else { throw ByteReader.Malformed(reason: "16-bit integer out of range: \(v)") }
            return .integer16(x)
        case .integer32:
            let v = try r.signed()
            guard let x = Int32(exactly: v) else { throw ByteReader.Malformed(reason: "32-bit integer out of range: \(v)") }
            return .integer32(x)
        case .integer64: return .integer64(try r.signed())
        case .decimal:
            let s = try r.string()
            guard let d = parseDecimal(s) else { throw ByteReader.Malformed(reason: "unreadable decimal \(String(reflecting: s))") }
            return .decimal(d)
        case .double: return .double(Double(bitPattern: try r.fixed64()))
        case .float: return .float(Float(bitPattern: try r.fixed32()))
        case .string: return .string(try r.string())
        case .boolFalse: return .boolean(false)
        case .boolTrue: return .boolean(true)
        case .date: return .date(Date(timeIntervalSinceReferenceDate: Double(bitPattern: try r.fixed64())))
        case .binary: return .binary(Data(try r.lengthPrefixed()))
        case .uuid: return .uuid(try r.uuid())
        case .uri:
            let s = try r.string()
            guard let u = URL(string: s) else { throw ByteReader.Malformed(reason: "unreadable URI \(String(reflecting: s))") }
            return .uri(u)
        }
    }

    /// Moves past one value without making it: a partial decode (``RecordCodec/decode(_:primaryKey:layout:reading:)``)
    /// skips the values a predicate does not read. Lengths and tags are checked as ``decode(from:)`` checks them;
    /// the payload (the text of a string, decimal or URI) is not.
    static func skip(from r: inout ByteReader) throws {
        let raw = try r.byte()
        guard let tag = Tag(rawValue: raw) else { throw ByteReader.Malformed(reason: "unknown value tag \(raw)") }
        switch tag {
        case .null, .boolFalse, .boolTrue: break
        case .integer16, .integer32, .integer64: _ = try r.signed()
        case .double, .date: _ = try r.fixed64()
        case .float: _ = try r.fixed32()
        case .decimal, .string, .binary, .uri: _ = try r.lengthPrefixed()
        case .uuid: _ = try r.raw(16)
        }
    }

    static func decimalString(_ d: Decimal) -> String {
        DecimalText.string(for: d)
    }

    static func parseDecimal(_ s: String) -> Decimal? {
        DecimalText.decimal(from: s)
    }
}

extension RawWriter {
    /// Writes a tag that is the whole value and returns it.
    @inline(__always) fileprivate mutating func tagged(_ tag: LMDBValueCodec.Tag) -> UInt8 {
        byte(tag.rawValue)
        return tag.rawValue
    }
}
