import Foundation
import PostgresBackend
import StoreAPI

/// The PostgreSQL backend beside libpq doing the same storage work by hand, on a private server this section
/// starts (and stops): conversions onto and off the server, a context save, a fetch by predicate, and several
/// processes saving at once. Every time is CPU seconds of storebench *and the server* together (the server does
/// most of the work of each row), wall-clock alongside.
enum PostgresSection {
    static let skipMessage = "postgres: skipped — PostgreSQL server binaries not found (install postgresql, or set STOREAPI_PG_BINDIR)"

    /// A flat Item (the micro-benchmarks' record) and a counter per writer for the concurrent saves.
    static func schema() throws -> Schema {
        try Schema(entities: try BenchData.schema().definitions + [
            EntityDescription(name: "Counter", attributes: [
                AttributeDescription(name: "name", type: .string), AttributeDescription(name: "value", type: .integer64),
            ]),
        ])
    }

    /// Runs every row at `count` records (the context save at up to 10⁴); returns the failed checks.
    static func run(count: Int, runs: Int, table: ResultsTable, smoke: Bool) throws -> [String] {
        guard BenchPostgresServer.binDirectory != nil else {
            print(skipMessage)
            return []
        }
        let server = try BenchPostgresServer()
        defer { server.stop() }
        let dir = try Measure.temporaryDirectory("postgres")
        defer { try? FileManager.default.removeItem(at: dir) }
        let raw = try RawPostgres.Connection(server.conninfo)
        var failures: [String] = []
        let label = ResultRow.count(count)
        let inputs = BenchData.Inputs(count: count)

        // The source: a SQLite store of `count` items (not timed), and its global IDs for the references' rows.
        let sqlite = dir.appendingPathComponent("source.sqlite")
        let globalIDs = try makeSource(sqlite, count: count, inputs: inputs)

        table.begin("postgres, \(label) records (CPU of storebench + server; target ≤1.5×)")
        // sqlite → postgres: the transfer engine saving pages, which go in with COPY; reference: COPY FROM of the same rows.
        var ours: [Timing] = [], text: [Timing] = [], binary: [Timing] = []
        let converted = server.url(schema: "converted")
        for run in 0..<runs {
            let url = run == runs - 1 ? converted : server.url(schema: "convert\(run)")
            let (_, t) = try server.timing {
                _ = try StoreOperations().copyStore(from: sqlite, sourceType: "sqlite", to: url, type: "postgres")
            }
            ours.append(t)
            if url != converted { try PostgresStoreBackend().destroyStore(at: url) }
            try RawPostgres.createTable(raw, schema: "reftext\(run)")
            text.append(try server.timing { try RawPostgres.copyText(raw, schema: "reftext\(run)", count: count, inputs: inputs, globalIDs: globalIDs) }.1)
            try RawPostgres.createTable(raw, schema: "refbinary\(run)")
            binary.append(try server.timing { try RawPostgres.copyBinary(raw, schema: "refbinary\(run)", count: count, inputs: inputs, globalIDs: globalIDs) }.1)
        }
        failures += try check("convert sqlite → postgres", converted, expected: count)
        for schema in ["reftext", "refbinary"] {
            let n = try raw.integer("SELECT count(*) FROM \(schema)0.item")
            if n != count { failures.append("postgres: \(schema) holds \(n) rows, expected \(count)") }
        }
        table.add(.timed("convert sqlite → postgres", records: count, ours: Timing.median(ours), reference: Timing.median(text),
                         referenceName: "libpq COPY FROM, text format, 1 txn", maxRatio: 1.5))
        table.add(.timed("COPY FROM: binary vs text format", records: count, ours: Timing.median(binary), reference: Timing.median(text),
                         referenceName: "text (the backend's format)"))

        failures += try upgradeRows(server, converted, count: count, runs: runs, table: table)

        // postgres → lmdb: pages of the store read with one query each; reference: COPY TO + raw mdb_put of each row.
        ours = []
        var reference: [Timing] = []
        for run in 0..<runs {
            let lmdb = dir.appendingPathComponent("out\(run).lmdb")
            let (_, t) = try server.timing {
                _ = try StoreOperations().copyStore(from: converted, sourceType: "postgres", to: lmdb, type: "lmdb")
            }
            ours.append(t)
            if run == 0 { failures += try check("convert postgres → lmdb", lmdb, expected: count) }
            try? FileManager.default.removeItem(at: lmdb)
            let refPath = dir.appendingPathComponent("ref\(run).lmdb").path
            let (rows, r) = try server.timing { try RawPostgres.copyOutToLMDB(raw, schema: "reftext0", path: refPath, count: count) }
            if rows != count { failures.append("postgres: COPY TO wrote \(rows) rows, expected \(count)") }
            reference.append(r)
            try? FileManager.default.removeItem(atPath: refPath)
        }
        // How to read rows off the server: COPY TO beside a query's result, both through libpq.
        var copied: [Timing] = [], selected: [Timing] = []
        for _ in 0..<runs {
            let (n, a) = try server.timing { try RawPostgres.copyOut(raw, schema: "reftext0") }
            let (m, b) = try server.timing { try RawPostgres.fetch(raw, schema: "reftext0", from: 0, to: count) }
            if n != count || m != count { failures.append("postgres: reading every row found \(n) and \(m), expected \(count)") }
            copied.append(a)
            selected.append(b)
        }
        table.add(.timed("read all rows: COPY TO vs SELECT", records: count, ours: Timing.median(copied), reference: Timing.median(selected),
                         referenceName: "SELECT through libpq (the backend's page reads)"))
        table.add(.timed("convert postgres → lmdb", records: count, ours: Timing.median(ours), reference: Timing.median(reference),
                         referenceName: "libpq COPY TO + raw mdb_put, 1 txn", maxRatio: 1.5))

        // A context save of up to 10⁴ inserted objects; reference: one prepared INSERT per row in one transaction.
        let saved = min(count, 10_000)
        ours = []
        reference = []
        for run in 0..<runs {
            let url = server.url(schema: "saved\(run)")
            let coordinator = StoreCoordinator(schema: try schema())
            try coordinator.addStore(StoreDescription(url: url, type: PostgresStoreBackend.typeIdentifier))
            let context = coordinator.newContext()
            let values = (0..<saved).map { BenchData.values($0, inputs) }
            let (_, t) = try server.timing {
                for v in values { try context.insert("Item", v) }
                try context.save()
            }
            ours.append(t)
            let stored = try context.count(FetchRequest(entity: "Item"))
            if stored != saved { failures.append("postgres: context save stored \(stored) items, expected \(saved)") }
            for s in coordinator.stores { try coordinator.removeStore(s) }
            try PostgresStoreBackend().destroyStore(at: url)
            try RawPostgres.createTable(raw, schema: "refinsert\(run)")
            reference.append(try server.timing {
                try RawPostgres.preparedInsert(raw, schema: "refinsert\(run)", count: saved, inputs: inputs, globalIDs: globalIDs)
            }.1)
        }
        table.add(.timed("context save of inserted objects", records: saved, ours: Timing.median(ours), reference: Timing.median(reference),
                         referenceName: "libpq prepared INSERT per row, 1 txn", maxRatio: 1.5))

        // A fetch by predicate through a context (a tenth of the items); reference: the same SQL through libpq.
        let lo = count / 2
        let hi = lo + max(1, count / 10)
        ours = []
        reference = []
        let reader = StoreCoordinator(schema: try schema())
        try reader.addStore(StoreDescription(url: converted, type: PostgresStoreBackend.typeIdentifier))
        let request = FetchRequest(entity: "Item", predicate: try FetchPredicate("number >= \(lo) AND number < \(hi)"))
        for _ in 0..<max(3, runs) {
            let context = reader.newContext()
            let (found, t) = try server.timing { () throws -> Int in
                var checksum = 0
                for o in try context.fetch(request) { checksum &+= Int(try o.value(forKey: "number").int64Value ?? 0) }
                return checksum
            }
            if found != (lo..<hi).reduce(0, +) { failures.append("postgres: the predicate fetch found the wrong items") }
            ours.append(t)
            let (rows, r) = try server.timing { try RawPostgres.fetch(raw, schema: "reftext0", from: lo, to: hi) }
            if rows != hi - lo { failures.append("postgres: the reference fetch found \(rows) rows, expected \(hi - lo)") }
            reference.append(r)
        }
        for s in reader.stores { try reader.removeStore(s) }
        table.add(.timed("fetch by predicate through a context", records: hi - lo, ours: Timing.median(ours), reference: Timing.median(reference),
                         referenceName: "the same SQL through libpq, every value read", maxRatio: 1.5))

        failures += try concurrentSaves(server, saves: smoke ? 20 : 200, table: table)
        return failures
    }

