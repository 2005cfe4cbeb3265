import Foundation
import Logging
import StoreAPI
import StoreSync
import StoreSyncPostgres
import Synchronization

/// Sync through the PostgreSQL remote, on a private server started for the section: the initial push of a store's
/// records and their pull by a second peer beside `psql \copy` of the same rows in and out of a table (target ≤3×);
/// one change reaching the other peer, woken by LISTEN (median, target < 100 ms); saves with the sync engine idle
/// beside the same saves on a store that tracks history as sync needs it but has no engine (target: no measurable
/// difference), and beside a store without history (CPU time); and a sync with nothing to do. The sync rows are
/// wall-clock times: the server's work is part of both sides. The push and pull rows are medians of `runs` rounds,
/// at least ``minimumSyncRounds``.
enum SyncSection {
    static let schema: Schema = {
        do {
            return try Schema(entities: [
                EntityDescription(name: "Item", attributes: [
                    AttributeDescription(name: "name", type: .string),
                    AttributeDescription(name: "count", type: .integer64),
                    AttributeDescription(name: "score", type: .double),
                ]),
            ])
        } catch {
            preconditionFailure("the sync bench schema is invalid: \(error)")
        }
    }()

    /// One peer: a SQLite store with history tracking and sync options, and its engine; without a remote, a store
    /// without sync, tracking history or not.
    final class Peer: @unchecked Sendable {
        let coordinator: StoreCoordinator
        let loaded: LoadedStore
        let engine: SyncEngine?
        let remote: PostgresRemote?

        init(_ url: URL, remoteURL: URL?, history: Bool = false) throws {
            coordinator = StoreCoordinator(schema: SyncSection.schema)
            var description = StoreDescription(url: url, type: "sqlite")
            description.options.historyTracking = history
            if let remoteURL {
                description.options.historyTracking = true
                description.syncOptions = SyncOptions(remote: remoteURL, containerIdentifier: "bench")
            }
            let coordinator = self.coordinator
            let loaded = try coordinator.addStore(description)
            let remote = try remoteURL.map { try PostgresRemote(url: $0, container: "bench") }
            self.loaded = loaded
            self.remote = remote
            // Every sync that moves something logs at info: the timed loops would print hundreds of lines. A
            // diagnostic run lowers the level (STOREBENCH_SYNC_LOG_LEVEL=trace: how long each step of a sync took).
            var logger = Logger(label: "storebench.sync")
            logger.logLevel = ProcessInfo.processInfo.environment["STOREBENCH_SYNC_LOG_LEVEL"]
                .flatMap(Logger.Level.init(rawValue:)) ?? .warning
            engine = try remote.map { try SyncEngine(store: loaded, coordinator: coordinator, remote: $0, logger: logger) }
        }

        func sync() async throws -> SyncReport {
            guard let engine else { throw BenchFailure("this peer does not sync") }
            return try await engine.sync()
        }

        func count() throws -> Int { try coordinator.newContext().count(FetchRequest(entity: "Item")) }
    }

    /// The fewest rounds of the initial push and pull a full run measures.
    static let minimumSyncRounds = 9

    static func values(_ n: Int) -> [String: StoreValue] {
        ["name": .string("item \(n)"), "count": .integer64(Int64(n)), "score": .double(Double(n % 1000) / 10)]
    }

