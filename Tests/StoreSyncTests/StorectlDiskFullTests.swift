import Foundation
import StoreAPI
import StoreTestSupport
import Testing

/// A disk that fills up during a pull, through the real `storectl`: the child runs under a file-size limit
/// (`ulimit -f`, with SIGXFSZ ignored so that writes past it fail with EFBIG as on a full disk).
@Suite("storectl sync, disk full")
struct StorectlDiskFullTests {
    @Test func diskFullDuringPullLeavesTheStoreUnchangedAndTheNextSyncCompletes() throws {
        let dir = try TemporaryDirectory("sync-disk-full")
        let remote = "file://\(try dir.directory("share").path)"
        let model = PackagePaths.libraryModel.path
        for s in ["a.sqlite", "b.sqlite"] {
            try ok(["create", s, "--model", model, "--quiet"], in: dir)
            try ok(["sync", s, "--remote", remote, "--container", "full", "--quiet"], in: dir)
        }
        let own = UUID().uuidString
        let ownFile = try dir.write(#"{"entity":"Author","id":"\#(own)","attributes":{"name":"b's own"}}"#, to: "own.ndjson")
        try ok(["import", "b.sqlite", ownFile.path, "--upsert", "--quiet"], in: dir)
        try ok(["sync", "b.sqlite", "--quiet"], in: dir)
        let before = try authors("b.sqlite", in: dir)
        #expect(before == [own: 1])
        // Far more than the limit leaves room for.
        let ids = try importAuthors(into: "a.sqlite", in: dir)
        try ok(["sync", "a.sqlite", "--quiet"], in: dir)

        // Room for what b's files hold now and a little more, not for the pull.
        let sizes = try FileManager.default.contentsOfDirectory(atPath: dir.url.path)
            .filter { $0.hasPrefix("b.sqlite") }
            .map { (try FileManager.default.attributesOfItem(atPath: dir.path($0).path)[.size] as? Int) ?? 0 }
        let blocks = ((sizes.max() ?? 0) + 32_768) / 512
        let storectl = try BuiltTools.require(BuiltTools.storectl, "storectl")
        let limited = try Child(URL(fileURLWithPath: "/bin/sh"),
                                ["-c", "trap '' XFSZ; ulimit -f \(blocks); exec \"$0\" sync b.sqlite", storectl.path],
                                directory: dir.url)
        limited.wait()
        #expect(!limited.killedBySignal, "storectl was killed by a signal: \(limited.stderr)")
        #expect(limited.status != 0, "the pull fit under the limit; the test proved nothing: \(limited.stdout)")
        #expect(limited.stderr.contains("b.sqlite"), "the error does not name the store: \(limited.stderr)")
        #expect(!limited.stderr.contains("Fatal error"), "\(limited.stderr)")
        // Nothing of the pull is in the store, and the store is sound.
        let unchanged = try authors("b.sqlite", in: dir)
        #expect(unchanged.count == 1 && unchanged == before, "\(unchanged.count) authors after the failed pull")
        try ok(["verify", "b.sqlite", "--quiet"], in: dir)

        // Without the limit the next sync completes: every record once.
        try ok(["sync", "b.sqlite", "--quiet"], in: dir)
        try ok(["sync", "a.sqlite", "--quiet"], in: dir)
        let after = try authors("b.sqlite", in: dir)
        #expect(after.count == ids.count + 1 && after.values.allSatisfy { $0 == 1 }, "\(after.count) authors")
        #expect(Set(after.keys) == ids.union([own]), "records were lost")
        let diff = try Child.storectl(["diff", "a.sqlite", "b.sqlite", "--records-only"], in: dir)
        #expect(diff.status == 0, "\(diff.stdout)\(diff.stderr)")
    }

    /// A first pull stages the state's snapshot beside its save; when the disk fills, neither the store nor the
    /// directory keeps anything of it, and the next sync pulls every record once.
    @Test func diskFullDuringFirstPullLeavesNoStagingAndTheNextSyncCompletes() throws {
        let dir = try TemporaryDirectory("sync-disk-full-first")
        let remote = "file://\(try dir.directory("share").path)"
        let model = PackagePaths.libraryModel.path
        try ok(["create", "a.sqlite", "--model", model, "--quiet"], in: dir)
        let ids = try importAuthors(into: "a.sqlite", in: dir)
        try ok(["sync", "a.sqlite", "--remote", remote, "--container", "full", "--quiet"], in: dir)
        try ok(["create", "b.sqlite", "--model", "a.sqlite", "--quiet"], in: dir)
        // Room for the state's snapshot (as large as a's, which holds the same records), not for the pull's save:
        // the snapshot is staged and the save fails.
        let snapshot = (try FileManager.default.attributesOfItem(atPath: dir.path("a.sqlite.storesync").path)[.size] as? Int) ?? 0
        let store = (try FileManager.default.attributesOfItem(atPath: dir.path("a.sqlite").path)[.size] as? Int) ?? 0
        try #require(snapshot > 0 && store > snapshot + 262_144, "a's files: store \(store) bytes, state log \(snapshot)")
        let blocks = (snapshot + 65_536) / 512
        let storectl = try BuiltTools.require(BuiltTools.storectl, "storectl")
        let limited = try Child(URL(fileURLWithPath: "/bin/sh"),
                                ["-c", "trap '' XFSZ; ulimit -f \(blocks); exec \"$0\" sync b.sqlite --remote \(remote) --container full",
                                 storectl.path],
                                directory: dir.url)
        limited.wait()
        #expect(!limited.killedBySignal, "storectl was killed by a signal: \(limited.stderr)")
        #expect(limited.status != 0, "the pull fit under the limit; the test proved nothing: \(limited.stdout)")
        #expect(!limited.stderr.contains("Fatal error"), "\(limited.stderr)")
        let staging = try FileManager.default.contentsOfDirectory(atPath: dir.url.path).filter { $0.hasPrefix(".storeapi-staging-") }
        #expect(staging.isEmpty, "left behind: \(staging)")
        #expect(try authors("b.sqlite", in: dir).isEmpty)
        try ok(["verify", "b.sqlite", "--quiet"], in: dir)

        try ok(["sync", "b.sqlite", "--remote", remote, "--container", "full", "--quiet"], in: dir)
        let after = try authors("b.sqlite", in: dir)
        #expect(after.count == ids.count && after.values.allSatisfy { $0 == 1 }, "\(after.count) authors")
        #expect(Set(after.keys) == ids, "records were lost")
        // The state written by that pull reads back: a sync has nothing more to pull.
        let again = try Child.storectl(["sync", "b.sqlite", "--json"], in: dir)
        try #require(again.status == 0, "\(again.stderr)")
        let report = try JSONSerialization.jsonObject(with: Data(again.stdout.utf8)) as? [String: Any]
        #expect(report?["pulledFiles"] as? Int == 0 && report?["insertedRecords"] as? Int == 0, "\(again.stdout)")
    }

    /// Imports 8,000 authors with long names into `store`; their global IDs.
    private func importAuthors(into store: String, in dir: TemporaryDirectory) throws -> Set<String> {
        var lines: [String] = []
        var ids = Set<String>()
        for i in 0..<8_000 {
            let id = UUID().uuidString
            ids.insert(id)
            lines.append(#"{"entity":"Author","id":"\#(id)","attributes":{"name":"author \#(i) \#(String(repeating: "n", count: 80))"}}"#)
        }
        let file = try dir.write(lines.joined(separator: "\n"), to: "authors.ndjson")
        try ok(["import", store, file.path, "--upsert", "--quiet"], in: dir)
        return ids
    }

    /// How many times each author's global ID is in the store.
    private func authors(_ store: String, in dir: TemporaryDirectory) throws -> [String: Int] {
        let exported = try Child.storectl(["export", store, "--entity", "Author", "--quiet"], in: dir)
        try #require(exported.status == 0, "\(exported.stderr)")
        var seen: [String: Int] = [:]
        for line in exported.stdout.split(separator: "\n") {
            guard let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                  object["entity"] as? String == "Author", let id = object["id"] as? String else { continue }
            seen[id, default: 0] += 1
        }
        return seen
    }

    private func ok(_ arguments: [String], in dir: TemporaryDirectory, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let child = try Child.storectl(arguments, in: dir)
        try #require(child.status == 0, "storectl \(arguments.joined(separator: " ")): \(child.stderr)", sourceLocation: sourceLocation)
    }
}
