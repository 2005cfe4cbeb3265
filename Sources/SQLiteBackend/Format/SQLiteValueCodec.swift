import CSQLite
import Foundation
@_spi(BackendKit) import StoreAPI

/// Binds attribute values to statement parameters and reads them back, bit-exactly for every ``AttributeType``.
///
/// - Integers and booleans are SQLite integers (booleans 0/1); reading checks the width.
/// - Doubles, floats and dates are REALs in columns without affinity, so `-0.0`, infinities and integral values
///   keep their exact bits. SQLite stores NaN as NULL, so a NaN is written as a BLOB of its bit pattern (8 bytes,
///   big-endian; 4 for a float, whose payload would not survive widening). Floats are otherwise stored as their
///   exact `Double` widening.
/// - Decimals are compacted text (`NaN` for NaN), exact and equal for equal values.
/// - Strings and URIs are text bound with their UTF-8 byte length (embedded NULs survive).
/// - Binary and transformable values are blobs; an empty value is an empty blob, never NULL.
/// - UUIDs are 16-byte blobs (byte order equals `uuidString` order).
enum SQLiteValueCodec {
    /// Binds `value` for an attribute of `type` at parameter `index`.
    static func bind(
        _ value: StoreValue, type: AttributeType, to s: Statement, at index: Int32, entity: String,
        property: @autoclosure () -> String
    ) throws {
        switch (type, value) {
        case (_, .null): s.bindNull(index)
        case (.integer16, .integer16(let v)): s.bind(index, Int64(v))
        case (.integer32, .integer32(let v)): s.bind(index, Int64(v))
        case (.integer64, .integer64(let v)): s.bind(index, v)
        case (.boolean, .boolean(let v)): s.bind(index, Int64(v ? 1 : 0))
        case (.double, .double(let v)): try bindReal(v, to: s, at: index)
        case (.date, .date(let v)): try bindReal(v.timeIntervalSinceReferenceDate, to: s, at: index)
        case (.float, .float(let v)):
            if v.isNaN {
                var bits = v.bitPattern.bigEndian
                try withUnsafeBytes(of: &bits) { try s.bind(index, bytes: $0) }
            } else {
                s.bind(index, Double(v))
            }
        case (.decimal, .decimal(let v)): try s.bind(index, decimalText(v))
        case (.string, .string(let v)): try s.bind(index, v)
        case (.uri, .uri(let v)): try s.bind(index, v.absoluteString)
        case (.binary, .binary(let v)), (.transformable, .binary(let v)): try s.bind(index, v)
        case (.uuid, .uuid(let v)):
            var u = v.uuid
            try withUnsafeBytes(of: &u) { try s.bind(index, bytes: $0) }
        default:
            throw StoreError.typeMismatch(
                entity: entity, property: property(), expected: type, got: value.type?.rawValue ?? "nil")
        }
    }

    /// Binds a double (or a date's interval): NaN as its bit pattern, everything else as a REAL.
    static func bindReal(_ v: Double, to s: Statement, at index: Int32) throws {
        if v.isNaN {
            var bits = v.bitPattern.bigEndian
            try withUnsafeBytes(of: &bits) { try s.bind(index, bytes: $0) }
        } else {
            s.bind(index, v)
        }
    }

    /// The stored text of a decimal: compacted, so equal values have equal text (uniqueness indexes rely on it).
    static func decimalText(_ v: Decimal) -> String {
        // Compact already: equal values have one text.
        DecimalText.string(for: v)
    }

    /// Reads column `c` of the current row as a value of `type`. Anything that is not what this backend writes
    /// is ``StoreError/corruptStore(_:reason:)`` naming the entity and attribute.
    static func read(_ s: Statement, column c: Int32, type: AttributeType, url: URL, entity: String, property: String)
        throws -> StoreValue
    {
        do {
            return try read(s, column: c, type: type)
        } catch {
            throw error.storeError(url: url, entity: entity, property: property, type: type)
        }
    }

    /// What a column held instead of a value of the attribute's type (made into a ``StoreError`` by the caller,
    /// who knows the entity and attribute: the row loop does not pass them for every value).
    struct Mismatch: Error {
        let what: String

        func storeError(url: URL, entity: String, property: String, type: AttributeType) -> StoreError {
            .corruptStore(url, reason: "\(entity).\(property) holds \(what), not a \(type.rawValue)")
        }
    }

