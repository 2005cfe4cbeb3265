import CSQLite

/// One SQLite value, bound to a statement or read from a result row, by every connection this module opens (the
/// read-only one, the writer's and the one that creates a store).
enum SQLiteValue {
    case null
    case integer(Int64)
    case real(Double)
    case text(String)
    case blob([UInt8])

    /// An INTEGER value.
    var int: Int64? {
        if case .integer(let i) = self { return i }
        return nil
    }

    /// An integer, or a REAL with an integral value (SQLite's NUMERIC affinity may store either).
    var integral: Int64? {
        switch self {
        case .integer(let i): return i
        case .real(let d): return d.rounded() == d ? Int64(exactly: d) : nil
        default: return nil
        }
    }

    /// A number as a double.
    var real: Double? {
        switch self {
        case .integer(let i): return Double(i)
        case .real(let d): return d
        default: return nil
        }
    }

    /// A TEXT value.
    var text: String? {
        if case .text(let s) = self { return s }
        return nil
    }

    /// A BLOB's bytes, or a TEXT value's UTF-8.
    var bytes: [UInt8]? {
        switch self {
        case .blob(let b): return b
        case .text(let s): return Array(s.utf8)
        default: return nil
        }
    }

    /// Binds `values` to the parameters of `stmt` in order; the first result code that is not `SQLITE_OK`, or
    /// `SQLITE_OK`.
    static func bind(_ values: [SQLiteValue], to stmt: OpaquePointer) -> Int32 {
        // SQLITE_TRANSIENT: SQLite copies the bytes before the bind call returns.
        let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)
        for (i, value) in values.enumerated() {
            let index = Int32(i + 1)
            let rc: Int32
            switch value {
            case .null: rc = sqlite3_bind_null(stmt, index)
            case .integer(let v): rc = sqlite3_bind_int64(stmt, index, v)
            case .real(let v): rc = sqlite3_bind_double(stmt, index, v)
            case .text(let s):
                // By length: a string may hold NUL characters, which a NUL-terminated bind would cut off at.
                var s = s
                rc = s.withUTF8 { utf8 in
                    utf8.withMemoryRebound(to: CChar.self) { text in
                        // A non-null pointer even for "": a null one would bind NULL.
                        text.isEmpty
                            ? sqlite3_bind_text(stmt, index, "", 0, transient)
                            : sqlite3_bind_text64(stmt, index, text.baseAddress, UInt64(text.count), transient, UInt8(SQLITE_UTF8))
                    }
                }
            case .blob(let b):
                rc = b.isEmpty
                    ? sqlite3_bind_zeroblob(stmt, index, 0)
                    : b.withUnsafeBytes { sqlite3_bind_blob64(stmt, index, $0.baseAddress, UInt64($0.count), transient) }
            }
            guard rc == SQLITE_OK else { return rc }
        }
        return SQLITE_OK
    }

    /// The columns of the row `stmt` has just stepped to.
    static func row(of stmt: OpaquePointer) -> [SQLiteValue] {
        (0..<sqlite3_column_count(stmt)).map { column(of: stmt, $0) }
    }

    /// Column `c` of the row `stmt` has just stepped to.
    static func column(of stmt: OpaquePointer, _ c: Int32) -> SQLiteValue {
        switch sqlite3_column_type(stmt, c) {
        case SQLITE_INTEGER: return .integer(sqlite3_column_int64(stmt, c))
        case SQLITE_FLOAT: return .real(sqlite3_column_double(stmt, c))
        case SQLITE_TEXT:
            // By length, not up to the first NUL: a text value may hold NUL characters.
            let n = Int(sqlite3_column_bytes(stmt, c))
            guard n > 0, let p = sqlite3_column_text(stmt, c) else { return .text("") }
            return .text(String(decoding: UnsafeBufferPointer(start: p, count: n), as: UTF8.self))
        case SQLITE_BLOB:
            let n = Int(sqlite3_column_bytes(stmt, c))
            guard n > 0, let p = sqlite3_column_blob(stmt, c) else { return .blob([]) }
            return .blob(Array(UnsafeRawBufferPointer(start: p, count: n)))
        default: return .null
        }
    }
}
