import CSQLite
import Foundation
@_spi(BackendKit) import StoreAPI

extension SQLiteValueCodec {
    /// Appends column `c` of the current row to `page` as a value of `type`: the same checks and the same value
    /// as ``read(_:column:type:)``, without making a ``StoreValue`` (text and blobs are copied from SQLite's
    /// buffer into the page).
    static func append(_ s: Statement, column c: Int32, type: AttributeType, to page: inout RecordPage) throws(Mismatch) {
        let t = s.type(c)
        if t == SQLITE_NULL { return page.appendNull() }
        switch type {
        case .string:
            guard t == SQLITE_TEXT else { throw Mismatch(what: typeName(t)) }
            let bytes = s.textBytes(c)
            if UTF8Bytes.isASCII(bytes) {
                page.appendBytes(bytes, tag: .string)
            } else {
                // Repaired exactly as a read repairs it (invalid sequences become U+FFFD).
                page.append(.string(String(decoding: bytes, as: UTF8.self)))
            }
        case .binary, .transformable:
            guard t == SQLITE_BLOB else { throw Mismatch(what: typeName(t)) }
            s.withBlob(c) { page.appendBytes($0, tag: .binary) }
        case .integer16: page.appendInteger(try integer(s, c, t, type), tag: .integer16)
        case .integer32: page.appendInteger(try integer(s, c, t, type), tag: .integer32)
        case .integer64: page.appendInteger(try integer(s, c, t, type), tag: .integer64)
        case .boolean: page.appendBoolean(try integer(s, c, t, type) == 1)
        case .double: page.appendDouble(try real(s, c, t), tag: .double)
        case .date: page.appendDouble(try real(s, c, t), tag: .date)
        case .float: page.appendFloat(try float(s, c, t))
        case .uuid: page.appendUUID(try uuid(s, c, t))
        case .uri:
            guard t == SQLITE_TEXT else { throw Mismatch(what: typeName(t)) }
            let bytes = s.textBytes(c)
            if PlainURIText.isPlain(bytes) {
                page.appendBytes(bytes, tag: .uri)  // what URL(string:) would accept and keep as it is
            } else {
                page.append(try read(s, column: c, type: type))
            }
        case .decimal:
            guard t == SQLITE_TEXT else { throw Mismatch(what: typeName(t)) }
            let bytes = s.textBytes(c)
            // Canonical text (what this backend writes) is copied; other text is parsed and written canonically.
            if let (_, isCanonical) = DecimalText.decimal(utf8: bytes), isCanonical {
                page.appendBytes(bytes, tag: .decimal)
            } else {
                page.append(try read(s, column: c, type: type))
            }
        }
    }
}

extension Statement {
    /// The column's text as bytes, valid until the statement moves on (NUL characters included).
    func textBytes(_ c: Int32) -> UnsafeRawBufferPointer {
        guard let p = sqlite3_column_text(handle, c) else { return UnsafeRawBufferPointer(start: nil, count: 0) }
        return UnsafeRawBufferPointer(start: p, count: Int(sqlite3_column_bytes(handle, c)))
    }
}
