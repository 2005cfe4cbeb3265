import Foundation
import GRDB
import StoreAPI
import StoreModels
import Synchronization

/// GRDB's performance-test record (10 integers), as a typed model.
@Model struct TypedItem {
    var i0: Int
    var i1: Int
    var i2: Int
    var i3: Int
    var i4: Int
    var i5: Int
    var i6: Int
    var i7: Int
    var i8: Int
    var i9: Int

    init(_ n: Int, of count: Int) {
        let v = TypedSection.values(n, of: count)
        (i0, i1, i2, i3, i4, i5, i6, i7, i8, i9) = (v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8], v[9])
    }
}

/// The same record as GRDB's Codable record.
struct GRDBItem: Codable, FetchableRecord, PersistableRecord {
    static let databaseTableName = "item"
    var i0: Int
    var i1: Int
    var i2: Int
    var i3: Int
    var i4: Int
    var i5: Int
    var i6: Int
    var i7: Int
    var i8: Int
    var i9: Int

    init(_ n: Int, of count: Int) {
        let v = TypedSection.values(n, of: count)
        (i0, i1, i2, i3, i4, i5, i6, i7, i8, i9) = (v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8], v[9])
    }
}

/// The typed model layer (StoreModels) beside GRDB 7 — the library an app developer would pick instead — on the
/// same SQLite library and the pragmas our SQLite store sets, and beside our own untyped context (what the typed
/// layer adds). GRDB's own performance tests: insert 50 000 records of 10 integers, fetch 200 000.
enum TypedSection {
    /// Row `n`'s ten integers: `i0` counts up, `i2` is a permutation (so `i2 < count / 100` is 1 %), the rest vary.
    static func values(_ n: Int, of count: Int) -> [Int] {
        [n, (n &* 7) % 1000, (n &* 7919) % max(count, 1), n % 10, n % 100, n &* 3, n &* 5, n % 7, -n, 42]
    }