    /// Schema evolution on the server: a copy of `converted` upgraded to a schema with one more optional attribute,
    /// in place (`ALTER TABLE`, no row rewritten), beside a streamed same-type copy of the same store — what an
    /// upgrade that rewrote the store would at least do. The upgraded copy must have the new version hashes and
    /// every item.
    static func upgradeRows(_ server: BenchPostgresServer, _ converted: URL, count: Int, runs: Int,
                            table: ResultsTable) throws -> [String] {
        var definitions = try schema().definitions
        if let i = definitions.firstIndex(where: { $0.name == "Item" }) {
            definitions[i].attributes.append(AttributeDescription(name: "note", type: .string))
        }
        let next = try Schema(entities: definitions)
        var failures: [String] = []
        var upgrades: [Timing] = [], streamed: [Timing] = []
        for run in 0..<runs {
            let copy = server.url(schema: "upgraded\(run)")
            _ = try StoreOperations().copyStore(from: converted, sourceType: "postgres", to: copy, type: "postgres")
            upgrades.append(try server.timing { try StoreOperations().upgradeStore(at: copy, type: "postgres", to: next) }.1)
            let store = try PostgresStoreBackend().open(at: copy, options: StoreOptions(isReadOnly: true, createIfMissing: false),
                                                        creating: nil)
            if store.metadata.versionHashes != next.versionHashes {
                failures.append("postgres: the upgraded store does not have the new version hashes")
            }
            let n = try store.count(FetchRequest(entity: "Item"))
            if n != count { failures.append("postgres: the upgraded store holds \(n) items, expected \(count)") }
            try store.close()
            try PostgresStoreBackend().destroyStore(at: copy)
            let target = server.url(schema: "streamed\(run)")
            streamed.append(try server.timing {
                _ = try StoreOperations().copyStore(from: converted, sourceType: "postgres", to: target, type: "postgres",
                                                    options: .init(allowFastCopy: false))
            }.1)
            try PostgresStoreBackend().destroyStore(at: target)
        }
        table.add(.timed("upgrade: + optional attribute, in place", records: count, ours: Timing.median(upgrades),
                         reference: Timing.median(streamed), referenceName: "streamed same-type copy (ALTER TABLE rewrites no row)"))
        return failures
    }

