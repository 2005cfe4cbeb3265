import Foundation
@_spi(BackendKit) import StoreAPI

/// Attribute values from results in PostgreSQL's binary form, as record reads ask for them: integers and floats in
/// network byte order, Booleans as one byte, UUIDs as their 16 bytes, `bytea` as the bytes themselves (no hex), and
/// decimals as the text of their `numeric` (the select list casts them, see ``PGTable/selectList``).
///
/// Every value's length is checked against its type, and every column's type against the layout before any row is
/// read (``check(_:table:url:)``), so a table altered behind the store's back is a ``StoreAPI/StoreError/corruptStore(_:reason:)``,
/// never a misread.
enum PostgresBinaryCodec {
    /// PostgreSQL's type OIDs of the column types the layout uses.
    enum OID {
        static let bool: UInt32 = 16
        static let bytea: UInt32 = 17
        static let int8: UInt32 = 20
        static let int2: UInt32 = 21
        static let int4: UInt32 = 23
        static let text: UInt32 = 25
        static let float4: UInt32 = 700
        static let float8: UInt32 = 701
        static let uuid: UInt32 = 2950
    }

    /// The type a record read's column `column` of `table` arrives as (after the select list's casts).
    static func expectedOID(_ column: PGColumn) -> UInt32 {
        guard let type = column.attributeType else { return OID.int8 }
        switch type {
        case .integer16: return OID.int2
        case .integer32: return OID.int4
        case .integer64: return OID.int8
        case .boolean: return OID.bool
        case .double, .date: return OID.float8
        case .float: return OID.float4
        case .decimal: return OID.text
        case .uuid: return OID.uuid
        case .string, .uri, .binary, .transformable: return OID.bytea
        }
    }

    /// Checks that `rows` (a record read of `table`, binary form) has the select list's columns in the layout's
    /// types.
    static func check(_ rows: PostgresRows, table: PGTable, url: URL) throws {
        let expected = [OID.int8, OID.int4, OID.uuid, OID.int8] + table.columns.map(expectedOID)
        guard rows.columns == expected.count else {
            throw StoreError.corruptStore(url, reason: "a read of \(table.name) returned \(rows.columns) columns, not \(expected.count)")
        }
        for (i, oid) in expected.enumerated() where rows.typeOID(i) != oid {
            let name = i < PGTable.prefix ? ["_pk", "_ent", "_gid", "_ver"][i] : table.columns[i - PGTable.prefix].name
            throw StoreError.corruptStore(
                url, reason: "the column \(name) of \(table.name) has type OID \(rows.typeOID(i)), not \(oid) as the store's layout says")
        }
    }

    /// A big-endian integer of exactly `N` bytes.
    @inline(__always)
    static func integer<T: FixedWidthInteger>(_ bytes: UnsafeRawBufferPointer, as: T.Type) -> T? {
        guard bytes.count == MemoryLayout<T>.size, let base = bytes.baseAddress else { return nil }
        return T(bigEndian: base.loadUnaligned(as: T.self))
    }

    /// A 16-byte UUID.
    @inline(__always)
    static func uuid(_ bytes: UnsafeRawBufferPointer) -> UUID? {
        guard bytes.count == 16, let base = bytes.baseAddress else { return nil }
        return UUID(uuid: base.loadUnaligned(as: uuid_t.self))
    }

    /// Column `column` of `row` as a value of `type` (NULL is `.null`), or `nil` when its bytes are not one.
    @inline(__always)
    static func value(_ rows: PostgresRows, _ row: Int, _ column: Int, type: AttributeType) -> StoreValue? {
        guard let value = rows.binary(row, column, { decode($0, type: type) }) else { return .null }
        return value
    }

    /// Appends the value `bytes` hold to `page` as a value of `type` — the same value ``value(_:_:_:type:)``
    /// makes, without making it: bytes, strings and UUIDs are copied as they are. `false` (nothing appended) when
    /// the bytes are not a value of `type`.
    static func append(_ bytes: UnsafeRawBufferPointer, type: AttributeType, to page: inout RecordPage) -> Bool {
        switch type {
        case .integer16:
            guard let v = integer(bytes, as: Int16.self) else { return false }
            page.appendInteger(Int64(v), tag: .integer16)
        case .integer32:
            guard let v = integer(bytes, as: Int32.self) else { return false }
            page.appendInteger(Int64(v), tag: .integer32)
        case .integer64:
            guard let v = integer(bytes, as: Int64.self) else { return false }
            page.appendInteger(v, tag: .integer64)
        case .boolean:
            guard bytes.count == 1 else { return false }
            page.appendBoolean(bytes[0] != 0)
        case .double, .date:
            guard let v = integer(bytes, as: UInt64.self) else { return false }
            page.appendDouble(Double(bitPattern: v), tag: type == .date ? .date : .double)
        case .float:
            guard let v = integer(bytes, as: UInt32.self) else { return false }
            page.appendFloat(Float(bitPattern: v))
        case .uuid:
            guard let v = uuid(bytes) else { return false }
            page.appendUUID(v)
        case .string:
            guard UTF8Bytes.isValid(bytes) else { return false }
            page.appendBytes(bytes, tag: .string)
        case .binary, .transformable:
            page.appendBytes(bytes, tag: .binary)
        case .uri:
            if PlainURIText.isPlain(bytes) {
                page.appendBytes(bytes, tag: .uri)  // what URL(string:) accepts and keeps as it is
            } else {
                guard let value = decode(bytes, type: type) else { return false }
                page.append(value)
            }
        case .decimal:
            // Canonical text is copied; other text is parsed and written canonically, as a read would.
            if let (_, isCanonical) = DecimalText.decimal(utf8: bytes), isCanonical {
                page.appendBytes(bytes, tag: .decimal)
            } else {
                guard let value = decode(bytes, type: type) else { return false }
                page.append(value)
            }
        }
        return true
    }

    /// The value `bytes` hold, or `nil` when they are not a value of `type`.
    private static func decode(_ bytes: UnsafeRawBufferPointer, type: AttributeType) -> StoreValue? {
        switch type {
        case .integer16: return integer(bytes, as: Int16.self).map { .integer16($0) }
        case .integer32: return integer(bytes, as: Int32.self).map { .integer32($0) }
        case .integer64: return integer(bytes, as: Int64.self).map { .integer64($0) }
        case .boolean:
            guard bytes.count == 1 else { return nil }
            return .boolean(bytes[0] != 0)
        case .double:
            return integer(bytes, as: UInt64.self).map { .double(Double(bitPattern: $0)) }
        case .date:
            return integer(bytes, as: UInt64.self).map { .date(Date(timeIntervalSinceReferenceDate: Double(bitPattern: $0))) }
        case .float:
            return integer(bytes, as: UInt32.self).map { .float(Float(bitPattern: $0)) }
        case .decimal:
            if bytes.elementsEqual("NaN".utf8) { return .decimal(.nan) }
            return DecimalText.decimal(utf8: bytes).map { .decimal($0.value) }
        case .uuid:
            return uuid(bytes).map { .uuid($0) }
        case .string:
            // Decoded as it is: Foundation's UTF-8 decoding would drop a leading U+FEFF.
            return String(validating: bytes, as: UTF8.self).map { .string($0) }
        case .uri:
            return String(validating: bytes, as: UTF8.self).flatMap { URL(string: $0) }.map { .uri($0) }
        case .binary, .transformable:
            return .binary(Data(bytes))
        }
    }
}