    static func run(insertCount: Int, fetchCount: Int, runs: Int) throws -> Bool {
        let dir = try Measure.temporaryDirectory("typed")
        defer { try? FileManager.default.removeItem(at: dir) }
        var ok = true
        var rows: [BenchRow] = []

        // Insert: one write of insertCount records, best of `runs`, each into a new store.
        var typed: [Double] = [], untyped: [Double] = [], grdb: [Double] = []
        for r in 0..<runs {
            let models = (0..<insertCount).map { TypedItem($0, of: insertCount) }
            let db = try openTyped(dir.appendingPathComponent("typed-insert-\(r).sqlite"))
            let (_, t) = try Measure.cpu { try blocking { try await db.write { tx in for m in models { try tx.insert(m) } } } }
            typed.append(t)
            ok = try blocking { try await db.read { try $0.count(TypedItem.self) } } == insertCount && ok
            try db.close()

            let coordinator = StoreCoordinator(schema: try Schema(models: [TypedItem.self]))
            try coordinator.addStore(StoreDescription(url: dir.appendingPathComponent("untyped-insert-\(r).sqlite"), type: "sqlite"))
            let names = (0..<10).map { "i\($0)" }
            let dictionaries = (0..<insertCount).map { n in
                Dictionary(uniqueKeysWithValues: zip(names, values(n, of: insertCount).map { StoreValue.integer64(Int64($0)) }))
            }
            let (_, u) = try Measure.cpu {
                let context = coordinator.newContext()
                for d in dictionaries { try context.insert("TypedItem", d) }
                try context.save()
            }
            untyped.append(u)
            for s in coordinator.stores { try coordinator.removeStore(s) }

            let pool = try openGRDB(dir.appendingPathComponent("grdb-insert-\(r).sqlite"))
            let records = (0..<insertCount).map { GRDBItem($0, of: insertCount) }
            let (_, g) = try Measure.cpu { try blocking { try await pool.write { db in for rec in records { try rec.insert(db) } } } }
            grdb.append(g)
            try pool.close()
        }
        rows.append(BenchRow(name: "typed insert, 1 write", count: insertCount, ours: typed.min() ?? 0, reference: grdb.min(),
                             referenceName: "GRDB Codable record insert, 1 write"))
        rows.append(BenchRow(name: "typed insert, 1 write", count: insertCount, ours: typed.min() ?? 0, reference: untyped.min(),
                             referenceName: "our context insert + save", note: "what the typed layer adds"))

        // Fetch: every record, then 1 % by a predicate, sorted.
        let db = try openTyped(dir.appendingPathComponent("typed-fetch.sqlite"))
        let models = (0..<fetchCount).map { TypedItem($0, of: fetchCount) }
        try blocking { try await db.write { tx in for m in models { try tx.insert(m) } } }
        let pool = try openGRDB(dir.appendingPathComponent("grdb-fetch.sqlite"))
        let records = (0..<fetchCount).map { GRDBItem($0, of: fetchCount) }
        try blocking { try await pool.write { db in for rec in records { try rec.insert(db) } } }

        let threshold = fetchCount / 100
        var typedAll: [Double] = [], untypedAll: [Double] = [], grdbAll: [Double] = []
        var typedSome: [Double] = [], grdbSome: [Double] = []
        var typedSorted: [Double] = [], grdbSorted: [Double] = []
        for _ in 0..<runs {
            let (all, t) = try Measure.cpu { try blocking { try await db.read { try $0.fetch(TypedItem.self) } } }
            typedAll.append(t)
            ok = all.count == fetchCount && ok
            let (objects, u) = try Measure.cpu {
                let context = db.coordinator.newContext()
                return try context.fetch(FetchRequest(entity: "TypedItem")).map { try $0.value(forKey: "i0") }
            }
            untypedAll.append(u)
            ok = objects.count == fetchCount && ok
            let (theirs, g) = try Measure.cpu { try blocking { try await pool.read { try GRDBItem.fetchAll($0) } } }
            grdbAll.append(g)
            ok = theirs.count == fetchCount && ok

            let (some, ts) = try Measure.cpu {
                try blocking { try await db.read { try $0.fetch(TypedItem.self, where: \.i2 < threshold, sortedBy: [.ascending(\.i1), .ascending(\.i0)]) } }
            }
            typedSome.append(ts)
            let (theirSome, gs) = try Measure.cpu {
                try blocking { try await pool.read { try GRDBItem.filter(Column("i2") < threshold).order(Column("i1"), Column("i0")).fetchAll($0) } }
            }
            grdbSome.append(gs)
            ok = some.count == threshold && some.map(\.i0) == theirSome.map(\.i0) && ok

            let (sorted, tsorted) = try Measure.cpu {
                try blocking { try await db.read { try $0.fetch(TypedItem.self, sortedBy: [.descending(\.i3), .ascending(\.i1)]) } }
            }
            typedSorted.append(tsorted)
            let (theirSorted, gsorted) = try Measure.cpu {
                try blocking { try await pool.read { try GRDBItem.order(Column("i3").desc, Column("i1")).fetchAll($0) } }
            }
            grdbSorted.append(gsorted)
            ok = sorted.count == fetchCount && zip(sorted, theirSorted).allSatisfy { $0.i3 == $1.i3 && $0.i1 == $1.i1 } && ok
        }
        rows.append(BenchRow(name: "typed fetch, every record", count: fetchCount, ours: typedAll.min() ?? 0, reference: grdbAll.min(),
                             referenceName: "GRDB Codable fetchAll"))
        rows.append(BenchRow(name: "typed fetch, every record", count: fetchCount, ours: typedAll.min() ?? 0, reference: untypedAll.min(),
                             referenceName: "our context fetch + 1 value each", note: "what the typed layer adds (or saves)"))
        rows.append(BenchRow(name: "typed fetch, 1 % by predicate, sorted", count: threshold, ours: typedSome.min() ?? 0,
                             reference: grdbSome.min(), referenceName: "GRDB filter + order fetchAll",
                             note: "a scan on both sides; ours sorts the matches in memory, GRDB in SQLite's sorter; our rows also hold the 16-byte global ID"))
        rows.append(BenchRow(name: "typed fetch, every record, sorted", count: fetchCount, ours: typedSorted.min() ?? 0,
                             reference: grdbSorted.min(), referenceName: "GRDB order fetchAll",
                             note: "by two keys with many ties (i3 descending, i1)"))

        // Observation round trip: a write, then the observer's next emission, `trips` times.
        let trips = max(20, min(200, insertCount / 50))
        let (oursTrip, theirsTrip) = try blocking {
            let ours = try await observationRoundTrips(db, trips: trips)
            let theirs = try await grdbObservationRoundTrips(pool, trips: trips)
            return (ours, theirs)
        }
        rows.append(BenchRow(name: "observation round trip (write → seen)", count: trips, ours: oursTrip, reference: theirsTrip,
                             referenceName: "GRDB ValueObservation", note: "wall seconds; GRDB re-fetches (a scan of every record), ours reads back what the write names"))
        try db.close()
        try pool.close()
        Report.print(rows, title: "typed models (StoreModels) beside GRDB \(grdbVersion), sqlite")
        if !ok { print("typed section: a result differs from what was inserted or from GRDB's") }
        return ok
    }

