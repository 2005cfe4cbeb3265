import Foundation
import SQLiteBackend
import StoreAPI
@testable import StoreSync
import StoreTestSupport
import Testing
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Two `storectl sync` processes on one store at once, through the real binary: they take turns, so every change of
/// another peer is applied once and every local change pushed once, the cursor never goes back, and the stores end
/// up identical; a holder killed with SIGKILL leaves the store free.
@Suite("storectl sync: two syncs of one store")
struct StorectlConcurrentSyncTests {
    /// The remote, and for `serverStore` the store too: a store on the PostgreSQL server, locked there.
    enum Remote: String, CaseIterable, CustomTestStringConvertible {
        case folder, postgres, serverStore
        var testDescription: String { rawValue }
    }

    static let remotes: [Remote] = PostgresTestServer.isAvailable ? [.folder, .postgres, .serverStore] : [.folder]
    static let rounds = ProcessInfo.processInfo.environment["STORESYNC_CONCURRENT_ROUNDS"].flatMap(Int.init) ?? 5

    @Test(arguments: remotes)
    func twoSyncsOfOneStoreTakeTurnsAndTheStoresConverge(remote kind: Remote) throws {
        let dir = try TemporaryDirectory("sync-concurrent")
        let remote: String
        switch kind {
        case .folder: remote = "file://\(try dir.directory("share").path)"
        case .postgres, .serverStore: remote = try PostgresTestServer.shared().storeURL("concurrent").absoluteString
        }
        let model = PackagePaths.libraryModel.path
        // `a` is synced by two processes at once; `c.lmdb` is the third peer whose changes they pull.
        let a = kind == .serverStore ? try PostgresTestServer.shared().storeURL("store").absoluteString : "a.sqlite"
        for s in [a, "c.lmdb"] {
            try ok(["create", s, "--model", model, "--quiet"], in: dir)
            try ok(["sync", s, "--remote", remote, "--container", "concurrent", "--quiet"], in: dir)
        }
        var rng = SeededGenerator(seed: 0xC0C0_0000 + UInt64(kind == .folder ? 0 : 1))
        var ids: [String] = []
        var previous: SyncProgress?
        for round in 0..<Self.rounds {
            // The third peer pulls, then inserts and renames; `a` inserts records of its own before its two syncs start.
            try ok(["sync", "c.lmdb", "--quiet"], in: dir)
            var third: [String] = []
            let inserted = 20 + rng.below(300)
            for i in 0..<inserted {
                let id = UUID().uuidString
                ids.append(id)
                third.append(#"{"entity":"Author","id":"\#(id)","attributes":{"name":"c r\#(round) \#(i)"}}"#)
            }
            for _ in 0..<min(10, ids.count - inserted) {
                third.append(#"{"entity":"Author","id":"\#(ids[rng.below(ids.count - inserted)])","attributes":{"name":"renamed in r\#(round)"}}"#)
            }
            try ok(["import", "c.lmdb", try dir.write(third.joined(separator: "\n"), to: "c-\(round).ndjson").path, "--upsert", "--quiet"], in: dir)
            try ok(["sync", "c.lmdb", "--quiet"], in: dir)
            var local: [String] = []
            let own = 1 + rng.below(200)
            for i in 0..<own {
                let id = UUID().uuidString
                ids.append(id)
                local.append(#"{"entity":"Author","id":"\#(id)","attributes":{"name":"a r\#(round) \#(i)"}}"#)
            }
            try ok(["import", a, try dir.write(local.joined(separator: "\n"), to: "a-\(round).ndjson").path, "--upsert", "--quiet"], in: dir)

            let children = try (0..<2).map { _ in
                try Child.storectl(["sync", a, "--json", "--timeout", "300"], in: dir, waiting: false)
            }
            children.forEach { $0.wait() }
            var reports: [[String: Any]] = []
            for child in children {
                try #require(child.status == 0, "round \(round): \(child.summary)")
                reports.append(try #require(try JSONSerialization.jsonObject(with: Data(child.stdout.utf8)) as? [String: Any]))
            }
            let pulled = reports.map { $0["insertedRecords"] as? Int ?? -1 }
            #expect(pulled.reduce(0, +) == inserted, "round \(round): the third peer's \(inserted) records were applied \(pulled)")
            let pushed = reports.map { $0["pushedRecords"] as? Int ?? -1 }
            #expect(pushed.reduce(0, +) == own, "round \(round): the \(own) local records were pushed \(pushed)")
            // (The state of a server store is read the same way by the engine; the test reads files only.)
            guard kind != .serverStore else { continue }
            let now = try SyncProgress(of: dir.path("a.sqlite"), remote: kind)
            if let previous { #expect(now.follows(previous), "round \(round): the sync state went back: \(previous) → \(now)") }
            previous = now
        }
        for s in ["c.lmdb", a, "c.lmdb"] { try ok(["sync", s, "--quiet"], in: dir) }
        let diff = try Child.storectl(["diff", a, "c.lmdb", "--records-only"], in: dir)
        #expect(diff.status == 0, "the stores differ:\n\(diff.stdout)\(diff.stderr)")
        for s in [a, "c.lmdb"] {
            let exported = try Child.storectl(["export", s, "--entity", "Author", "--quiet"], in: dir)
            var seen: [String: Int] = [:]
            for line in exported.stdout.split(separator: "\n") {
                guard let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                      let id = object["id"] as? String else { continue }
                seen[id, default: 0] += 1
            }
            #expect(seen.values.allSatisfy { $0 == 1 }, "\(s): a record is there twice")
            #expect(Set(seen.keys) == Set(ids), "\(s): \(seen.count) authors, \(ids.count) made")
        }
    }

    @Test func aHolderKilledWithSIGKILLLeavesTheStoreFree() throws {
        let dir = try TemporaryDirectory("sync-lock-kill")
        let share = try dir.directory("share")
        try ok(["create", "a.sqlite", "--model", PackagePaths.libraryModel.path, "--quiet"], in: dir)
        try ok(["sync", "a.sqlite", "--remote", "file://\(share.path)", "--container", "k", "--quiet"], in: dir)
        // Enough to push that the next sync holds the store a while; it is frozen (SIGSTOP) as soon as its process
        // ID is in the lock file, so it holds the store for as long as the test needs.
        let lines = (0..<20_000).map { #"{"entity":"Author","id":"\#(UUID().uuidString)","attributes":{"name":"author \#($0)"}}"# }
        try ok(["import", "a.sqlite", try dir.write(lines.joined(separator: "\n"), to: "many.ndjson").path, "--upsert", "--quiet"], in: dir)
        let holder = try Child.storectl(["sync", "a.sqlite", "--timeout", "300"], in: dir, waiting: false)
        let pid = holder.process.processIdentifier
        let lockFile = dir.path("a.sqlite.storesync.lock")
        let deadline = Date().addingTimeInterval(120)
        var holds = false
        while !holds, Date() < deadline, holder.isRunning {
            holds = (try? String(contentsOf: lockFile, encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines) == "\(pid)"
            if holds { try #require(signal(pid, SIGSTOP) == 0) } else { usleep(500) }
        }
        try #require(holds, "the first sync never held the store: \(holder.summary)")

        let refused = try Child.storectl(["sync", "a.sqlite", "--timeout", "1"], in: dir)
        #expect(refused.status == 2 && refused.stderr.contains("sync already running (pid \(pid))"), "\(refused.summary)")

        #expect(holder.kill(), "the holder ended by itself: \(holder.summary)")
        // Were the dead process's lock kept, this sync would give up after 5 seconds with "sync already running".
        let after = try Child.storectl(["sync", "a.sqlite", "--timeout", "5", "--json"], in: dir)
        #expect(after.status == 0, "the killed holder still blocks the store: \(after.summary)")
        let report = try JSONSerialization.jsonObject(with: Data(after.stdout.utf8)) as? [String: Any]
        #expect(report?["pushedRecords"] as? Int ?? 0 > 0, "\(after.stdout)")
    }

    private func signal(_ pid: Int32, _ signal: Int32) -> Int32 {
        #if canImport(Glibc)
        Glibc.kill(pid, signal)
        #else
        Darwin.kill(pid, signal)
        #endif
    }

    /// Where the store's sync state stands: what only grows while syncs take turns.
    struct SyncProgress: CustomStringConvertible {
        var sequence: Int64
        var pushedToken: Int64
        /// Per peer, the last file applied (folder), or the log position under `""` (PostgreSQL).
        var cursor: [String: Int64]

        init(of store: URL, remote: Remote) throws {
            let metadata = try SQLiteStoreBackend().readMetadata(at: store)
            let state = try #require(try SyncState.read(from: metadata, store: store.path))
            sequence = state.sequence
            pushedToken = state.pushedToken ?? 0
            let raw = state.cursor?.rawValue ?? ""
            switch remote {
            case .folder: cursor = try JSONDecoder().decode([String: Int64].self, from: Data((raw.isEmpty ? "{}" : raw).utf8))
            case .postgres, .serverStore: cursor = ["": Int64(raw) ?? 0]
            }
        }

        func follows(_ earlier: SyncProgress) -> Bool {
            sequence >= earlier.sequence && pushedToken >= earlier.pushedToken
                && earlier.cursor.allSatisfy { peer, position in (cursor[peer] ?? .min) >= position }
        }

        var description: String { "sequence \(sequence), pushed token \(pushedToken), cursor \(cursor)" }
    }

    private func ok(_ arguments: [String], in dir: TemporaryDirectory, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let child = try Child.storectl(arguments, in: dir)
        try #require(child.status == 0, "storectl \(arguments.joined(separator: " ")): \(child.stderr)", sourceLocation: sourceLocation)
    }
}
