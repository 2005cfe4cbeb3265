import BenchSQLite
import Foundation
import LMDBBackend
import SQLiteBackend
import StoreAPI

/// What history tracking costs: a save of one record through a context with history tracking beside the same saves
/// without it; a read of a store's whole history beside the same history stored as JSON (how every store held it
/// before the binary encoding, and how stores written then still hold it); and the encoding itself beside
/// Foundation's JSON coders on the same transactions. Everything on one flat entity, in this process.
enum HistorySection {
    static func schema() throws -> Schema {
        try Schema(entities: [
            EntityDescription(name: "Item", attributes: [
                AttributeDescription(name: "name", type: .string), AttributeDescription(name: "n", type: .integer64),
            ]),
        ])
    }

    /// Returns false when a sanity check fails.
    static func run(changes: Int, saves: Int, runs: Int) throws -> Bool {
        let dir = try Measure.temporaryDirectory("history")
        defer { try? FileManager.default.removeItem(at: dir) }
        var ok = true
        var rows: [BenchRow] = []
        for type in ["sqlite", "lmdb"] {
            let (tracked, plain, found) = try saveLoops(type, saves: saves, runs: runs, in: dir)
            ok = found && ok
            rows.append(BenchRow(name: "save of 1 record, history tracked (\(type))", count: saves, ours: tracked, reference: plain,
                                 referenceName: "same saves without history", note: "goal: history adds little"))
        }
        let (read, json, same) = try historyRead(changes: changes, runs: runs, in: dir)
        ok = same && ok
        rows.append(BenchRow(name: "history read, \(changes) changes (sqlite)", count: changes, ours: read, reference: json,
                             referenceName: "same history stored as JSON", note: "the path before; old stores still read it"))
        rows += try codecRows(runs: runs)
        Report.print(rows, title: "history tracking, one flat entity")
        if !ok { print("history section: a save or a history read did not find what was written") }
        return ok
    }

    // MARK: Saves

    /// CPU seconds of `saves` single-record saves (best of `runs`) into a store with history tracking and into one
    /// without, alternating so that both see the same machine; and whether every save's record and (for the tracked
    /// store) transaction are there.
    static func saveLoops(_ type: String, saves: Int, runs: Int, in dir: URL) throws -> (Double, Double, Bool) {
        let schema = try schema()
        let coordinators = try [true, false].map { tracking in
            let coordinator = StoreCoordinator(schema: schema)
            let url = dir.appendingPathComponent("saves-\(tracking ? "tracked" : "plain").\(type)")
            try coordinator.addStore(StoreDescription(url: url, type: type, options: StoreOptions(historyTracking: tracking)))
            return coordinator
        }
        defer { for c in coordinators { for s in c.stores { try? c.removeStore(s) } } }
        var best = [Double.infinity, .infinity]
        for _ in 0..<runs {
            for (i, c) in coordinators.enumerated() {
                let context = c.newContext()
                let loop = i == 0 ? trackedSaves : plainSaves
                best[i] = min(best[i], try Measure.cpu { try loop(context, saves) }.1)
            }
        }
        let records = try coordinators.map { try $0.newContext().count(FetchRequest(entity: "Item")) }
        let transactions = try coordinators.map { c in try c.stores.first.map { try $0.store.history(after: nil).count } ?? -1 }
        let found = records == [saves * runs, saves * runs] && transactions == [saves * runs, 0]
        return (best[0], best[1], found)
    }

    /// Kept out of line, and apart, so a profiler can collect exactly the saves of each store
    /// (`valgrind --tool=callgrind --toggle-collect='*HistorySection*trackedSaves*'`).
    @inline(never)
    static func trackedSaves(_ context: StoreContext, _ saves: Int) throws { try saveLoop(context, saves) }

    @inline(never)
    static func plainSaves(_ context: StoreContext, _ saves: Int) throws { try saveLoop(context, saves) }

    static func saveLoop(_ context: StoreContext, _ saves: Int) throws {
        for n in 0..<saves {
            _ = try context.insert("Item", ["name": .string("item \(n)"), "n": .integer64(Int64(n))])
            try context.save()
        }
    }

    // MARK: Reading

    /// CPU seconds (best of `runs`) of reading a store's whole history, `changes` updates in transactions of 100,
    /// stored as the backend writes it and then, in a copy, as JSON; and whether both read the same.
    static func historyRead(changes: Int, runs: Int, in dir: URL) throws -> (Double, Double, Bool) {
        let perTransaction = 100
        let url = dir.appendingPathComponent("history.sqlite")
        let jsonURL = dir.appendingPathComponent("history-json.sqlite")
        let transactions = (0..<max(1, changes / perTransaction)).map { t in
            HistoryTransaction(
                token: HistoryTransaction.assignToken, timestamp: Date(timeIntervalSinceReferenceDate: 800_000_000 + Double(t)),
                author: "bench", contextName: "importer", processName: "storebench", bundleIdentifier: nil,
                changes: (0..<perTransaction).map { i in
                    HistoryChange(kind: .update, entity: "Item", primaryKey: Int64(t * perTransaction + i), globalID: UUID(),
                                  changedKeys: ["name", "n"])
                })
        }
        let backend = SQLiteStoreBackend()
        do {
            let store = try backend.open(at: url, options: StoreOptions(), creating: StoreMetadata(storeType: "sqlite", schema: try schema()))
            try store.save(StoreChanges(history: transactions))
            try store.close()
        }
        try FileManager.default.copyItem(at: url, to: jsonURL)
        let stored = try read(url, backend: backend, runs: 1).transactions
        try rewriteHistoryAsJSON(jsonURL, stored)
        let ours = try read(url, backend: backend, runs: runs)
        let json = try read(jsonURL, backend: backend, runs: runs)
        let same = ours.transactions == json.transactions && ours.transactions.count == transactions.count
        return (ours.seconds, json.seconds, same)
    }

