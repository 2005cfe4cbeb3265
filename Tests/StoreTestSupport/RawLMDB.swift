import CLMDB
import Foundation

/// Direct liblmdb access for tests that must build foreign environments or damage a store's contents the way
/// another program could. Only used on stores that are closed in this process.
public enum RawLMDB {
    struct Failure: Error, CustomStringConvertible {
        let code: Int32
        let what: String
        var description: String { "\(what): \(String(cString: mdb_strerror(code)))" }
    }

    static func check(_ rc: Int32, _ what: String) throws {
        if rc != 0 { throw Failure(code: rc, what: what) }
    }

    /// Runs `body` in a write transaction on the environment at `path` (directory form unless `fileForm`), with a
    /// function that opens (creating) a named database, or the main one for `nil`.
    public static func write(
        _ path: URL, fileForm: Bool = false,
        _ body: (_ txn: OpaquePointer, _ open: (String?) throws -> MDB_dbi) throws -> Void
    ) throws {
        var env: OpaquePointer?
        try check(mdb_env_create(&env), "create")
        defer { mdb_env_close(env) }
        try check(mdb_env_set_maxdbs(env, 64), "maxdbs")
        try check(mdb_env_set_mapsize(env, 64 << 20), "mapsize")
        try check(mdb_env_open(env, path.path, fileForm ? UInt32(MDB_NOSUBDIR) : 0, 0o644), "open")
        var txn: OpaquePointer?
        try check(mdb_txn_begin(env, nil, 0, &txn), "begin")
        do {
            try body(txn!) { name in
                var dbi: MDB_dbi = 0
                try check(mdb_dbi_open(txn, name, UInt32(MDB_CREATE), &dbi), "dbi \(name ?? "main")")
                return dbi
            }
        } catch {
            mdb_txn_abort(txn)
            throw error
        }
        try check(mdb_txn_commit(txn), "commit")
    }

    public static func put(_ txn: OpaquePointer, _ dbi: MDB_dbi, _ key: [UInt8], _ value: [UInt8]) throws {
        var k = key
        var v = value
        try k.withUnsafeMutableBytes { kb in
            try v.withUnsafeMutableBytes { vb in
                var kv = MDB_val(mv_size: kb.count, mv_data: kb.baseAddress)
                var vv = MDB_val(mv_size: vb.count, mv_data: vb.baseAddress)
                try check(mdb_put(txn, dbi, &kv, &vv, 0), "put")
            }
        }
    }

    /// The 8-byte key the store uses for a primary key (big-endian with the sign bit flipped).
    public static func key(_ pk: Int64) -> [UInt8] {
        withUnsafeBytes(of: (UInt64(bitPattern: pk) ^ 0x8000_0000_0000_0000).bigEndian) { Array($0) }
    }
}
