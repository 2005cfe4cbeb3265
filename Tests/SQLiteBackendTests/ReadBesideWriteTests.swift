import Foundation
import SQLiteBackend
@_spi(BackendKit) import StoreAPI
import StoreTestSupport
import Synchronization
import Testing

/// A WAL store's fetches run on reader connections: they complete while the store's own connection holds a write
/// transaction open, and see the last commit.
@Suite struct ReadBesideWriteTests {
    static func schema() throws -> Schema {
        try Schema(entities: [
            EntityDescription(name: "Note", attributes: [AttributeDescription(name: "text", type: .string, isOptional: true)]),
        ])
    }

    @Test("Fetch, count and lookup by key complete while a save's transaction is open")
    func readsBesideOpenWriteTransaction() throws {
        let dir = try TemporaryDirectory("sqlite-read-beside-write")
        let coordinator = StoreCoordinator(schema: try Self.schema(), registry: BackendRegistry(backends: [SQLiteStoreBackend()]))
        let loaded = try coordinator.addStore(StoreDescription(url: dir.path("notes.sqlite"), type: "sqlite"))
        let context = coordinator.newContext()
        let note = try context.insert("Note", ["text": "committed"])
        try context.save()
        let key = note.objectID.primaryKey
        let store = try #require(loaded.store as? any PageInsertingStore)

        let entered = Atomic<Bool>(false)
        let release = Atomic<Bool>(false)
        // A write transaction held open: the page is asked for inside it, under the store's lock.
        let writer = Thread {
            try? store.insertPages(count: 1) { _ in
                entered.store(true, ordering: .releasing)
                let until = Date().addingTimeInterval(15)
                while !release.load(ordering: .acquiring), Date() < until { usleep(1_000) }
                return RecordPage(entity: "Note")
            }
        }
        writer.start()
        while !entered.load(ordering: .acquiring) { usleep(1_000) }

        let done = Atomic<Bool>(false)
        let results = Mutex<(Int, Int, Int)>((0, 0, 0))
        let reader = Thread {
            let fetched = (try? loaded.store.fetch(FetchRequest(entity: "Note")).count) ?? -1
            let counted = (try? loaded.store.count(FetchRequest(entity: "Note"))) ?? -1
            let byKey = (try? loaded.store.records(withKeys: [key], root: "Note").count) ?? -1
            results.withLock { $0 = (fetched, counted, byKey) }
            done.store(true, ordering: .releasing)
        }
        reader.start()
        let deadline = Date().addingTimeInterval(10)
        while !done.load(ordering: .acquiring), Date() < deadline { usleep(1_000) }
        let finished = done.load(ordering: .acquiring)
        release.store(true, ordering: .releasing)
        #expect(finished, "the reads waited for the write transaction")
        while !done.load(ordering: .acquiring) { usleep(1_000) }
        let (fetched, counted, byKey) = results.withLock { $0 }
        #expect(fetched == 1 && counted == 1 && byKey == 1, "the reads see the last commit")
        try coordinator.removeStore(loaded)
    }
}