    static let grdbVersion = "7.10.0"

    static func openTyped(_ url: URL) throws -> ModelStore {
        try ModelStore(for: [TypedItem.self], at: url, type: "sqlite")
    }

    /// A GRDB pool (WAL) with the pragmas our SQLite store sets on its connections.
    static func openGRDB(_ url: URL) throws -> DatabasePool {
        var config = Configuration()
        config.prepareDatabase { db in
            try db.execute(sql: "PRAGMA synchronous = NORMAL; PRAGMA cache_size = -65536; PRAGMA wal_autocheckpoint = 8192")
        }
        let pool = try DatabasePool(path: url.path, configuration: config)
        try pool.write { db in
            try db.create(table: "item") { t in
                t.autoIncrementedPrimaryKey("id")
                for i in 0..<10 { t.column("i\(i)", .integer).notNull() }
            }
        }
        return pool
    }

    private static func observationRoundTrips(_ db: ModelStore, trips: Int) async throws -> Double {
        var changes = db.observe(TypedItem.self, where: \.i8 > 0, sortedBy: [.ascending(\.i0)]).makeAsyncIterator()
        _ = try await changes.next()
        let start = Date()
        for k in 1...trips {
            try await db.write { tx in
                var item = TypedItem(k, of: 1)
                item.i8 = k
                try tx.insert(item)
            }
            guard let seen = try await changes.next(), seen.results.count == k else {
                throw StoreError.invalidArgument("observation missed write \(k)")
            }
        }
        return Date().timeIntervalSince(start)
    }

    private static func grdbObservationRoundTrips(_ pool: DatabasePool, trips: Int) async throws -> Double {
        let observation = ValueObservation.tracking { db in
            try GRDBItem.filter(Column("i8") > 0).order(Column("i0")).fetchAll(db)
        }
        var values = observation.values(in: pool).makeAsyncIterator()
        _ = try await values.next()
        let start = Date()
        for k in 1...trips {
            try await pool.write { db in
                var item = GRDBItem(k, of: 1)
                item.i8 = k
                try item.insert(db)
            }
            // GRDB may repeat a value it already sent (a pool's observation re-fetches once as it starts): wait for
            // the one with this write.
            var seen = try await values.next()
            while let s = seen, s.count < k { seen = try await values.next() }
            guard seen?.count == k else { throw StoreError.invalidArgument("GRDB observation missed write \(k)") }
        }
        return Date().timeIntervalSince(start)
    }
}

/// Runs async work from storebench's synchronous sections and waits for it.
func blocking<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) throws -> T {
    let result = Mutex<Result<T, any Error>?>(nil)
    let done = DispatchSemaphore(value: 0)
    Task {
        do {
            let value = try await body()
            result.withLock { $0 = .success(value) }
        } catch {
            result.withLock { $0 = .failure(error) }
        }
        done.signal()
    }
    done.wait()
    guard let outcome = result.withLock({ $0 }) else { throw StoreError.cancelled }
    return try outcome.get()
}
