import BenchLMDB
import Foundation
import LMDBBackend
import StoreAPI

/// The LMDB backend beside raw liblmdb, in the same run: bulk insert of `count` records through
/// `PersistentStore.save` (one save, so one transaction) against `mdb_put` of values of the same size in one
/// transaction, and fetch by primary key against `mdb_get`. Every figure is the median of `runs` runs (each on
/// fresh stores, ours then the reference's), so one disturbed run does not decide a ratio. Returns
/// false when a sanity check fails.
@discardableResult
func runLMDBBenchmark(count: Int, runs: Int) throws -> Bool {
    var samples: [LMDBRun] = []
    for _ in 0..<max(1, runs) { samples.append(try LMDBRun(count: count)) }
    func median(_ field: KeyPath<LMDBRun, Double>) -> Double { Measure.median(samples.map { $0[keyPath: field] }) }
    let first = samples[0]
    let note = runs > 1 ? ", median of \(runs) runs" : ""
    Report.print([
        BenchRow(name: "lmdb: insert through context", count: count, ours: median(\.contextInsert), reference: median(\.rawInsert),
                 referenceName: "mdb_put + MDB_APPEND, 1 txn", note: "saves of 10k; the store also indexes global IDs"),
        BenchRow(name: "lmdb: insert through context", count: count, ours: median(\.contextInsert), reference: median(\.rawIndexed),
                 referenceName: "same + sorted mdb_put of each UUID", note: "the store indexes every global ID"),
        BenchRow(name: "lmdb: batch insert through context", count: count, ours: median(\.batchInsert), reference: median(\.rawIndexed),
                 referenceName: "mdb_put + sorted UUID puts, 1 txn", note: "insertBatch: 1 save, no objects"),
        BenchRow(name: "lmdb: batch insert, rows from a closure", count: count, ours: median(\.batchRowsInsert), reference: median(\.rawIndexed),
                 referenceName: "mdb_put + sorted UUID puts, 1 txn", note: "insertBatch(count:row:): no row dictionaries"),
        BenchRow(name: "lmdb: fetch by object ID", count: first.contextSample, ours: median(\.contextFetch), reference: median(\.rawContextFetch),
                 referenceName: "mdb_get, one read txn each"),
        BenchRow(name: "lmdb: insert through save (1 save)", count: count, ours: median(\.oursInsert), reference: median(\.rawInsert),
                 referenceName: "mdb_put + MDB_APPEND, 1 txn", note: "\(first.valueSize) B/record"),
        BenchRow(name: "lmdb: fetch by key, one call each", count: first.sample, ours: median(\.oursGetEach), reference: median(\.rawGetEach),
                 referenceName: "mdb_get, one read txn each"),
        BenchRow(name: "lmdb: fetch by key, one call", count: first.sample, ours: median(\.oursGetBatch), reference: median(\.rawGetBatch),
                 referenceName: "mdb_get, one read txn"),
    ], title: "LMDB, \(count) records\(note)")

    var ok = true
    for run in samples {
        for (what, got, expected) in run.checks where got != expected {
            print("error: \(what): \(got), expected \(expected)")
            ok = false
        }
    }
    return ok
}

/// One run of every LMDB measurement, on stores of its own (CPU seconds).
private struct LMDBRun {
    var contextInsert = 0.0, batchInsert = 0.0, batchRowsInsert = 0.0, contextFetch = 0.0, oursInsert = 0.0, oursGetEach = 0.0, oursGetBatch = 0.0
    var rawInsert = 0.0, rawIndexed = 0.0, rawGetEach = 0.0, rawGetBatch = 0.0, rawContextFetch = 0.0
    /// Sizes of the samples fetched, and the stored bytes per record.
    var contextSample = 0, sample = 0, valueSize = 0
    /// What was counted against what was expected.
    var checks: [(String, Int, Int)] = []