    static func read(_ url: URL, backend: SQLiteStoreBackend, runs: Int) throws -> (transactions: [HistoryTransaction], seconds: Double) {
        let store = try backend.open(at: url, options: StoreOptions(isReadOnly: true, createIfMissing: false), creating: nil)
        defer { try? store.close() }
        var best = Double.infinity
        var transactions: [HistoryTransaction] = []
        for _ in 0..<runs {
            let (t, s) = try Measure.cpu { try store.history(after: nil) }
            transactions = t
            best = min(best, s)
        }
        return (transactions, best)
    }

    /// Replaces every history entry of a closed store with its JSON, as the framework wrote it before.
    static func rewriteHistoryAsJSON(_ url: URL, _ transactions: [HistoryTransaction]) throws {
        var db: OpaquePointer?
        defer { sqlite3_close(db) }
        func check(_ rc: Int32, _ what: String) throws {
            if rc != SQLITE_OK && rc != SQLITE_DONE { throw BenchFailure("\(what): \(String(cString: sqlite3_errmsg(db)))") }
        }
        try check(sqlite3_open_v2(url.path, &db, SQLITE_OPEN_READWRITE, nil), "open")
        var s: OpaquePointer?
        try check(sqlite3_prepare_v2(db, "UPDATE _storeapi_history SET json = ? WHERE token = ?", -1, &s, nil), "prepare")
        defer { sqlite3_finalize(s) }
        try check(sqlite3_exec(db, "BEGIN", nil, nil, nil), "begin")
        let encoder = JSONEncoder()
        for t in transactions {
            let json = try encoder.encode(t)
            _ = json.withUnsafeBytes { sqlite3_bind_blob(s, 1, $0.baseAddress, Int32($0.count), unsafeBitCast(-1, to: sqlite3_destructor_type.self)) }
            sqlite3_bind_int64(s, 2, t.token)
            try check(sqlite3_step(s), "update")
            sqlite3_reset(s)
        }
        try check(sqlite3_exec(db, "COMMIT", nil, nil, nil), "commit")
    }

    // MARK: Encoding

    /// The encoding of a one-record save's transaction and of a 1000-change one, each way, beside Foundation's
    /// JSON coders (what `encoded()` and `decode(_:url:)` used before) on the same transactions.
    static func codecRows(runs: Int) throws -> [BenchRow] {
        let one = HistoryTransaction(token: 7, timestamp: Date(), author: nil, processName: "storebench", changes: [
            HistoryChange(kind: .insert, entity: "Item", primaryKey: 7, globalID: UUID())])
        let many = HistoryTransaction(token: 8, timestamp: Date(), author: "sync", processName: "storebench",
                                      changes: (0..<1000).map {
                                          HistoryChange(kind: .update, entity: "Item", primaryKey: Int64($0), globalID: UUID(),
                                                        changedKeys: ["name", "n"])
                                      })
        var rows: [BenchRow] = []
        for (label, t, repeats) in [("1 change", one, 20_000), ("1000 changes", many, 20)] {
            let binary = try t.encoded()
            let json = try JSONEncoder().encode(t)
            func best(_ body: () throws -> Void) rethrows -> Double {
                var b = Double.infinity
                for _ in 0..<runs { b = min(b, try Measure.cpu { try body() }.1) }
                return b
            }
            let encoding = try best { try encodeBinary(t, repeats) }
            let encodingJSON = try best { try encodeJSON(t, repeats) }
            let decoding = try best { try decodeBinary(binary, repeats) }
            let decodingJSON = try best { try decodeJSON(json, repeats) }
            let size = "\(binary.count) bytes vs \(json.count) as JSON"
            rows.append(BenchRow(name: "encode a transaction of \(label)", count: repeats, ours: encoding, reference: encodingJSON,
                                 referenceName: "JSONEncoder", note: size))
            rows.append(BenchRow(name: "decode a transaction of \(label)", count: repeats, ours: decoding, reference: decodingJSON,
                                 referenceName: "JSONDecoder", note: size))
        }
        return rows
    }

    // Out of line, for the same reason as `trackedSaves`.
    @inline(never) static func encodeBinary(_ t: HistoryTransaction, _ n: Int) throws {
        for _ in 0..<n { _ = try t.encoded() }
    }

    @inline(never) static func encodeJSON(_ t: HistoryTransaction, _ n: Int) throws {
        for _ in 0..<n { _ = try JSONEncoder().encode(t) }
    }

    @inline(never) static func decodeBinary(_ data: Data, _ n: Int) throws {
        for _ in 0..<n { _ = try HistoryTransaction.decode(data, url: nil) }
    }

    @inline(never) static func decodeJSON(_ data: Data, _ n: Int) throws {
        for _ in 0..<n { _ = try JSONDecoder().decode(HistoryTransaction.self, from: data) }
    }
}
