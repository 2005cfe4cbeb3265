import CLMDB
import Foundation

/// A liblmdb transaction, valid only inside the closure that received it (see ``LMDBEnvironment/read(_:)`` and
/// ``LMDBEnvironment/write(_:)``). Buffers it returns point into the memory map and are valid until the transaction
/// ends (read) or the next change (write), so callers decode them at once.
struct LMDBTransaction {
    let handle: OpaquePointer
    let isWrite: Bool

    /// The value stored under `key`, or `nil`.
    func get(_ dbi: MDB_dbi, _ key: UnsafeRawBufferPointer) throws -> UnsafeRawBufferPointer? {
        var k = MDB_val(key)
        var v = MDB_val()
        let rc = mdb_get(handle, dbi, &k, &v)
        if rc == MDB_NOTFOUND { return nil }
        try check(rc, "reading a value")
        return UnsafeRawBufferPointer(v)
    }

    /// Stores `value` under `key`. Returns `false` (and stores nothing) when `flags` holds `MDB_NOOVERWRITE` or
    /// `MDB_APPEND` and the key is already there (or, for append, not after the last key).
    @discardableResult
    func put(_ dbi: MDB_dbi, _ key: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer, flags: UInt32 = 0) throws -> Bool {
        var k = MDB_val(key)
        var v = MDB_val(value)
        let rc = mdb_put(handle, dbi, &k, &v, flags)
        if rc == MDB_KEYEXIST { return false }
        try check(rc, "writing a value")
        return true
    }

    /// Removes `key`. Returns whether it was there.
    @discardableResult
    func delete(_ dbi: MDB_dbi, _ key: UnsafeRawBufferPointer) throws -> Bool {
        var k = MDB_val(key)
        let rc = mdb_del(handle, dbi, &k, nil)
        if rc == MDB_NOTFOUND { return false }
        try check(rc, "deleting a value")
        return true
    }

    /// The number of entries in a database.
    func count(_ dbi: MDB_dbi) throws -> Int {
        var stat = MDB_stat()
        try check(mdb_stat(handle, dbi, &stat), "reading database statistics")
        return stat.ms_entries
    }

    /// Runs `body` with a cursor over `dbi`, closed afterwards (read-only cursors are not freed by liblmdb).
    func withCursor<T>(_ dbi: MDB_dbi, _ body: (LMDBCursor) throws -> T) throws -> T {
        var cursor: OpaquePointer?
        try check(mdb_cursor_open(handle, dbi, &cursor), "opening a cursor")
        guard let cursor else { throw LMDBFailure(code: EINVAL, operation: "opening a cursor") }
        defer { mdb_cursor_close(cursor) }
        return try body(LMDBCursor(handle: cursor))
    }
}

extension LMDBTransaction {
    /// Opens a cursor that outlives one call: the caller closes it with ``LMDBCursor/close()`` before the
    /// transaction ends (liblmdb frees a write transaction's cursors at its end, so a later close would free one
    /// twice).
    func openCursor(_ dbi: MDB_dbi) throws -> LMDBCursor {
        var cursor: OpaquePointer?
        try check(mdb_cursor_open(handle, dbi, &cursor), "opening a cursor")
        guard let cursor else { throw LMDBFailure(code: EINVAL, operation: "opening a cursor") }
        return LMDBCursor(handle: cursor)
    }
}

/// A cursor, valid inside ``LMDBTransaction/withCursor(_:_:)`` (or until ``close()`` for one from
/// ``LMDBTransaction/openCursor(_:)``).
struct LMDBCursor {
    let handle: OpaquePointer

    /// Closes a cursor from ``LMDBTransaction/openCursor(_:)``.
    func close() {
        mdb_cursor_close(handle)
    }

    /// Moves the cursor (`MDB_FIRST`, `MDB_NEXT`, `MDB_LAST`, …). Returns the entry it lands on, or `nil` at the
    /// end.
    func move(_ op: MDB_cursor_op) throws -> (key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer)? {
        var k = MDB_val()
        var v = MDB_val()
        let rc = mdb_cursor_get(handle, &k, &v, op)
        if rc == MDB_NOTFOUND { return nil }
        try check(rc, "moving a cursor")
        return (UnsafeRawBufferPointer(k), UnsafeRawBufferPointer(v))
    }