    init(count: Int) throws {
        let dir = try Measure.temporaryDirectory("lmdb")
        defer { try? FileManager.default.removeItem(at: dir) }
        let schema = try BenchData.schema()
        let item = try schema.requireEntity("Item")
        let oursURL = dir.appendingPathComponent("ours.lmdb")
        let rawURL = dir.appendingPathComponent("raw.lmdb")

        // Records are built before timing: the figure is the store's work, not the benchmark's.
        var records: [Record] = []
        records.reserveCapacity(count)
        let inputs = BenchData.Inputs(count: count)
        for i in 0..<count {
            var r = item.newRecord(primaryKey: Int64(i + 1))
            for (name, value) in BenchData.values(i, inputs) {
                if let a = item.attributeIndex(name) { r.attributes[a] = value }
            }
            records.append(r)
        }

        // What an application does: insert through a context (values as a dictionary, saves of 10,000), then fetch
        // by object ID — on a store of its own, opened and closed before the store-API figures below.
        let contextDescription = StoreDescription(url: dir.appendingPathComponent("context.lmdb"), type: "lmdb")
        let (contextInsert, contextSample) = try ContextBench.insert(into: contextDescription, count: count, inputs: inputs)
        self.contextInsert = contextInsert
        self.contextSample = contextSample.count
        contextFetch = try ContextBench.fetchByID(contextDescription, ids: contextSample)
        let (batchInsert, batchStored) = try ContextBench.insertBatch(
            into: StoreDescription(url: dir.appendingPathComponent("batch.lmdb"), type: "lmdb"), count: count, inputs: inputs)
        self.batchInsert = batchInsert
        let (batchRowsInsert, batchRowsStored) = try ContextBench.insertBatchRows(
            into: StoreDescription(url: dir.appendingPathComponent("batch-rows.lmdb"), type: "lmdb"), count: count, inputs: inputs)
        self.batchRowsInsert = batchRowsInsert

        let backend = LMDBStoreBackend()
        let options = StoreOptions(backend: ["lmdb.mapSize": "1G"])
        let store = try backend.open(at: oursURL, options: options, creating: StoreMetadata(storeType: "lmdb", schema: schema))
        (_, oursInsert) = try Measure.cpu { try store.save(StoreChanges(inserted: records)) }
        records = []

        var generator = SystemRandomNumberGenerator()
        let keys = (0..<min(count, 100_000)).map { _ in Int64.random(in: 1...Int64(count), using: &generator) }
        sample = keys.count
        let (oneByOne, oursGetEach) = try Measure.cpu { try keys.reduce(0) { $0 + (try store.records(withKeys: [$1], root: "Item").count) } }
        let (batch, oursGetBatch) = try Measure.cpu { try store.records(withKeys: keys, root: "Item").count }
        (self.oursGetEach, self.oursGetBatch) = (oursGetEach, oursGetBatch)
        try store.close()

        // The size of what the store wrote per record, read with liblmdb once the store is closed (never two
        // handles on one environment in a process).
        let (stored, valueBytes) = try RawLMDBBench.measure(oursURL, database: "records:Item")
        valueSize = valueBytes / max(1, stored)
        rawInsert = try RawLMDBBench.insert(at: rawURL, count: count, valueSize: max(1, valueSize))
        rawIndexed = try RawLMDBBench.insert(at: dir.appendingPathComponent("raw-indexed.lmdb"), count: count,
                                             valueSize: max(1, valueSize), globalIDIndex: true)
        let (rawEach, rawGetEach) = try RawLMDBBench.get(at: rawURL, keys: keys, transactionPerKey: true)
        let (rawBatch, rawGetBatch) = try RawLMDBBench.get(at: rawURL, keys: keys, transactionPerKey: false)
        (self.rawGetEach, self.rawGetBatch) = (rawGetEach, rawGetBatch)
        (_, rawContextFetch) = try RawLMDBBench.get(at: rawURL, keys: contextSample.map { $0.primaryKey }, transactionPerKey: true)

        checks = [("stored records", stored, count), ("batch-inserted records", batchStored, count), ("batch-inserted rows", batchRowsStored, count),
                  ("fetched one by one", oneByOne, keys.count), ("fetched in one call", batch, keys.count),
                  ("raw gets", rawEach, keys.count), ("raw gets in one txn", rawBatch, keys.count)]
    }
}