    static func run(count: Int, runs: Int, smoke: Bool) throws -> Bool {
        guard BenchPostgresServer.binDirectory != nil else {
            print("\n# sync: skipped — no PostgreSQL server binaries (install postgresql, or set STOREAPI_PG_BINDIR)")
            return true
        }
        let server = try BenchPostgresServer()
        defer { server.stop() }
        let dir = try Measure.temporaryDirectory("sync")
        defer { try? FileManager.default.removeItem(at: dir) }
        var ok = true
        var rows: [BenchRow] = []

        // Initial push and pull beside psql's \copy of the same rows into a table and out of it, in rounds: one
        // round of each swings a lot on a shared machine. Each round has new peers, a new remote schema and a new
        // reference table, and runs ours and \copy in turn, which goes first alternating between rounds.
        // Several rounds whatever `runs` says: a \copy TO of the pulled rows is short and swings widely from one
        // round to the next on a shared machine, and a median of a few such rounds moves the pull's ratio between runs.
        let syncRounds = smoke ? 1 : max(Self.minimumSyncRounds, runs)
        var pushes: [Double] = [], pulls: [Double] = [], copiesIn: [Double] = [], copiesOut: [Double] = []
        var peers: (a: Peer, b: Peer)?
        for round in 0..<syncRounds {
            let remoteURL = server.url(schema: "bench_sync_\(round)")
            let a = try Peer(dir.appendingPathComponent("a\(round).sqlite"), remoteURL: remoteURL)
            let context = a.coordinator.newContext()
            for n in 0..<count { try context.insert("Item", values(n)) }
            try context.save()
            let b = try Peer(dir.appendingPathComponent("b\(round).sqlite"), remoteURL: remoteURL)
            let csv = dir.appendingPathComponent("items\(round).csv")
            try writeCSV(of: a, to: csv)
            let table = "bench_ref_\(round).items"
            try server.psql("CREATE SCHEMA bench_ref_\(round); CREATE TABLE \(table) (id uuid, name text, count bigint, score double precision)")
            let out = dir.appendingPathComponent("out\(round).csv")
            func push() throws {
                let (pushed, t) = try Measure.time { try blocking { try await a.sync() } }
                ok = pushed.pushedRecords == count && ok
                pushes.append(t)
            }
            func pull() throws {
                let (pulled, t) = try Measure.time { try blocking { try await b.sync() } }
                let pulledCount = try b.count()
                ok = pulled.insertedRecords == count && pulledCount == count && ok
                pulls.append(t)
            }
            func copyIn() throws {
                copiesIn.append(try Measure.time { try server.psql("\\copy \(table) FROM '\(csv.path)' WITH (FORMAT csv)") }.1)
            }
            func copyOut() throws {
                copiesOut.append(try Measure.time { try server.psql("\\copy \(table) TO '\(out.path)' WITH (FORMAT csv)") }.1)
            }
            if round % 2 == 0 {
                try push()
                try copyIn()
                try pull()
                try copyOut()
            } else {
                try copyIn()
                try push()
                try copyOut()
                try pull()
            }
            peers = (a, b)
        }
        guard let (a, b) = peers else { throw BenchFailure("no sync round ran") }
        rows.append(BenchRow(name: "initial push via PostgreSQL", count: count, ours: Measure.median(pushes),
                             reference: Measure.median(copiesIn), referenceName: "psql \\copy FROM",
                             note: "target ≤3×" + spread(pushes, copiesIn)))
        rows.append(BenchRow(name: "pull by a second peer", count: count, ours: Measure.median(pulls),
                             reference: Measure.median(copiesOut), referenceName: "psql \\copy TO",
                             note: "target ≤3×" + spread(pulls, copiesOut)))

        // One change reaching the other peer: saved and pushed by a, applied by b, which LISTEN wakes.
        let rounds = smoke ? 3 : 25
        let latencies = try blocking { try await changeLatencies(a: a, b: b, start: count, rounds: rounds) }
        let reachedCount = try b.count()
        ok = latencies.count == rounds && reachedCount == count + rounds && ok
        let median = Measure.median(latencies)
        rows.append(BenchRow(name: "one change to another peer (LISTEN)", count: 1, ours: median, reference: nil,
                             referenceName: "", note: String(format: "median of %d: %.1f ms; target < 100 ms", rounds, median * 1000)))

        // Saves with the engine idle, beside the same saves on a store that tracks history (what sync needs; its own
        // cost is the history row's) with no engine, and on a store without history.
        let saves = smoke ? 20 : 500
        let plain = try Peer(dir.appendingPathComponent("plain.sqlite"), remoteURL: nil)
        let tracked = try Peer(dir.appendingPathComponent("tracked.sqlite"), remoteURL: nil, history: true)
        // Its own remote schema: attached to the section's, its first sync would pull every record, and saves into
        // a store that size cost more than into the small ones beside it whatever the engine does.
        let synced = try Peer(dir.appendingPathComponent("synced.sqlite"), remoteURL: server.url(schema: "bench_sync_idle"))
        _ = try blocking { try await synced.sync() }
        func saveLoop(_ p: Peer) throws -> Double {
            let c = p.coordinator.newContext()
            return try Measure.cpu {
                for n in 0..<saves {
                    try c.insert("Item", values(n))
                    try c.save()
                }
            }.1
        }
        // Alternated, best of three each: the difference looked for is small beside the machine's noise.
        var plainSaves = Double.infinity, trackedSaves = Double.infinity, syncedSaves = Double.infinity
        let tries = smoke ? 1 : 3
        for _ in 0..<tries {
            plainSaves = min(plainSaves, try saveLoop(plain))
            trackedSaves = min(trackedSaves, try saveLoop(tracked))
            syncedSaves = min(syncedSaves, try saveLoop(synced))
        }

        // A sync with nothing to do, on the store holding every record.
        _ = try blocking { try await b.sync() }
        var idle: [Double] = []
        for _ in 0..<(smoke ? 3 : 20) {
            let (report, t) = try Measure.time { try blocking { try await b.sync() } }
            ok = report.pulledFiles == 0 && report.pushedFiles == 0 && ok
            idle.append(t)
        }
        rows.append(BenchRow(name: "sync with nothing to do", count: count, ours: Measure.median(idle), reference: nil,
                             referenceName: "", note: String(format: "median %.1f ms", Measure.median(idle) * 1000)))
        let title = "sync through PostgreSQL, \(count) records" + (syncRounds > 1 ? "; push and pull: median of \(syncRounds) rounds" : "")
        Report.print(rows, title: title, unit: "wall-clock seconds")
        let saveRows = [
            BenchRow(name: "save of 1 record, sync engine idle", count: saves, ours: syncedSaves, reference: trackedSaves,
                     referenceName: "same saves, history, no engine", note: "target: no measurable difference"),
            BenchRow(name: "save of 1 record, sync engine idle", count: saves, ours: syncedSaves, reference: plainSaves,
                     referenceName: "same saves without history", note: "history tracking, which sync needs, included"),
        ]
        Report.print(saveRows, title: "saves beside an idle sync engine (CPU time, best of \(tries))")
        return ok
    }