    /// Writes `count` items into a new SQLite store; returns their global IDs.
    static func makeSource(_ url: URL, count: Int, inputs: BenchData.Inputs) throws -> [UUID] {
        let coordinator = StoreCoordinator(schema: try schema())
        try coordinator.addStore(StoreDescription(url: url, type: "sqlite"))
        defer { for s in coordinator.stores { try? coordinator.removeStore(s) } }
        let context = coordinator.newContext()
        let ids = (0..<count).map { _ in UUID() }
        try context.insertBatch("Item", count: count, globalIDs: ids) { i, row in try BenchData.set(i, inputs, into: &row) }
        return ids
    }

    /// Whether the store at `url` holds `expected` items.
    static func check(_ what: String, _ url: URL, expected: Int) throws -> [String] {
        let c = StoreCoordinator(schema: try schema())
        try c.addStore(StoreDescription(url: url, type: url.isFileURL ? "lmdb" : PostgresStoreBackend.typeIdentifier))
        defer { for s in c.stores { try? c.removeStore(s) } }
        let n = try c.newContext().count(FetchRequest(entity: "Item"))
        return n == expected ? [] : ["postgres: \(what) holds \(n) items, expected \(expected)"]
    }

    // MARK: Several processes

    /// 1, 2 and 4 worker processes each making `saves` saves into one store at once (each save inserts ten items and
    /// increments the worker's own counter; every tenth also increments a shared counter, retrying on a conflict);
    /// saves per second for each, and a check that no update was lost.
    static func concurrentSaves(_ server: BenchPostgresServer, saves: Int, table: ResultsTable) throws -> [String] {
        var failures: [String] = []
        var base: Double?
        for processes in [1, 2, 4] {
            let url = server.url(schema: "writers\(processes)")
            let coordinator = StoreCoordinator(schema: try schema())
            try coordinator.addStore(StoreDescription(url: url, type: PostgresStoreBackend.typeIdentifier))
            let setup = coordinator.newContext()
            try setup.insert("Counter", ["name": "shared", "value": .integer64(0)])
            for p in 0..<processes { try setup.insert("Counter", ["name": .string("w\(p)"), "value": .integer64(0)]) }
            try setup.save()
            let results = Results(processes)
            DispatchQueue.concurrentPerform(iterations: processes) { p in
                results.set(p, Result { try ChildProcess.worker(["pg-saves", url.absoluteString, "w\(p)", String(saves)]) })
            }
            var seconds = 0.0
            var conflicts = 0
            for outcome in results.all {
                let o = try outcome.get()
                seconds = max(seconds, o.double("seconds") ?? 0)
                conflicts += Int(o.double("conflicts") ?? 0)
            }
            let check = coordinator.newContext()
            var counters: [String: Int64] = [:]
            for o in try check.fetch(FetchRequest(entity: "Counter")) {
                if case .string(let name) = try o.value(forKey: "name") { counters[name] = try o.value(forKey: "value").int64Value }
            }
            let items = try check.count(FetchRequest(entity: "Item"))
            let sharedExpected = Int64(processes * (saves / 10))
            if counters["shared"] != sharedExpected || items != processes * saves * 10
                || (0..<processes).contains(where: { counters["w\($0)"] != Int64(saves) }) {
                failures.append("postgres: \(processes) writers lost updates (shared \(counters["shared"] ?? -1) of \(sharedExpected), items \(items) of \(processes * saves * 10))")
            }
            for s in coordinator.stores { try coordinator.removeStore(s) }
            try PostgresStoreBackend().destroyStore(at: url)
            let rate = Double(processes * saves) / max(seconds, 1e-9)
            base = base ?? rate
            var row = ResultRow(name: "\(processes) process\(processes == 1 ? "" : "es") saving at once", records: processes * saves,
                                ours: String(format: "%.0f saves/s", rate))
            row.ratio = rate / (base ?? rate)
            row.referenceName = "ratio: saves/s over 1 process; \(conflicts) conflicts retried; no lost update: \(failures.isEmpty ? "yes" : "NO")"
            table.add(row)
        }
        return failures
    }