/// liblmdb used directly, as the reference the backend is measured against.
private enum RawLMDBBench {
    struct Failure: Error, CustomStringConvertible {
        let code: Int32
        let what: String
        var description: String { "\(what): \(String(cString: mdb_strerror(code)))" }
    }

    static func check(_ rc: Int32, _ what: String) throws {
        if rc != 0 { throw Failure(code: rc, what: what) }
    }

    static func withEnvironment<T>(_ url: URL, readOnly: Bool, _ body: (OpaquePointer) throws -> T) throws -> T {
        var env: OpaquePointer?
        try check(mdb_env_create(&env), "mdb_env_create")
        defer { mdb_env_close(env) }
        try check(mdb_env_set_maxdbs(env, 64), "mdb_env_set_maxdbs")
        try check(mdb_env_set_mapsize(env, 1 << 30), "mdb_env_set_mapsize")
        try check(mdb_env_open(env, url.path, UInt32(MDB_NOTLS) | (readOnly ? UInt32(MDB_RDONLY) : 0), 0o644), "mdb_env_open")
        guard let env else { throw Failure(code: EINVAL, what: "mdb_env_create") }
        return try body(env)
    }

    static func key(_ k: Int64) -> UInt64 { (UInt64(bitPattern: k) ^ 0x8000_0000_0000_0000).bigEndian }

    /// Entries and total value bytes of a named database.
    static func measure(_ url: URL, database: String) throws -> (Int, Int) {
        try withEnvironment(url, readOnly: true) { env in
            var txn: OpaquePointer?
            try check(mdb_txn_begin(env, nil, UInt32(MDB_RDONLY), &txn), "mdb_txn_begin")
            defer { mdb_txn_abort(txn) }
            var dbi: MDB_dbi = 0
            try check(mdb_dbi_open(txn, database, 0, &dbi), "mdb_dbi_open")
            var cursor: OpaquePointer?
            try check(mdb_cursor_open(txn, dbi, &cursor), "mdb_cursor_open")
            defer { mdb_cursor_close(cursor) }
            var k = MDB_val()
            var v = MDB_val()
            var entries = 0
            var bytes = 0
            var op = MDB_FIRST
            while mdb_cursor_get(cursor, &k, &v, op) == 0 {
                entries += 1
                bytes += v.mv_size
                op = MDB_NEXT
            }
            return (entries, bytes)
        }
    }

