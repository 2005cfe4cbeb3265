import Foundation
@testable import PostgresBackend
import StoreAPI
import StoreTestSupport
import Testing

/// Stores whose history was written as JSON (in the same `bytea` column), before history was stored in its binary
/// encoding, keep opening and their history keeps reading beside transactions appended since; a damaged entry is
/// the store's corruption.
@Suite(.enabled(if: PostgresTestServer.isAvailable, PostgresTestServer.skipReason))
struct PostgresLegacyHistoryTests {
    @Test func historyWrittenAsJSONReadsBesideNewHistory() throws {
        let url = try PostgresTestServer.shared().storeURL("legacyhistory")
        defer { try? PostgresStoreBackend().destroyStore(at: url) }
        let schema = try Schema(entities: [
            EntityDescription(name: "Note", attributes: [AttributeDescription(name: "title", type: .string)],
                              uniquenessConstraints: [["title"]]),
        ])
        let registry = BackendRegistry(backends: [PostgresStoreBackend()])
        let description = StoreDescription(url: url, type: PostgresStoreBackend.typeIdentifier,
                                           options: StoreOptions(historyTracking: true))
        let coordinator = StoreCoordinator(schema: schema, registry: registry)
        let loaded = try coordinator.addStore(description)
        let context = coordinator.newContext()
        context.author = "first"
        let note = try context.insert("Note", ["title": "a"])
        try context.save()
        try context.delete(note)
        try context.save()
        let written = try loaded.store.history(after: nil)
        try coordinator.removeStore(loaded)
        #expect(written.count == 2 && written.last?.changes.first?.tombstone == ["title": "a"])

        // The store as an earlier version left it: every entry its JSON.
        let location = try PostgresLocation(url)
        let admin = try PostgresConnection(location, connectTimeout: 5)
        defer { admin.close() }
        let table = "\"\(location.schema)\".\"_storeapi_history\""
        for t in written {
            try admin.execute("UPDATE \(table) SET json = $1::bytea WHERE token = $2",
                              [PostgresValueCodec.hex(try t.legacyJSONEncoded()), String(t.token)])
        }

        let reopened = StoreCoordinator(schema: schema, registry: registry)
        let again = try reopened.addStore(description)
        #expect(try again.store.history(after: nil) == written)
        let later = reopened.newContext()
        later.author = "later"
        try later.insert("Note", ["title": "b"])
        try later.save()
        let all = try again.store.history(after: nil)
        #expect(Array(all.prefix(2)) == written && all.count == 3 && all.last?.author == "later")

        // A damaged entry is the store's corruption.
        try admin.execute("UPDATE \(table) SET json = '\\xb1ff'::bytea WHERE token = $1", [String(written[0].token)])
        #expect {
            try again.store.history(after: nil)
        } throws: { error in
            guard case StoreError.corruptStore(_, let reason) = error else { return false }
            return reason.contains("history")
        }
        try reopened.removeStore(again)
    }
}