    /// The worker of ``concurrentSaves(_:saves:table:)``: `URL NAME SAVES`.
    static func worker(_ args: [String]) throws -> [String: String] {
        guard args.count == 3, let url = URL(string: args[0]), let saves = Int(args[2]) else {
            throw RawPostgres.Failure(description: "pg-saves URL NAME SAVES")
        }
        let name = args[1]
        let coordinator = StoreCoordinator(schema: try schema())
        try coordinator.addStore(StoreDescription(url: url, type: PostgresStoreBackend.typeIdentifier))
        let context = coordinator.newContext()
        func counter(_ n: String) throws -> ManagedObject {
            guard let o = try context.fetch(FetchRequest(entity: "Counter", predicate: try FetchPredicate("name == '\(n)'"))).first else {
                throw RawPostgres.Failure(description: "no counter \(n)")
            }
            return o
        }
        var conflicts = 0
        let (_, t) = try Measure.timing {
            for i in 0..<saves {
                for k in 0..<10 { try context.insert("Item", ["number": .integer64(Int64(i * 10 + k)), "title": .string(name)]) }
                let own = try counter(name)
                try own.setValue(.integer64((try own.value(forKey: "value").int64Value ?? 0) + 1), forKey: "value")
                try context.save()
                guard i % 10 == 9 else { continue }
                while true {
                    let shared = try counter("shared")
                    try shared.setValue(.integer64((try shared.value(forKey: "value").int64Value ?? 0) + 1), forKey: "value")
                    do {
                        try context.save()
                        break
                    } catch StoreError.conflict {
                        conflicts += 1
                        context.reset()
                    }
                }
            }
        }
        return ["seconds": String(format: "%.6f", t.wall), "cpu": String(format: "%.6f", t.cpu), "conflicts": String(conflicts)]
    }

    /// The outcomes of the worker processes, filled from several threads.
    private final class Results: @unchecked Sendable {
        // @unchecked: `outcomes` is only touched under `lock`.
        private let lock = NSLock()
        private var outcomes: [Result<ChildProcess.Outcome, Error>]

        init(_ n: Int) { outcomes = Array(repeating: .failure(RawPostgres.Failure(description: "not run")), count: n) }

        func set(_ i: Int, _ r: Result<ChildProcess.Outcome, Error>) { lock.withLock { outcomes[i] = r } }
        var all: [Result<ChildProcess.Outcome, Error>] { lock.withLock { outcomes } }
    }
}