    /// `count` puts of `valueSize`-byte values under ascending 8-byte keys, in one transaction. With
    /// `globalIDIndex`, each record also gets a put of a random 16-byte UUID key (made before the clock starts)
    /// to its 8-byte key in a second database — the index on global IDs every store keeps — sorted and appended.
    static func insert(at url: URL, count: Int, valueSize: Int, globalIDIndex: Bool = false) throws -> Double {
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: false)
        return try withEnvironment(url, readOnly: false) { env in
            var value = [UInt8](repeating: 0x5A, count: valueSize)
            let uuids = globalIDIndex ? (0..<count).map { _ in UUID().uuid } : []
            let (_, seconds) = try Measure.cpu {
                var txn: OpaquePointer?
                try check(mdb_txn_begin(env, nil, 0, &txn), "mdb_txn_begin")
                var dbi: MDB_dbi = 0
                try check(mdb_dbi_open(txn, "records", UInt32(MDB_CREATE), &dbi), "mdb_dbi_open")
                var indexDBI: MDB_dbi = 0
                if globalIDIndex { try check(mdb_dbi_open(txn, "globalIDs", UInt32(MDB_CREATE), &indexDBI), "mdb_dbi_open") }
                for i in 0..<count {
                    var k = key(Int64(i + 1))
                    value[0] = UInt8(truncatingIfNeeded: i)
                    let rc = withUnsafeMutableBytes(of: &k) { kb in
                        value.withUnsafeMutableBytes { vb in
                            var kv = MDB_val(mv_size: 8, mv_data: kb.baseAddress)
                            var vv = MDB_val(mv_size: vb.count, mv_data: vb.baseAddress)
                            return mdb_put(txn, dbi, &kv, &vv, UInt32(MDB_APPEND))
                        }
                    }
                    if rc != 0 {
                        mdb_txn_abort(txn)
                        try check(rc, "mdb_put")
                    }
                }
                if globalIDIndex {
                    // In key order, as a careful engine user would put them: random UUIDs put as they come touch
                    // every leaf of the index.
                    // (The UUID's bytes as two big-endian words: comparing those is comparing the bytes.)
                    var pairs = uuids.enumerated().map { i, u in
                        withUnsafeBytes(of: u) { b in
                            (hi: UInt64(bigEndian: b.loadUnaligned(as: UInt64.self)),
                             lo: UInt64(bigEndian: b.loadUnaligned(fromByteOffset: 8, as: UInt64.self)),
                             uuid: u, key: key(Int64(i + 1)))
                        }
                    }
                    pairs.sort { ($0.hi, $0.lo) < ($1.hi, $1.lo) }
                    for pair in pairs {
                        var (uuid, k) = (pair.uuid, pair.key)
                        let rc = withUnsafeMutableBytes(of: &uuid) { ub in
                            withUnsafeMutableBytes(of: &k) { kb in
                                var kv = MDB_val(mv_size: 16, mv_data: ub.baseAddress)
                                var vv = MDB_val(mv_size: 8, mv_data: kb.baseAddress)
                                return mdb_put(txn, indexDBI, &kv, &vv, UInt32(MDB_APPEND))
                            }
                        }
                        if rc != 0 {
                            mdb_txn_abort(txn)
                            try check(rc, "mdb_put")
                        }
                    }
                }
                try check(mdb_txn_commit(txn), "mdb_txn_commit")
            }
            return seconds
        }
    }

    /// Gets of `keys`, each in its own read transaction or all in one; returns the hits and the seconds.
    static func get(at url: URL, keys: [Int64], transactionPerKey: Bool) throws -> (Int, Double) {
        try withEnvironment(url, readOnly: true) { env in
            var dbi: MDB_dbi = 0
            var setup: OpaquePointer?
            try check(mdb_txn_begin(env, nil, UInt32(MDB_RDONLY), &setup), "mdb_txn_begin")
            try check(mdb_dbi_open(setup, "records", 0, &dbi), "mdb_dbi_open")
            try check(mdb_txn_commit(setup), "mdb_txn_commit")
            var hits = 0
            var checksum = 0
            let (_, seconds) = try Measure.cpu {
                var txn: OpaquePointer?
                if !transactionPerKey { try check(mdb_txn_begin(env, nil, UInt32(MDB_RDONLY), &txn), "mdb_txn_begin") }
                for k in keys {
                    if transactionPerKey { try check(mdb_txn_begin(env, nil, UInt32(MDB_RDONLY), &txn), "mdb_txn_begin") }
                    var raw = key(k)
                    var v = MDB_val()
                    let rc = withUnsafeMutableBytes(of: &raw) { kb in
                        var kv = MDB_val(mv_size: 8, mv_data: kb.baseAddress)
                        return mdb_get(txn, dbi, &kv, &v)
                    }
                    if rc == 0 {
                        hits += 1
                        // Touch the value, as decoding a record would.
                        checksum &+= Int(v.mv_data.load(as: UInt8.self))
                    }
                    if transactionPerKey { mdb_txn_abort(txn) }
                }
                if !transactionPerKey { mdb_txn_abort(txn) }
            }
            if checksum == -1 { print("") }
            return (hits, seconds)
        }
    }
}
