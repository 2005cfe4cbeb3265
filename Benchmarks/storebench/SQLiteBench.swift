import CSQLite
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

        let rawInsert = try RawSQLite.insert(at: rawURL, count: count)

        let store = try SQLiteStoreBackend().open(
            at: url, options: StoreOptions(), creating: StoreMetadata(storeType: "sqlite", schema: schema))
        defer { try? store.close() }
        let first = try store.allocatePrimaryKeys(root: "Item", count: count)
        var saveSeconds = 0.0
        var start = 0
        while start < count {
            let n = min(batch, count - start)
            let records = (start..<(start + n)).map { i in Self.record(entity, i, primaryKey: first + Int64(i)) }
            let (_, s) = try Measure.time { try store.save(StoreChanges(inserted: records)) }
            saveSeconds += s
            start += n
        }

        let sampleSize = min(count, 10_000)
        let step = max(1, count / sampleSize)
        let keys = (0..<sampleSize).map { first + Int64($0 * step) }
        let rawFetch = try RawSQLite.fetch(at: rawURL, rowids: keys.map { $0 - first + 1 })
        var found = 0
        let (_, fetchSeconds) = try Measure.time {
            for k in keys.shuffledDeterministically() {
                found += try store.records(withKeys: [k], root: "Item").count
            }
        }

        var scanned = 0
        let (_, scanSeconds) = try Measure.time {
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

    static func record(_ entity: Entity, _ i: Int, primaryKey: Int64) -> Record {
        var r = entity.newRecord(primaryKey: primaryKey)
        for (name, value) in BenchData.values(i) {
            if let index = entity.attributeIndex(name) { r.attributes[index] = value }
        }
        return r
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
        let (_, seconds) = Measure.time {
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