    /// Per round: a saves one record and syncs; b, waiting on LISTEN, syncs when woken; the time from a's save to
    /// the record being in b.
    private static func changeLatencies(a: Peer, b: Peer, start: Int, rounds: Int) async throws -> [Double] {
        guard let listener = b.remote else { throw BenchFailure("peer b has no remote") }
        try await listener.startListening()
        _ = try await listener.waitForChanges(timeout: 0)
        var latencies: [Double] = []
        for round in 0..<rounds {
            let expected = start + round + 1
            let applied = Task { () throws -> Date in
                while true {
                    guard try await listener.waitForChanges(timeout: 10) else {
                        throw BenchFailure("no notification within 10 s")
                    }
                    _ = try await b.sync()
                    if try b.count() >= expected { return Date() }
                }
            }
            let t0 = Date()
            let c = a.coordinator.newContext()
            try c.insert("Item", values(start + round))
            try c.save()
            _ = try await a.sync()
            latencies.append(try await applied.value.timeIntervalSince(t0))
        }
        return latencies
    }

    /// The rows of `peer` as a CSV file for `psql \copy`: the same rows the push sends, made before anything is timed.
    private static func writeCSV(of peer: Peer, to csv: URL) throws {
        var text = ""
        text.reserveCapacity(1 << 16)
        let reading = peer.coordinator.newContext()
        for r in try reading.fetch(FetchRequest(entity: "Item")) {
            text += "\(r.globalID.uuidString),\(csvField(try r.value(forKey: "name"))),\(csvField(try r.value(forKey: "count"))),"
                + "\(csvField(try r.value(forKey: "score")))\n"
        }
        try text.write(to: csv, atomically: true, encoding: .utf8)
    }

    /// The note's account of several rounds: the median's place among them (ours, the reference's, and their ratio
    /// in each round).
    private static func spread(_ ours: [Double], _ reference: [Double]) -> String {
        guard ours.count > 1 else { return "" }
        let ratios = zip(ours, reference).map { $0 / $1 }
        return String(format: "; median of %d rounds: ours %.3f–%.3f s, ref %.3f–%.3f s, per round %.2f–%.2f×",
                      ours.count, ours.min() ?? 0, ours.max() ?? 0, reference.min() ?? 0, reference.max() ?? 0,
                      ratios.min() ?? 0, ratios.max() ?? 0)
    }

    private static func csvField(_ v: StoreValue?) -> String {
        switch v {
        case .string(let s): "\"" + s.replacingOccurrences(of: "\"", with: "\"\"") + "\""
        case .integer64(let i): String(i)
        case .double(let d): String(d)
        default: ""
        }
    }
}
