import Foundation
import StoreAPI
import StoreTestSupport
import Testing

/// Faults end to end through the real `storectl`: sync peers killed with SIGKILL at random points of their push and
/// pull, restarted, synced to quiescence — `storectl diff` finds the stores identical, every record once.
@Suite("storectl sync faults")
struct StorectlSyncFaultTests {
    enum Remote: String, CaseIterable, CustomTestStringConvertible {
        case folder, postgres
        var testDescription: String { rawValue }
    }

    static let remotes: [Remote] = PostgresTestServer.isAvailable ? [.folder, .postgres] : [.folder]
    static let rounds = ProcessInfo.processInfo.environment["STORESYNC_KILL_ROUNDS"].flatMap(Int.init) ?? 4

    @Test(arguments: remotes)
    func peersKilledMidSyncLoseNothingAndDuplicateNothing(remote kind: Remote) throws {
        let dir = try TemporaryDirectory("sync-kill")
        let remote: String
        switch kind {
        case .folder: remote = "file://\(try dir.directory("share").path)"
        case .postgres: remote = try PostgresTestServer.shared().storeURL("kill").absoluteString
        }
        let model = PackagePaths.libraryModel.path
        let stores = ["a.sqlite", "b.lmdb"]
        for s in stores {
            try ok(["create", s, "--model", model, "--quiet"], in: dir)
            try ok(["sync", s, "--remote", remote, "--container", "kill", "--quiet"], in: dir)
        }
        var rng = SeededGenerator(seed: 0x4B11_0000 + UInt64(kind == .folder ? 0 : 1))
        var expected: [String: String] = [:]
        var kills = 0
        var log: [String] = []
        for round in 0..<Self.rounds {
            for s in stores {
                // New records (sometimes more than one change file's worth) and updates of records of both peers.
                var lines: [String] = []
                for _ in 0..<(200 + rng.below(2_600)) {
                    let id = UUID().uuidString
                    let name = "\(s) r\(round) \(rng.below(1_000_000))"
                    expected[id] = name
                    lines.append(#"{"entity":"Author","id":"\#(id)","attributes":{"name":"\#(name)"}}"#)
                }
                let file = try dir.write(lines.joined(separator: "\n"), to: "round-\(round)-\(s).ndjson")
                try ok(["import", s, file.path, "--upsert", "--quiet"], in: dir)
                let delay = rng.below(600)
                let child = try Child.storectl(["sync", s, "--quiet"], in: dir, waiting: false)
                usleep(UInt32(delay) * 1_000)
                let killed = child.kill()
                if killed { kills += 1 }
                log.append("round \(round) \(s): \(lines.count) new, killed after \(delay) ms: \(killed)")
            }
        }
        // Restarted, everything syncs to quiescence.
        for _ in 0..<2 { for s in stores { try ok(["sync", s, "--quiet"], in: dir, log) } }
        let diff = try Child.storectl(["diff", "a.sqlite", "b.lmdb", "--records-only"], in: dir)
        #expect(diff.status == 0, "the stores differ after the kills:\n\(log.joined(separator: "\n"))\n\(diff.stdout)\(diff.stderr)")
        #expect(kills > 0, "no sync was ever killed mid-run; the test proved nothing:\n\(log.joined(separator: "\n"))")
        for s in stores {
            let exported = try Child.storectl(["export", s, "--entity", "Author", "--quiet"], in: dir)
            var seen: [String: Int] = [:]
            for line in exported.stdout.split(separator: "\n") {
                guard let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                      object["entity"] as? String == "Author", let id = object["id"] as? String else { continue }
                seen[id, default: 0] += 1
            }
            #expect(seen.count == expected.count, "\(s): \(seen.count) authors, \(expected.count) inserted")
            #expect(seen.values.allSatisfy { $0 == 1 }, "\(s): a record is there twice")
            #expect(Set(expected.keys).isSubset(of: Set(seen.keys)), "\(s): records were lost")
        }
    }

    private func ok(_ arguments: [String], in dir: TemporaryDirectory, _ log: [String] = [],
                    sourceLocation: SourceLocation = #_sourceLocation) throws {
        let child = try Child.storectl(arguments, in: dir)
        try #require(child.status == 0, "storectl \(arguments.joined(separator: " ")): \(child.stderr)\n\(log.joined(separator: "\n"))",
                     sourceLocation: sourceLocation)
    }
}
