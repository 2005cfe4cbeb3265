import Foundation
import StoreAPI
import StoreTestSupport
import Testing

/// `storectl sync` and `storectl import --upsert` through the real binary: two stores on two paths syncing
/// through a folder, as the README shows.
@Suite("storectl sync")
struct StorectlSyncTests {
    @discardableResult
    private func run(_ arguments: [String], in dir: TemporaryDirectory, stdin: URL? = nil,
                     sourceLocation: SourceLocation = #_sourceLocation) throws -> Child {
        let child = try Child.storectl(arguments, in: dir, stdin: stdin)
        #expect(child.status == 0, "storectl \(arguments.joined(separator: " ")): \(child.stderr)", sourceLocation: sourceLocation)
        return child
    }

    private func json(_ child: Child) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(child.stdout.utf8)) as? [String: Any], "\(child.stdout)")
    }

    @Test func twoStoresSyncThroughAFolderAndUpsertsReachTheOther() throws {
        let dir = try TemporaryDirectory("storectl-sync")
        let share = try dir.directory("share")
        let model = PackagePaths.libraryModel.path
        // The same seed data on two machines: the same records, the same global IDs. (Lines without an id would get
        // a new global ID on each machine: distinct records, which sync keeps apart.)
        let lines = try String(contentsOf: PackagePaths.libraryData, encoding: .utf8).split(separator: "\n").filter { $0.contains("\"id\"") }
        let data = try dir.write(lines.joined(separator: "\n"), to: "seed.ndjson").path
        try run(["create", "a.sqlite", "--model", model, "--import", data, "--quiet"], in: dir)
        try run(["create", "b.lmdb", "--model", model, "--import", data, "--quiet"], in: dir)
        let remote = "file://\(share.path)"

        let first = try json(try run(["sync", "a.sqlite", "--remote", remote, "--container", "library", "--json"], in: dir))
        #expect(first["pushedRecords"] as? Int == lines.count)
        #expect(first["attached"] as? Bool == true)
        let second = try json(try run(["sync", "b.lmdb", "--remote", remote, "--container", "library", "--json"], in: dir))
        #expect(second["pushedRecords"] as? Int == 0, "the remote already holds every record")
        #expect(second["insertedRecords"] as? Int == 0, "not a single duplicate")

        // Every kind of change, scripted: an update, a delete and an insert.
        let book = "EF4FCA33-DF3E-436C-A5CC-E79720D622FE"
        let other = "F0DFA884-BDB5-4D1D-B4CD-D34AAAEB2F03"
        let newTag = UUID().uuidString
        let changes = try dir.write("""
            {"entity":"Book","id":"\(book)","attributes":{"title":"Paper, revised","pages":800},"relationships":{"tags":["\(newTag)"]}}
            {"entity":"Book","id":"\(other)","delete":true}
            {"entity":"Tag","id":"\(newTag)","attributes":{"name":"synced-tag"}}
            """, to: "changes.ndjson")
        let upsert = try run(["import", "a.sqlite", changes.path, "--upsert"], in: dir)
        #expect(upsert.stderr.contains("1 inserted, 1 updated, 1 deleted"), "\(upsert.stderr)")

        let push = try json(try run(["sync", "a.sqlite", "--json"], in: dir))
        #expect(push["pushedRecords"] as? Int ?? 0 >= 3)
        let pull = try json(try run(["sync", "b.lmdb", "--json"], in: dir))
        #expect(pull["insertedRecords"] as? Int == 1)
        #expect(pull["deletedRecords"] as? Int == 1)
        #expect(pull["updatedRecords"] as? Int ?? 0 >= 1)
        let diff = try Child.storectl(["diff", "a.sqlite", "b.lmdb", "--records-only"], in: dir)
        #expect(diff.status == 0, "\(diff.stdout)\(diff.stderr)")

        let status = try json(try run(["sync", "a.sqlite", "--status", "--json"], in: dir))
        #expect(status["isAttached"] as? Bool == true)
        #expect(status["pendingTransactions"] as? Int == 0)
        let text = try run(["sync", "a.sqlite", "--status"], in: dir)
        #expect(text.stdout.contains("container 'library'"))
        #expect(text.stdout.contains("last exchange:") && !text.stdout.contains("none yet"), "\(text.stdout)")
        // info shows the engine's state in metadata cut to one readable line; --json has it whole.
        let info = try run(["info", "a.sqlite"], in: dir).stdout
        let stateLine = try #require(info.split(separator: "\n").first { $0.contains("storesync.state = ") }, "\(info)")
        #expect(stateLine.count < 160 && stateLine.hasSuffix("characters; --json shows all)"), "\(stateLine)")
        #expect(info.contains("a.sqlite.storesync"), "info lists the sync log with the store's files: \(info)")
        let infoJSON = try json(try run(["info", "a.sqlite", "--json"], in: dir))
        let custom = try #require(infoJSON["custom"] as? [String: Any], "\(infoJSON.keys)")
        #expect("\(custom["storesync.state"] ?? "")".count > 160)

        // A plain import into a synced store is recorded, so the next sync pushes it.
        let more = try dir.write("""
            {"entity":"Tag","attributes":{"name":"imported later"}}
            """, to: "more.ndjson")
        try run(["import", "a.sqlite", more.path, "--quiet"], in: dir)
        let pending = try json(try run(["sync", "a.sqlite", "--status", "--json"], in: dir))
        #expect(pending["pendingTransactions"] as? Int == 1)

        // A new, empty peer pulls every record; its report groups thousands, as every other storectl count does.
        try run(["create", "c.lmdb", "--model", model, "--quiet"], in: dir)
        let fresh = try run(["sync", "c.lmdb", "--remote", remote, "--container", "library"], in: dir)
        let report = fresh.stdout + fresh.stderr
        #expect(report.contains(try Regex(#"pulled [0-9]+ files?: [0-9],[0-9]{3} inserted, 0 updated, 0 deleted"#)), "\(report)")

        // Destroy removes the sync log and lock with the store, and says so.
        let destroyed = try run(["destroy", "b.lmdb"], in: dir)
        #expect(destroyed.stderr.contains("b.lmdb.storesync") && destroyed.stderr.contains("b.lmdb.storesync.lock"),
                "\(destroyed.stderr)")
        for leftover in ["b.lmdb", "b.lmdb.storesync", "b.lmdb.storesync.lock"] {
            #expect(!FileManager.default.fileExists(atPath: dir.path(leftover).path), "\(leftover) is left")
        }
    }

    /// A store on the PostgreSQL server and a file store syncing through a PostgreSQL remote, from the command line.
    @Test(.enabled(if: PostgresTestServer.isAvailable, PostgresTestServer.skipReason))
    func aServerStoreAndAFileStoreSyncThroughPostgres() throws {
        let dir = try TemporaryDirectory("storectl-sync-pg")
        let server = try PostgresTestServer.shared()
        let store = server.storeURL("store").absoluteString
        let remote = server.storeURL("remote").absoluteString
        let model = PackagePaths.libraryModel.path
        try run(["create", "a.sqlite", "--model", model, "--import", PackagePaths.libraryData.path, "--quiet"], in: dir)
        // The same records on the server (a convert keeps global IDs), before either store syncs.
        try run(["convert", "a.sqlite", store, "--quiet"], in: dir)

        let first = try json(try run(["sync", "a.sqlite", "--remote", remote, "--container", "library", "--json"], in: dir))
        #expect(first["attached"] as? Bool == true)
        #expect(first["pushedRecords"] as? Int ?? 0 > 2_000)
        let second = try json(try run(["sync", store, "--remote", remote, "--container", "library", "--json"], in: dir))
        #expect(second["attached"] as? Bool == true)
        #expect(second["insertedRecords"] as? Int == 0, "not a single duplicate")
        #expect(second["pushedRecords"] as? Int == 0, "the remote already holds every record")
        #expect(!(second["remote"] as? String ?? "").contains("password"))

        let tag = UUID().uuidString
        let change = try dir.write(#"{"entity":"Tag","id":"\#(tag)","attributes":{"name":"from the server"}}"#, to: "tag.ndjson")
        try run(["import", store, change.path, "--upsert", "--quiet"], in: dir)
        let back = try json(try run(["sync", store, "--json"], in: dir))
        #expect(back["pushedRecords"] as? Int == 1)
        let pulled = try json(try run(["sync", "a.sqlite", "--json"], in: dir))
        #expect(pulled["insertedRecords"] as? Int == 1)
        let diff = try Child.storectl(["diff", "a.sqlite", store, "--records-only"], in: dir)
        #expect(diff.status == 0, "\(diff.stdout)\(diff.stderr)")
        let status = try json(try run(["sync", store, "--status", "--json"], in: dir))
        #expect(status["isAttached"] as? Bool == true && status["pendingTransactions"] as? Int == 0)
        let again = try json(try run(["sync", store, "--json"], in: dir))
        #expect(again["becameNewPeer"] as? Bool == false && again["pushedRecords"] as? Int == 0,
                "a server store is the same peer on every sync")
    }

    /// An app's Core Data store (MagicalRecord's Recipes sample, as Core Data wrote it) keeps the remote it was
    /// attached to, so later syncs need no options; a conversion of it is a copy that becomes a new peer.
    @Test func coreDataStoreKeepsItsRemote() throws {
        guard let corpus = PackagePaths.corpus("stores/magicalpanda__MagicalRecord__Recipes.sqlite") else {
            Issue.record("corpus not found at ../shared/corpus; skipped")
            return
        }
        let dir = try TemporaryDirectory("storectl-sync-coredata")
        let share = try dir.directory("share")
        let store = dir.path("Recipes.sqlite")
        try Data(contentsOf: corpus).write(to: store)
        let first = try json(try run(["sync", store.path, "--remote", "file://\(share.path)", "--container", "recipes", "--json"], in: dir))
        #expect(first["attached"] as? Bool == true && first["pushedRecords"] as? Int == 50)
        let status = try json(try run(["sync", store.path, "--status", "--json"], in: dir))
        #expect(status["isAttached"] as? Bool == true, "the Core Data store keeps its sync options: \(status)")
        #expect(try run(["info", store.path], in: dir).stdout.contains("Sync:        file://\(share.path)"))

        try run(["convert", store.path, "copy.lmdb", "--quiet"], in: dir)
        let copy = try json(try run(["sync", "copy.lmdb", "--json"], in: dir))
        #expect(copy["becameNewPeer"] as? Bool == true && copy["insertedRecords"] as? Int == 0, "\(copy)")
        let again = try json(try run(["sync", store.path, "--json"], in: dir))
        #expect(again["pushedRecords"] as? Int == 0 && again["becameNewPeer"] as? Bool == false, "\(again)")
        let diff = try Child.storectl(["diff", store.path, "copy.lmdb", "--records-only"], in: dir)
        #expect(diff.status == 0, "\(diff.stdout)\(diff.stderr)")
    }

    @Test func detachAndMisuseAreClearErrors() throws {
        let dir = try TemporaryDirectory("storectl-sync-errors")
        let share = try dir.directory("share")
        try run(["create", "a.sqlite", "--model", PackagePaths.libraryModel.path, "--quiet"], in: dir)
        let absent = try Child.storectl(["sync", "new.lmdb", "--remote", share.path], in: dir)
        #expect(absent.status == 2 && absent.stderr.contains("no store there; create the new peer first")
            && absent.stderr.contains("storectl create new.lmdb --model PEER"), "\(absent.stderr)")
        #expect(!FileManager.default.fileExists(atPath: dir.path("new.lmdb").path))
        let never = try Child.storectl(["sync", "a.sqlite"], in: dir)
        #expect(never.status == 2 && never.stderr.contains("has no remote yet"), "\(never.stderr)")
        let missing = try Child.storectl(["sync", "a.sqlite", "--remote", dir.path("not-mounted").path, "--timeout", "5"], in: dir)
        #expect(missing.status == 2 && missing.stderr.contains("does not exist or is not reachable"), "\(missing.stderr)")
        try run(["sync", "a.sqlite", "--remote", share.path, "--container", "one", "--quiet"], in: dir)
        let other = try Child.storectl(["sync", "a.sqlite", "--remote", share.path, "--container", "two"], in: dir)
        #expect(other.status == 2 && other.stderr.contains("--detach it first"), "\(other.stderr)")
        try run(["sync", "a.sqlite", "--detach", "--quiet"], in: dir)
        let status = try json(try run(["sync", "a.sqlite", "--status", "--json"], in: dir))
        #expect(status["isAttached"] as? Bool == false)
        try run(["sync", "a.sqlite", "--remote", share.path, "--container", "two", "--quiet"], in: dir)
        let bad = try dir.write("""
            {"entity":"Book","id":"\(UUID().uuidString)","delete":true}
            {"entity":"Nope"}
            """, to: "bad.ndjson")
        let rejected = try Child.storectl(["import", "a.sqlite", bad.path, "--upsert"], in: dir)
        #expect(rejected.status == 2 && rejected.stderr.contains("bad.ndjson:2"), "\(rejected.stderr)")
    }
}
