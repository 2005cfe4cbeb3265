import Foundation
import LMDBBackend
import StoreAPI
import StoreTestSupport
import Testing

/// Stores whose history was written as JSON, before history was stored in its binary encoding, keep opening, their
/// history keeps reading beside transactions appended since, and the integrity check accepts both.
@Suite struct LMDBLegacyHistoryTests {
    @Test func historyWrittenAsJSONReadsBesideNewHistory() throws {
        let dir = try TemporaryDirectory("lmdb-legacy-history")
        let schema = try LMDBFixture.schema()
        let url = dir.path("legacy.lmdb")
        let store = try LMDBFixture.create(url, schema: schema)
        let tag = schema.record("Tag", 1, ["name": "t"])
        let t0 = Date(timeIntervalSinceReferenceDate: 1000.5)
        let written = [
            HistoryTransaction(token: 1, timestamp: t0, author: "me", contextName: "editor", processName: "app",
                               bundleIdentifier: "com.example", changes: [
                                   HistoryChange(kind: .insert, entity: "Tag", primaryKey: 1, globalID: tag.globalID)]),
            HistoryTransaction(token: 2, timestamp: t0, author: nil, changes: [
                HistoryChange(kind: .update, entity: "Tag", primaryKey: 1, globalID: tag.globalID, changedKeys: ["name"]),
                HistoryChange(kind: .delete, entity: "Tag", primaryKey: 1, globalID: tag.globalID, tombstone: ["name": "t"]),
            ]),
        ]
        try store.save(StoreChanges(inserted: [tag], history: written))
        try store.close()
        // The store as an earlier version left it: every entry its JSON.
        try RawLMDB.write(url) { txn, open in
            let history = try open("storeapi.history")
            for t in written { try RawLMDB.put(txn, history, RawLMDB.key(t.token), Array(try t.legacyJSONEncoded())) }
        }

        let reopened = try LMDBFixture.open(url)
        #expect(try reopened.history(after: nil) == written)
        let later = HistoryTransaction(token: HistoryTransaction.assignToken, timestamp: t0, author: "later", changes: [])
        try reopened.save(StoreChanges(history: [later]))
        #expect(try reopened.history(after: nil).map(\.author) == ["me", nil, "later"])
        #expect(try reopened.history(after: 2).map(\.token) == [3])
        try reopened.close()
        #expect(try LMDBFixture.backend.checkIntegrity(at: url) == [])

        // A damaged entry: the integrity check names it, a read is the store's corruption.
        try RawLMDB.write(url) { txn, open in
            try RawLMDB.put(txn, try open("storeapi.history"), RawLMDB.key(2), [0xB1, 0x04, 0x00])
        }
        #expect(try LMDBFixture.backend.checkIntegrity(at: url).contains { $0.contains("history: entry 2 is unreadable") })
        let damaged = try LMDBFixture.open(url)
        defer { try? damaged.close() }
        #expect {
            try damaged.history(after: nil)
        } throws: { error in
            guard case StoreError.corruptStore(_, let reason) = error else { return false }
            return reason.contains("history")
        }
    }
}
