import Foundation
import StoreAPI
@testable import StoreSync
import StoreTestSupport
import Synchronization
import Testing

/// A pull saves through the coordinator: its observers hear of what it applied, and merging contexts show it.
@Suite struct SyncObservationTests {
    @Test func pullIsReportedToObserversAndMerged() async throws {
        let dir = try TemporaryDirectory("sync-observe")
        let remote = InMemoryRemote()
        let a = try Replica(dir.path("a.sqlite"), type: "sqlite", remote: remote)
        let b = try Replica(dir.path("b.lmdb"), type: "lmdb", remote: remote)
        let id = try a.insert("Author", ["name": "Le Guin"])
        _ = try await a.sync()
        _ = try await b.sync()

        let received = Mutex<[SavedChanges]>([])
        let observation = b.coordinator.observeChanges { c in received.withLock { $0.append(c) } }
        defer { observation.cancel() }
        let merging = b.context()
        merging.automaticallyMergesChanges = true
        let seen = try #require(try b.object(id, in: merging))

        try a.update(id) { o, _ in try o.setValue("Ursula K. Le Guin", forKey: "name") }
        _ = try await a.sync()
        let report = try await b.sync()
        #expect(report.updatedRecords == 1)

        let heard = received.withLock { $0 }.filter { !$0.updated.isEmpty }
        #expect(heard.count == 1, "the pull's save is reported once")
        #expect(heard.first?.updated == [seen.objectID] && heard.first?.entities == ["Author"])
        _ = try merging.fetch(FetchRequest(entity: "Author"))
        #expect(try seen.value(forKey: "name") == "Ursula K. Le Guin", "a merging context shows the pulled change")
    }
}
