import BenchSQLite
import Foundation
import SQLiteBackend
import StoreAPI

/// The SQLite backend's own store API (``PersistentStore``), without a context: bulk insert through `save`, point
/// reads through `records(withKeys:root:)`, and a full `scan` — each beside raw C prepared statements on the same
/// 8-column shape (``RawSQLite``), measured in the same run. Returns false when a sanity check fails.
func runSQLiteBenchmark(count: Int) throws -> Bool {
    try SQLiteStoreBench(count: count).run()
}

private struct SQLiteStoreBench {
    let count: Int
    /// Records per save, as the transfer engine pages through a source.
    let batch = 10_000

    func run() throws -> Bool {
        let dir = try Measure.temporaryDirectory("sqlite-store")
        defer { try? FileManager.default.removeItem(at: dir) }
        let schema = try BenchData.schema()
        let entity = try schema.requireEntity("Item")
        let url = dir.appendingPathComponent("ours.sqlite")
        let rawURL = dir.appendingPathComponent("raw.sqlite")

        // Values are generated before any clock starts (Foundation's UUID() and padding cost more than the
        // inserts), so both sides time only the database work.
        let values = Self.Values(count: count)
        let rawInsert = try Self.rawInsert(at: rawURL, values, uniqueRef: false)
        let rawIndexed = try Self.rawInsert(at: dir.appendingPathComponent("raw-indexed.sqlite"), values, uniqueRef: true)

        let store = try SQLiteStoreBackend().open(
            at: url, options: StoreOptions(), creating: StoreMetadata(storeType: "sqlite", schema: schema))
        defer { try? store.close() }
        let first = try store.allocatePrimaryKeys(root: "Item", count: count)
        var saveSeconds = 0.0
        var start = 0
        while start < count {
            let n = min(batch, count - start)
            let records = (start..<(start + n)).map { i in values.record(entity, i, primaryKey: first + Int64(i)) }
            let (_, s) = try Measure.cpu { try store.save(StoreChanges(inserted: records)) }
            saveSeconds += s
            start += n
        }

        let sampleSize = min(count, 10_000)
        let step = max(1, count / sampleSize)
        let keys = (0..<sampleSize).map { first + Int64($0 * step) }
        let rawFetch = try RawSQLite.fetch(at: rawURL, rowids: keys.map { $0 - first + 1 })
        var found = 0
        let (_, fetchSeconds) = try Measure.cpu {
            for k in keys.shuffledDeterministically() {
                found += try store.records(withKeys: [k], root: "Item").count
            }
        }

        var scanned = 0
        let (_, scanSeconds) = try Measure.cpu {
            var after: Int64?
            while true {
                let page = try store.scan(entity: "Item", after: after, limit: 1000)
                guard let last = page.last else { break }
                scanned += page.count
                after = last.primaryKey
            }
        }
        let rawScan = try Self.rawScan(rawURL)

        Report.print([
            BenchRow(name: "sqlite store: save (batches of \(batch))", count: count, ours: saveSeconds, reference: rawInsert,
                     referenceName: "sqlite3 C prepared INSERT, 1 txn"),
            BenchRow(name: "sqlite store: save (batches of \(batch))", count: count, ours: saveSeconds, reference: rawIndexed,
                     referenceName: "same + UNIQUE index on the UUID",
                     note: "the store indexes every global ID"),
            BenchRow(name: "sqlite store: records(withKeys:) one key", count: sampleSize, ours: fetchSeconds, reference: rawFetch,
                     referenceName: "sqlite3 C SELECT by rowid"),
            BenchRow(name: "sqlite store: scan, pages of 1000", count: count, ours: scanSeconds, reference: rawScan,
                     referenceName: "sqlite3 C SELECT * (all columns)"),
        ], title: "SQLite store API, \(count) records")
        var ok = true
        if found != sampleSize {
            print("error: fetched \(found) of \(sampleSize) sampled records")
            ok = false
        }
        if scanned != count {
            print("error: scanned \(scanned) records, expected \(count)")
            ok = false
        }
        return ok
    }

    /// The rows' values, generated once.
    struct Values {
        let titles: [String]
        let refs: [UUID]

        init(count: Int) {
            titles = (0..<count).map { BenchData.title($0) }
            refs = (0..<count).map { _ in UUID() }
        }

        func record(_ entity: Entity, _ i: Int, primaryKey: Int64) -> Record {
            var r = entity.newRecord(primaryKey: primaryKey)
            let v: [String: StoreValue] = [
                "number": .integer64(Int64(i)), "code": .integer32(Int32(truncatingIfNeeded: i &* 7)),
                "price": .double(Double(i) * 0.25), "title": .string(titles[i]), "payload": .binary(BenchData.payload),
                "created": .date(Date(timeIntervalSinceReferenceDate: Double(i))), "active": .boolean(i % 2 == 0),
                "ref": .uuid(refs[i]),
            ]
            for (name, value) in v {
                if let index = entity.attributeIndex(name) { r.attributes[index] = value }
            }
            return r
        }
    }

