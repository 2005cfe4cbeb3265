import Foundation
import PostgresBackend
@_spi(BackendKit) import StoreAPI
import StoreTestSupport
import Testing

/// A PostgreSQL store takes locks for its clients on the server: one client at a time per store and name, whichever
/// connection or process asks, released with the lock or with the store that holds it.
@Suite(.enabled(if: PostgresTestServer.isAvailable, PostgresTestServer.skipReason))
struct PostgresClientLockTests {
    @Test func oneClientAtATimePerStoreAndName() throws {
        let schema = try Schema(entities: [EntityDescription(name: "Item", attributes: [AttributeDescription(name: "name", type: .string)])])
        let metadata = StoreMetadata(storeType: "postgres", schema: schema)
        let backend = PostgresStoreBackend()
        let url = try PostgresTestServer.shared().storeURL("client-lock")
        let other = try PostgresTestServer.shared().storeURL("client-lock")
        let first = try backend.open(at: url, options: StoreOptions(), creating: metadata)
        let second = try backend.open(at: url, options: StoreOptions(), creating: nil)
        let elsewhere = try backend.open(at: other, options: StoreOptions(), creating: metadata)
        defer {
            for s in [first, second, elsewhere] { try? s.close() }
            try? backend.destroyStore(at: url)
            try? backend.destroyStore(at: other)
        }
        let a = try #require(first as? any ClientLockingStore, "a PostgreSQL store takes client locks")
        let b = try #require(second as? any ClientLockingStore)
        let c = try #require(elsewhere as? any ClientLockingStore)

        let held = try #require(try a.tryClientLock(named: "sync"))
        #expect(try b.tryClientLock(named: "sync") == nil, "the same store's lock is taken, from another connection too")
        #expect(try a.tryClientLock(named: "sync") == nil, "and from the store that holds it")
        let otherName = try #require(try b.tryClientLock(named: "other"), "another name is another lock")
        let otherStore = try #require(try c.tryClientLock(named: "sync"), "another store's lock is its own")
        held.release()
        held.release()
        let next = try #require(try b.tryClientLock(named: "sync"), "released, the lock is free")
        // Saves never wait for a client lock.
        try first.save(StoreChanges(inserted: [Record(entity: "Item", primaryKey: try first.allocatePrimaryKeys(root: "Item", count: 1),
                                                      globalID: UUID(), attributes: ["saved"], relationships: [])]))
        for l in [next, otherName, otherStore] { l.release() }
    }
}