    /// Positions the cursor at the first key greater than or equal to `key` (`MDB_SET_RANGE`).
    func seek(atLeast key: UnsafeRawBufferPointer) throws -> (key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer)? {
        var k = MDB_val(key)
        var v = MDB_val()
        let rc = mdb_cursor_get(handle, &k, &v, MDB_SET_RANGE)
        if rc == MDB_NOTFOUND { return nil }
        try check(rc, "positioning a cursor")
        return (UnsafeRawBufferPointer(k), UnsafeRawBufferPointer(v))
    }

    /// Stores `value` under `key` through the cursor (cheap when the key is near the cursor's position). Returns
    /// `false` when `MDB_NOOVERWRITE` or `MDB_APPEND` refused the key.
    @inline(__always)
    func put(_ key: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer, flags: UInt32) throws -> Bool {
        var k = MDB_val(key)
        var v = MDB_val(value)
        let rc = mdb_cursor_put(handle, &k, &v, flags)
        if rc == MDB_KEYEXIST { return false }
        try check(rc, "writing through a cursor")
        return true
    }

    /// Deletes the entry under the cursor.
    func deleteCurrent() throws {
        try check(mdb_cursor_del(handle, 0), "deleting through a cursor")
    }

    /// Calls `body` with every entry from the cursor's first position on (`start`, or the first entry), until
    /// `body` returns `false`.
    func forEach(
        from start: (key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer)?,
        _ body: (UnsafeRawBufferPointer, UnsafeRawBufferPointer) throws -> Bool
    ) throws {
        var entry = start
        while let e = entry {
            guard try body(e.key, e.value) else { return }
            entry = try move(MDB_NEXT)
        }
    }
}

extension MDB_val {
    /// A value pointing at `buffer` (liblmdb never writes through it for keys and data it is given).
    init(_ buffer: UnsafeRawBufferPointer) {
        self.init(mv_size: buffer.count, mv_data: UnsafeMutableRawPointer(mutating: buffer.baseAddress))
    }
}

extension UnsafeRawBufferPointer {
    init(_ val: MDB_val) {
        self.init(start: val.mv_data.map { UnsafeRawPointer($0) }, count: val.mv_size)
    }
}

/// Big-endian encodings of signed integers whose byte order is their numeric order: the sign bit is flipped, so
/// `-1` sorts before `0` and `Int64.min` first. Used for primary keys and history tokens.
enum OrderedKey {
    @inline(__always)
    static func encode(_ value: Int64) -> UInt64 {
        (UInt64(bitPattern: value) ^ 0x8000_0000_0000_0000).bigEndian
    }

    /// Calls `body` with the 8 ordered bytes of `value`.
    @inline(__always)
    static func with<T>(_ value: Int64, _ body: (UnsafeRawBufferPointer) throws -> T) rethrows -> T {
        try withUnsafeBytes(of: encode(value), body)
    }

    /// Decodes 8 ordered bytes; `nil` for any other length.
    static func decode(_ bytes: UnsafeRawBufferPointer) -> Int64? {
        guard bytes.count == 8 else { return nil }
        var raw: UInt64 = 0
        withUnsafeMutableBytes(of: &raw) { $0.copyMemory(from: bytes) }
        return Int64(bitPattern: UInt64(bigEndian: raw) ^ 0x8000_0000_0000_0000)
    }

    /// The 8 ordered bytes of `value` as an array.
    static func bytes(_ value: Int64) -> [UInt8] {
        withUnsafeBytes(of: encode(value)) { Array($0) }
    }
}

extension LMDBTransaction {
    /// The value stored under a string key (metadata database).
    func get(_ dbi: MDB_dbi, key: String) throws -> [UInt8]? {
        let bytes = Array(key.utf8)
        return try bytes.withUnsafeBytes { k in try get(dbi, k).map { Array($0) } }
    }

    /// Stores `value` under a string key (metadata database).
    func put(_ dbi: MDB_dbi, key: String, value: [UInt8]) throws {
        let bytes = Array(key.utf8)
        try bytes.withUnsafeBytes { k in
            try value.withUnsafeBytes { v in _ = try put(dbi, k, v) }
        }
    }

    /// Stores `value` under `key`.
    @discardableResult
    func put(_ dbi: MDB_dbi, key: [UInt8], value: [UInt8], flags: UInt32 = 0) throws -> Bool {
        try key.withUnsafeBytes { k in try value.withUnsafeBytes { v in try put(dbi, k, v, flags: flags) } }
    }
}
