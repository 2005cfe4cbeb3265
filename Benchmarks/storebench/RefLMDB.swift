import BenchLMDB
import Foundation

/// The LMDB references, on the very environments our backend wrote: a cursor walk over every database touching
/// every byte, `mdb_put` of exactly the same entries into the same named databases in one transaction, and
/// `mdb_get` by key.
enum RefLMDB {
    struct Failure: Error, CustomStringConvertible {
        let code: Int32
        let what: String
        var description: String { "\(what): \(String(cString: mdb_strerror(code)))" }
    }

    static func check(_ rc: Int32, _ what: String) throws {
        if rc != 0 { throw Failure(code: rc, what: what) }
    }

    /// Opens the environment at `path` (a directory, as our stores are by default; a file with `MDB_NOSUBDIR`).
    static func withEnvironment<T>(_ path: String, readOnly: Bool, mapSize: Int = 0, _ body: (OpaquePointer) throws -> T) throws -> T {
        var env: OpaquePointer?
        try check(mdb_env_create(&env), "mdb_env_create")
        defer { mdb_env_close(env) }
        guard let env else { throw Failure(code: EINVAL, what: "mdb_env_create") }
        try check(mdb_env_set_maxdbs(env, 256), "mdb_env_set_maxdbs")
        if mapSize > 0 { try check(mdb_env_set_mapsize(env, mapSize), "mdb_env_set_mapsize") }
        var isDirectory: ObjCBool = false
        _ = FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory)
        var flags = UInt32(MDB_NOTLS)
        if readOnly { flags |= UInt32(MDB_RDONLY) }
        if !isDirectory.boolValue { flags |= UInt32(MDB_NOSUBDIR) }
        try check(mdb_env_open(env, path, flags, 0o644), "mdb_env_open \(path)")
        return try body(env)
    }

    /// The named databases of an environment (keys of the main database that open as databases), with the plain
    /// entries of the main database.
    private static func databaseNames(_ txn: OpaquePointer) throws -> [String] {
        var main: MDB_dbi = 0
        try check(mdb_dbi_open(txn, nil, 0, &main), "mdb_dbi_open main")
        var cursor: OpaquePointer?
        try check(mdb_cursor_open(txn, main, &cursor), "mdb_cursor_open")
        defer { mdb_cursor_close(cursor) }
        var k = MDB_val()
        var v = MDB_val()
        var names: [String] = []
        var op = MDB_FIRST
        while mdb_cursor_get(cursor, &k, &v, op) == 0 {
            op = MDB_NEXT
            let bytes = UnsafeRawBufferPointer(start: k.mv_data, count: k.mv_size)
            names.append(String(decoding: bytes, as: UTF8.self))
        }
        return names
    }

    /// Walks every entry of every database, summing every 8-byte word of keys and values.
    static func read(_ path: String) throws -> UInt64 {
        try withEnvironment(path, readOnly: true) { env in
            var txn: OpaquePointer?
            try check(mdb_txn_begin(env, nil, UInt32(MDB_RDONLY), &txn), "mdb_txn_begin")
            defer { mdb_txn_abort(txn) }
            guard let txn else { return 0 }
            var sum: UInt64 = 0
            for name in try databaseNames(txn) {
                var dbi: MDB_dbi = 0
                guard mdb_dbi_open(txn, name, 0, &dbi) == 0 else { continue }
                var cursor: OpaquePointer?
                try check(mdb_cursor_open(txn, dbi, &cursor), "mdb_cursor_open")
                var k = MDB_val()
                var v = MDB_val()
                var op = MDB_FIRST
                while mdb_cursor_get(cursor, &k, &v, op) == 0 {
                    op = MDB_NEXT
                    sum &+= touch(k.mv_data, k.mv_size) &+ touch(v.mv_data, v.mv_size)
                }
                mdb_cursor_close(cursor)
            }
            return sum
        }
    }

    /// Every named database's flags and entries, captured so they can be written again.
    struct Image {
        var databases: [(name: String, flags: UInt32, entries: Int, data: ByteImage)] = []
        var bytes: Int = 0
        var entryCount: Int { databases.reduce(0) { $0 + $1.entries } }
    }

    static func capture(_ path: String) throws -> Image {
        try withEnvironment(path, readOnly: true) { env in
            var txn: OpaquePointer?
            try check(mdb_txn_begin(env, nil, UInt32(MDB_RDONLY), &txn), "mdb_txn_begin")
            defer { mdb_txn_abort(txn) }
            guard let txn else { return Image() }
            var image = Image()
            for name in try databaseNames(txn) {
                var dbi: MDB_dbi = 0
                guard mdb_dbi_open(txn, name, 0, &dbi) == 0 else { continue }
                var flags: UInt32 = 0
                mdb_dbi_flags(txn, dbi, &flags)
                var cursor: OpaquePointer?
                try check(mdb_cursor_open(txn, dbi, &cursor), "mdb_cursor_open")
                var k = MDB_val()
                var v = MDB_val()
                var op = MDB_FIRST
                var data = ByteImage()
                var entries = 0
                while mdb_cursor_get(cursor, &k, &v, op) == 0 {
                    op = MDB_NEXT
                    data.blob(k.mv_data, k.mv_size)
                    data.blob(v.mv_data, v.mv_size)
                    entries += 1
                    image.bytes += k.mv_size + v.mv_size
                }
                mdb_cursor_close(cursor)
                image.databases.append((name, flags, entries, data))
            }
            return image
        }
    }

    /// Creates an environment at `path` (a directory) and puts every captured entry, in key order with
    /// `MDB_APPEND` (our backend appends too), in one transaction; commits (fsync) and closes.
    static func write(_ image: Image, to path: String) throws {
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
        // A C program would size the map up front: twice the data, at least 64 MiB.
        let map = max(64 << 20, (image.bytes * 2 + (1 << 20)) & ~0xFFFFF)
        try withEnvironment(path, readOnly: false, mapSize: map) { env in
            var txn: OpaquePointer?
            try check(mdb_txn_begin(env, nil, 0, &txn), "mdb_txn_begin")
            guard let txn else { return }
            do {
                for db in image.databases {
                    var dbi: MDB_dbi = 0
                    let keep = UInt32(MDB_REVERSEKEY | MDB_DUPSORT | MDB_INTEGERKEY | MDB_DUPFIXED | MDB_INTEGERDUP | MDB_REVERSEDUP)
                    try check(mdb_dbi_open(txn, db.name, UInt32(MDB_CREATE) | (db.flags & keep), &dbi), "mdb_dbi_open \(db.name)")
                    let append = UInt32(db.flags & UInt32(MDB_DUPSORT) != 0 ? MDB_APPENDDUP : MDB_APPEND)
                    try db.data.bytes.withUnsafeBytes { raw in
                        var cursor = ByteCursor(raw)
                        for _ in 0..<db.entries {
                            let (kp, kn) = cursor.blob()
                            let (vp, vn) = cursor.blob()
                            var k = MDB_val(mv_size: kn, mv_data: UnsafeMutableRawPointer(mutating: kp))
                            var v = MDB_val(mv_size: vn, mv_data: UnsafeMutableRawPointer(mutating: vp))
                            try check(mdb_put(txn, dbi, &k, &v, append), "mdb_put \(db.name)")
                        }
                    }
                }
                try check(mdb_txn_commit(txn), "mdb_txn_commit")
            } catch {
                mdb_txn_abort(txn)
                throw error
            }
        }
    }

    /// `mdb_get` of each key (8 ordered bytes of the primary key) in `database`, one read transaction each, as
    /// separate fetches by ID are; touches every byte of each value. Returns the hits.
    static func fetch(_ path: String, database: String, keys: [Int64]) throws -> Int {
        try withEnvironment(path, readOnly: true) { env in
            var dbi: MDB_dbi = 0
            var setup: OpaquePointer?
            try check(mdb_txn_begin(env, nil, UInt32(MDB_RDONLY), &setup), "mdb_txn_begin")
            try check(mdb_dbi_open(setup, database, 0, &dbi), "mdb_dbi_open \(database)")
            try check(mdb_txn_commit(setup), "mdb_txn_commit")
            var hits = 0
            var sum: UInt64 = 0
            for key in keys {
                var txn: OpaquePointer?
                try check(mdb_txn_begin(env, nil, UInt32(MDB_RDONLY), &txn), "mdb_txn_begin")
                var raw = orderedKey(key)
                var v = MDB_val()
                let rc = withUnsafeMutableBytes(of: &raw) { kb in
                    var k = MDB_val(mv_size: 8, mv_data: kb.baseAddress)
                    return mdb_get(txn, dbi, &k, &v)
                }
                if rc == 0 {
                    hits += 1
                    sum &+= touch(v.mv_data, v.mv_size)
                }
                mdb_txn_abort(txn)
            }
            return sum == 42 ? hits + 0 : hits
        }
    }

    /// Walks one database touching every byte (the least any unindexed filter over it must do). Returns entries.
    static func walk(_ path: String, database: String) throws -> Int {
        try withEnvironment(path, readOnly: true) { env in
            var txn: OpaquePointer?
            try check(mdb_txn_begin(env, nil, UInt32(MDB_RDONLY), &txn), "mdb_txn_begin")
            defer { mdb_txn_abort(txn) }
            var dbi: MDB_dbi = 0
            try check(mdb_dbi_open(txn, database, 0, &dbi), "mdb_dbi_open \(database)")
            var cursor: OpaquePointer?
            try check(mdb_cursor_open(txn, dbi, &cursor), "mdb_cursor_open")
            defer { mdb_cursor_close(cursor) }
            var k = MDB_val()
            var v = MDB_val()
            var op = MDB_FIRST
            var n = 0
            var sum: UInt64 = 0
            while mdb_cursor_get(cursor, &k, &v, op) == 0 {
                op = MDB_NEXT
                n += 1
                sum &+= touch(v.mv_data, v.mv_size)
            }
            return sum == 42 ? n + 0 : n
        }
    }

    /// The backend's key order: the sign bit flipped, big-endian.
    static func orderedKey(_ k: Int64) -> UInt64 { (UInt64(bitPattern: k) ^ 0x8000_0000_0000_0000).bigEndian }
}
