import Foundation
import StoreAPI
@testable import StoreSync
import StoreSyncPostgres
import StoreTestSupport
import Testing

/// History purge through the PostgreSQL remote: peers acknowledge what they applied, history goes only below the
/// lowest acknowledgement, and a peer below the purge horizon re-baselines without duplicating a record.
@Suite("Sync history purge", .enabled(if: PostgresTestServer.isAvailable, PostgresTestServer.skipReason))
struct SyncPurgeTests {
    private func names(_ n: Int, _ label: String) -> [[String: StoreValue]] {
        (0..<n).map { ["name": .string("\(label) \($0)"), "born": .integer32(Int32($0))] }
    }

    private func insert(_ r: Replica, _ values: [[String: StoreValue]]) throws {
        let c = r.context()
        for v in values { try c.insert("Author", v) }
        try c.save()
    }

    @Test func historyIsPurgedOnlyBelowWhatEveryPeerAcknowledged() async throws {
        let dir = try TemporaryDirectory("sync-purge-acks")
        let url = try PostgresTestServer.shared().storeURL("purge")
        func remote() throws -> PostgresRemote { try PostgresRemote(url: url, container: "c") }
        let a = try Replica(dir.path("a.sqlite"), type: "sqlite", remote: try remote())
        let b = try Replica(dir.path("b.lmdb"), type: "lmdb", remote: try remote())
        let c = try Replica(dir.path("c.xml"), type: "xml", remote: try remote())
        try insert(a, names(10, "first"))
        for r in [a, b, c] { try await r.sync() }
        let acks = try await remote().acknowledgements()
        #expect(acks.count == 3, "every peer acknowledged its pull")
        // c goes offline; the others carry on.
        try insert(a, names(5, "second"))
        try await a.sync()
        try await b.sync()
        let cPeer = try #require(try c.engine.status().peer)
        let cAck = try #require(acks[cPeer])
        let aPeer = try #require(try a.engine.status().peer)
        let purged = try await a.engine.purgeHistory()
        #expect(purged == 1, "only the file every peer had applied went: a's first")
        let after = try await remote().list(after: nil).names
        #expect(!after.contains(ChangeFileName(peer: aPeer, sequence: 1)))
        #expect(after.contains(ChangeFileName(peer: aPeer, sequence: 2)), "what c has not applied stays")
        #expect(after.contains(ChangeFileName(peer: aPeer, sequence: 3)), "beside the baseline")
        // c reads on from its cursor.
        #expect(try await remote().list(after: cAck).names.count > 0)
        let cs = try await c.sync()
        #expect(!cs.rebaselined)
        #expect(try c.count("Author") == 15)
        // A peer that attaches after the purge starts from the baseline: everything, once.
        let d = try Replica(nil, type: "memory", remote: try remote())
        try await d.sync()
        #expect(try d.count("Author") == 15)
        for r in [b, c, d] { try await r.sync() }
        try await a.sync()
        for r in [b, c, d] { #expect(try a.differences(from: r).isIdentical) }
    }

    @Test func aPeerBelowThePurgeHorizonRebaselinesWithoutDuplicating() async throws {
        let dir = try TemporaryDirectory("sync-purge-rebaseline")
        let url = try PostgresTestServer.shared().storeURL("purge")
        func remote() throws -> PostgresRemote { try PostgresRemote(url: url, container: "c") }
        let a = try Replica(dir.path("a.sqlite"), type: "sqlite", remote: try remote())
        let b = try Replica(dir.path("b.lmdb"), type: "lmdb", remote: try remote())
        try insert(a, names(20, "shared"))
        try await a.sync()
        try await b.sync()
        #expect(try b.count("Author") == 20)
        // b goes away; a changes, inserts and deletes, then forgets b and purges everything it has applied.
        let ctx = a.context()
        let authors = try ctx.fetch(FetchRequest(entity: "Author")).sorted { $0.globalID.uuidString < $1.globalID.uuidString }
        try authors[0].setValue(.string("renamed"), forKey: "name")
        try ctx.delete(authors[1])
        try ctx.delete(authors[2])
        try ctx.save()
        try insert(a, names(5, "later"))
        try await a.sync()
        try await remote().forget(peer: try #require(b.engine.status().peer))
        #expect(try await a.engine.purgeHistory() > 0)
        // b comes back with a change of its own.
        let mine = try b.insert("Author", ["name": "b's own"])
        let report = try await b.sync()
        #expect(report.rebaselined, "its cursor was below the purge horizon")
        try await a.sync()
        #expect(try b.count("Author") == 20 - 2 + 5 + 1, "nothing duplicated, the deletions applied")
        #expect(try a.value(mine, "name") == .string("b's own"), "b's change still went out")
        #expect(try b.value(authors[0].globalID, "name") == .string("renamed"))
        try await b.sync()
        #expect(try a.differences(from: b).isIdentical)
        // The folder remote keeps no acknowledgements: purging there is refused, not guessed.
        let folder = try Replica(dir.path("f.sqlite"), type: "sqlite",
                                 remote: try FolderRemote(directory: try dir.directory("share"), container: "c"))
        await #expect(throws: SyncError.self) { _ = try await folder.engine.purgeHistory() }
    }
}
