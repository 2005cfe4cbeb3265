import BenchSQLite
import Foundation

/// The SQLite reference: the same 8 columns written with a reused C prepared statement in one transaction, and
/// point reads by rowid — what a hand-written C program would do.
enum RawSQLite {
    private static let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    private static func check(_ rc: Int32, _ db: OpaquePointer?, _ what: String) throws {
        guard rc == SQLITE_OK || rc == SQLITE_DONE || rc == SQLITE_ROW else {
            throw Failure(description: "\(what): \(String(cString: sqlite3_errmsg(db)))")
        }
    }

    /// Inserts `count` rows (with a unique index on the UUID column when `uniqueRef`, as the store keeps on every
    /// global ID); returns CPU seconds.
    static func insert(at url: URL, count: Int, inputs: BenchData.Inputs, uniqueRef: Bool = false) throws -> Double {
        var db: OpaquePointer?
        // NOMUTEX, as our connections are: one thread, so the serialized default's per-call locking is waste.
        try check(sqlite3_open_v2(url.path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nil), db, "open")
        defer { sqlite3_close(db) }
        for sql in ["PRAGMA journal_mode=WAL", "PRAGMA synchronous=NORMAL",
                    "CREATE TABLE item(pk INTEGER PRIMARY KEY, number INTEGER, code INTEGER, price REAL, title TEXT, payload BLOB, created REAL, active INTEGER, ref BLOB)"]
            + (uniqueRef ? ["CREATE UNIQUE INDEX item_ref ON item(ref)"] : []) {
            try check(sqlite3_exec(db, sql, nil, nil, nil), db, sql)
        }
        var stmt: OpaquePointer?
        try check(sqlite3_prepare_v2(db, "INSERT INTO item VALUES (?,?,?,?,?,?,?,?,?)", -1, &stmt, nil), db, "prepare")
        defer { sqlite3_finalize(stmt) }
        let payload = BenchData.payload
        let (_, seconds) = try Measure.cpu { () throws -> Void in
            try check(sqlite3_exec(db, "BEGIN", nil, nil, nil), db, "begin")
            for i in 0..<count {
                sqlite3_bind_int64(stmt, 1, Int64(i + 1))
                sqlite3_bind_int64(stmt, 2, Int64(i))
                sqlite3_bind_int(stmt, 3, Int32(truncatingIfNeeded: i &* 7))
                sqlite3_bind_double(stmt, 4, Double(i) * 0.25)
                sqlite3_bind_text(stmt, 5, inputs.titles[i], -1, transient)
                payload.withUnsafeBytes { _ = sqlite3_bind_blob(stmt, 6, $0.baseAddress, Int32($0.count), transient) }
                sqlite3_bind_double(stmt, 7, Double(i))
                sqlite3_bind_int(stmt, 8, i % 2 == 0 ? 1 : 0)
                var uuid = inputs.refs[i].uuid
                withUnsafeBytes(of: &uuid) { _ = sqlite3_bind_blob(stmt, 9, $0.baseAddress, 16, transient) }
                try check(sqlite3_step(stmt), db, "insert")
                sqlite3_reset(stmt)
            }
            try check(sqlite3_exec(db, "COMMIT", nil, nil, nil), db, "commit")
        }
        return seconds
    }

    /// Reads the rows with these rowids one by one; returns seconds.
    static func fetch(at url: URL, rowids: [Int64]) throws -> Double {
        var db: OpaquePointer?
        // NOMUTEX, as our connections are: one thread, so the serialized default's per-call locking is waste.
        try check(sqlite3_open_v2(url.path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nil), db, "open")
        defer { sqlite3_close(db) }
        var stmt: OpaquePointer?
        try check(sqlite3_prepare_v2(db, "SELECT * FROM item WHERE pk = ?", -1, &stmt, nil), db, "prepare")
        defer { sqlite3_finalize(stmt) }
        var checksum: Int64 = 0
        let (_, seconds) = Measure.cpu {
            for id in rowids.shuffledDeterministically() {
                sqlite3_bind_int64(stmt, 1, id)
                if sqlite3_step(stmt) == SQLITE_ROW {
                    checksum &+= sqlite3_column_int64(stmt, 1)
                    _ = sqlite3_column_text(stmt, 4)
                    _ = sqlite3_column_blob(stmt, 5)
                    _ = sqlite3_column_bytes(stmt, 5)
                    _ = sqlite3_column_blob(stmt, 8)
                }
                sqlite3_reset(stmt)
            }
        }
        if checksum == 42 { print("") }
        return seconds
    }
}