    /// The reference insert: ``RawSQLite``'s table and statement, with pre-generated values, optionally with a
    /// unique index on the UUID column (as the store has on every global ID); returns seconds.
    static func rawInsert(at url: URL, _ values: Values, uniqueRef: Bool) throws -> Double {
        var db: OpaquePointer?
        func check(_ rc: Int32, _ what: String) throws {
            guard rc == SQLITE_OK || rc == SQLITE_DONE || rc == SQLITE_ROW else {
                throw RawSQLite.Failure(description: "\(what): \(String(cString: sqlite3_errmsg(db)))")
            }
        }
        try check(sqlite3_open(url.path, &db), "open")
        defer { sqlite3_close(db) }
        var setup = ["PRAGMA journal_mode=WAL", "PRAGMA synchronous=NORMAL",
                     "CREATE TABLE item(pk INTEGER PRIMARY KEY, number INTEGER, code INTEGER, price REAL, title TEXT, payload BLOB, created REAL, active INTEGER, ref BLOB)"]
        if uniqueRef { setup.append("CREATE UNIQUE INDEX item_ref ON item(ref)") }
        for sql in setup { try check(sqlite3_exec(db, sql, nil, nil, nil), sql) }
        var stmt: OpaquePointer?
        try check(sqlite3_prepare_v2(db, "INSERT INTO item VALUES (?,?,?,?,?,?,?,?,?)", -1, &stmt, nil), "prepare")
        defer { sqlite3_finalize(stmt) }
        let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)
        let payload = BenchData.payload
        let (_, seconds) = try Measure.cpu {
            try check(sqlite3_exec(db, "BEGIN", nil, nil, nil), "begin")
            for i in 0..<values.titles.count {
                sqlite3_bind_int64(stmt, 1, Int64(i + 1))
                sqlite3_bind_int64(stmt, 2, Int64(i))
                sqlite3_bind_int(stmt, 3, Int32(truncatingIfNeeded: i &* 7))
                sqlite3_bind_double(stmt, 4, Double(i) * 0.25)
                var title = values.titles[i]
                title.withUTF8 { buf in
                    buf.withMemoryRebound(to: CChar.self) { _ = sqlite3_bind_text(stmt, 5, $0.baseAddress, Int32($0.count), transient) }
                }
                payload.withUnsafeBytes { _ = sqlite3_bind_blob(stmt, 6, $0.baseAddress, Int32($0.count), transient) }
                sqlite3_bind_double(stmt, 7, Double(i))
                sqlite3_bind_int(stmt, 8, i % 2 == 0 ? 1 : 0)
                var uuid = values.refs[i].uuid
                withUnsafeBytes(of: &uuid) { _ = sqlite3_bind_blob(stmt, 9, $0.baseAddress, 16, transient) }
                try check(sqlite3_step(stmt), "insert")
                sqlite3_reset(stmt)
            }
            try check(sqlite3_exec(db, "COMMIT", nil, nil, nil), "commit")
        }
        return seconds
    }

    /// Reads every row and column of the raw table; returns seconds.
    static func rawScan(_ url: URL) throws -> Double {
        var db: OpaquePointer?
        guard sqlite3_open(url.path, &db) == SQLITE_OK else {
            sqlite3_close(db)
            throw RawSQLite.Failure(description: "open \(url.path)")
        }
        defer { sqlite3_close(db) }
        var stmt: OpaquePointer?
        guard sqlite3_prepare_v2(db, "SELECT * FROM item ORDER BY pk", -1, &stmt, nil) == SQLITE_OK else {
            throw RawSQLite.Failure(description: String(cString: sqlite3_errmsg(db)))
        }
        defer { sqlite3_finalize(stmt) }
        var checksum = 0
        let (_, seconds) = Measure.cpu {
            while sqlite3_step(stmt) == SQLITE_ROW {
                checksum &+= Int(sqlite3_column_int64(stmt, 1))
                checksum &+= Int(sqlite3_column_double(stmt, 3))
                checksum &+= Int(sqlite3_column_bytes(stmt, 4))
                _ = sqlite3_column_text(stmt, 4)
                _ = sqlite3_column_blob(stmt, 5)
                checksum &+= Int(sqlite3_column_bytes(stmt, 5))
                checksum &+= Int(sqlite3_column_double(stmt, 6))
                checksum &+= Int(sqlite3_column_int64(stmt, 7))
                _ = sqlite3_column_blob(stmt, 8)
            }
        }
        if checksum == 42 { print("") }
        return seconds
    }
}