    /// Reads column `c` of the current row as a value of `type`.
    static func read(_ s: Statement, column c: Int32, type: AttributeType) throws(Mismatch) -> StoreValue {
        let t = s.type(c)
        if t == SQLITE_NULL { return .null }
        switch type {
        case .integer16: return .integer16(Int16(truncatingIfNeeded: try integer(s, c, t, type)))
        case .integer32: return .integer32(Int32(truncatingIfNeeded: try integer(s, c, t, type)))
        case .integer64: return .integer64(try integer(s, c, t, type))
        case .boolean: return .boolean(try integer(s, c, t, type) == 1)
        case .double: return .double(try real(s, c, t))
        case .date: return .date(Date(timeIntervalSinceReferenceDate: try real(s, c, t)))
        case .float: return .float(try float(s, c, t))
        case .decimal:
            guard t == SQLITE_TEXT else { throw Mismatch(what: typeName(t)) }
            let text = s.text(c)
            guard let v = DecimalText.decimal(from: text) else {
                throw Mismatch(what: "the text \(String(reflecting: text))")
            }
            return .decimal(v)
        case .string:
            guard t == SQLITE_TEXT else { throw Mismatch(what: typeName(t)) }
            return .string(s.text(c))
        case .uri:
            guard t == SQLITE_TEXT else { throw Mismatch(what: typeName(t)) }
            let text = s.text(c)
            guard let u = URL(string: text) else { throw Mismatch(what: "the text \(String(reflecting: text))") }
            return .uri(u)
        case .binary, .transformable:
            guard t == SQLITE_BLOB else { throw Mismatch(what: typeName(t)) }
            return .binary(s.blob(c))
        case .uuid: return .uuid(try uuid(s, c, t))
        }
    }

    /// An integer column (of SQLite type `t`, not NULL) checked to fit `type`: an integer of that width, or 0/1
    /// for a Boolean.
    @inline(__always)
    static func integer(_ s: Statement, _ c: Int32, _ t: Int32, _ type: AttributeType) throws(Mismatch) -> Int64 {
        guard t == SQLITE_INTEGER else { throw Mismatch(what: typeName(t)) }
        let v = s.int64(c)
        switch type {
        case .integer16: guard Int16(exactly: v) != nil else { throw Mismatch(what: "the out-of-range integer \(v)") }
        case .integer32: guard Int32(exactly: v) != nil else { throw Mismatch(what: "the out-of-range integer \(v)") }
        case .boolean: guard v == 0 || v == 1 else { throw Mismatch(what: "the integer \(v)") }
        default: break
        }
        return v
    }

    /// A double or date column: a REAL, or the 8-byte bit pattern a NaN is stored as. An INTEGER is read as the
    /// double it equals: rows that predate a column added with a default (an in-place upgrade) read that default,
    /// and SQLite hands an integral REAL default to them as an INTEGER.
    @inline(__always)
    static func real(_ s: Statement, _ c: Int32, _ t: Int32) throws(Mismatch) -> Double {
        if t == SQLITE_FLOAT { return s.double(c) }
        if t == SQLITE_BLOB, let bits = bigEndianBits(s, c, as: UInt64.self) { return Double(bitPattern: bits) }
        if t == SQLITE_INTEGER, let d = Double(exactly: s.int64(c)) { return d }
        throw Mismatch(what: typeName(t))
    }

    /// A float column: a REAL that is exactly a float's widening, or the 4-byte bit pattern of a NaN.
    @inline(__always)
    static func float(_ s: Statement, _ c: Int32, _ t: Int32) throws(Mismatch) -> Float {
        if t == SQLITE_FLOAT {
            let d = s.double(c)
            let f = Float(d)
            guard Double(f).bitPattern == d.bitPattern else { throw Mismatch(what: "the double \(d)") }
            return f
        }
        if t == SQLITE_BLOB, let bits = bigEndianBits(s, c, as: UInt32.self) { return Float(bitPattern: bits) }
        if t == SQLITE_INTEGER, let f = Float(exactly: s.int64(c)) { return f }  // an integral default, as for doubles
        throw Mismatch(what: typeName(t))
    }

    /// A blob of exactly `T`'s size read as a big-endian bit pattern (how a NaN is stored).
    static func bigEndianBits<T: FixedWidthInteger & UnsignedInteger>(_ s: Statement, _ c: Int32, as: T.Type) -> T? {
        s.withBlob(c) { b -> T? in
            guard b.count == MemoryLayout<T>.size else { return nil }
            return b.reduce(T(0)) { $0 << 8 | T($1) }
        }
    }

    /// A UUID column: a 16-byte blob.
    @inline(__always)
    static func uuid(_ s: Statement, _ c: Int32, _ t: Int32) throws(Mismatch) -> UUID {
        guard t == SQLITE_BLOB else { throw Mismatch(what: typeName(t)) }
        guard let u = uuid(s, c) else { throw Mismatch(what: "a blob that is not 16 bytes") }
        return u
    }

    /// A 16-byte blob column as a UUID.
    static func uuid(_ s: Statement, _ c: Int32) -> UUID? {
        s.withBlob(c) { b -> UUID? in
            guard b.count == 16 else { return nil }
            return UUID(uuid: (b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7],
                               b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]))
        }
    }

    /// A UUID as the 16-byte blob it is stored as.
    static func uuidData(_ u: UUID) -> Data {
        var bytes = u.uuid
        return withUnsafeBytes(of: &bytes) { Data($0) }
    }

    static func typeName(_ t: Int32) -> String {
        switch t {
        case SQLITE_INTEGER: "an integer"
        case SQLITE_FLOAT: "a real"
        case SQLITE_TEXT: "text"
        case SQLITE_BLOB: "a blob"
        default: "NULL"
        }
    }
}
