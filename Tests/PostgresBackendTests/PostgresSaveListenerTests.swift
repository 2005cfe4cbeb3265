import Foundation
import PostgresBackend
@_spi(BackendKit) import StoreAPI
import StoreTestSupport
import Testing

/// `NOTIFY` on save: a listener of a store hears each committed save of that store, not a rolled-back one, and not
/// another store's.
@Suite(.enabled(if: PostgresTestServer.isAvailable, PostgresTestServer.skipReason))
struct PostgresSaveListenerTests {
    static func coordinator(_ url: URL) throws -> StoreCoordinator {
        let schema = try Schema(entities: [
            EntityDescription(name: "Note", attributes: [AttributeDescription(name: "title", type: .string)], uniquenessConstraints: [["title"]]),
        ])
        let c = StoreCoordinator(schema: schema, registry: BackendRegistry(backends: [PostgresStoreBackend()]))
        try c.addStore(StoreDescription(url: url, type: PostgresStoreBackend.typeIdentifier))
        return c
    }

    @Test func listenerHearsCommittedSavesOfItsStore() throws {
        let server = try PostgresTestServer.shared()
        let url = server.storeURL("listen")
        let other = server.storeURL("listenother")
        defer { for u in [url, other] { try? PostgresStoreBackend().destroyStore(at: u) } }
        let writer = try Self.coordinator(url)
        let elsewhere = try Self.coordinator(other)
        let listener = try PostgresSaveListener(url: url)
        defer { listener.close() }
        #expect(try !listener.waitForSave(timeout: 0.2), "nothing saved yet")

        let ctx = writer.newContext()
        try ctx.insert("Note", ["title": "one"])
        try ctx.save()
        #expect(try listener.waitForSave(timeout: 5), "a committed save is heard")
        #expect(try !listener.waitForSave(timeout: 0.2), "each save is heard once")

        let away = elsewhere.newContext()
        try away.insert("Note", ["title": "elsewhere"])
        try away.save()
        #expect(try !listener.waitForSave(timeout: 0.3), "another store's save is not this store's")

        // A save the server refuses (a duplicate title, past the context's checks) is rolled back, and so is its
        // notification.
        let store = try #require(writer.stores.first?.store)
        let note = try store.metadata.schema.requireEntity("Note")
        let first = try store.allocatePrimaryKeys(root: "Note", count: 5)
        let records = ["a", "b", "c", "d", "one"].enumerated().map { i, t -> Record in
            var r = note.newRecord(primaryKey: first + Int64(i), globalID: UUID())
            r.attributes[0] = .string(t)
            return r
        }
        #expect(throws: StoreError.self) { try store.save(StoreChanges(inserted: records)) }
        #expect(try !listener.waitForSave(timeout: 0.3), "a rolled-back save is not announced")
    }
}
