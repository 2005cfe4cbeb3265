import CSQLite
import Foundation
import SQLiteBackend
@_spi(BackendKit) import StoreAPI
import StoreTestSupport
import Testing

/// Stores whose history was written as JSON, before history was stored in its binary encoding, keep opening and
/// their history keeps reading — beside transactions appended since; a damaged entry is the store's corruption.
@Suite struct SQLiteLegacyHistoryTests {
    /// Replaces the stored bytes of history entry `token` in a closed store, as another program could.
    static func setHistory(_ url: URL, token: Int64, to bytes: Data) throws {
        var db: OpaquePointer?
        defer { sqlite3_close(db) }
        var s: OpaquePointer?
        defer { sqlite3_finalize(s) }
        guard sqlite3_open_v2(url.path, &db, SQLITE_OPEN_READWRITE, nil) == SQLITE_OK,
              sqlite3_prepare_v2(db, "UPDATE _storeapi_history SET json = ? WHERE token = ?", -1, &s, nil) == SQLITE_OK
        else { throw StoreError.io(url, operation: "editing", reason: String(cString: sqlite3_errmsg(db))) }
        _ = bytes.withUnsafeBytes { sqlite3_bind_blob(s, 1, $0.baseAddress, Int32($0.count), nil) }
        sqlite3_bind_int64(s, 2, token)
        guard sqlite3_step(s) == SQLITE_DONE, sqlite3_changes(db) == 1 else {
            throw StoreError.io(url, operation: "editing", reason: "no history entry \(token)")
        }
    }

    static func saveTags(_ coordinator: StoreCoordinator, _ names: [String], author: String) throws {
        let context = coordinator.newContext()
        context.author = author
        for n in names { _ = try context.insert("Tag", ["name": .string(n)]) }
        try context.save()
    }

    @Test func historyWrittenAsJSONReadsBesideNewHistory() throws {
        let dir = try TemporaryDirectory("sqlite-legacy-history")
        let url = dir.path("legacy.sqlite")
        let schema = try Fixture.schema()
        let description = StoreDescription(url: url, type: "sqlite", options: StoreOptions(historyTracking: true))
        let registry = BackendRegistry()
        registry.register(SQLiteStoreBackend())
        var written: [HistoryTransaction] = []
        do {
            let coordinator = StoreCoordinator(schema: schema, registry: registry)
            let loaded = try coordinator.addStore(description)
            let context = coordinator.newContext()
            context.author = "first"
            let tag = try context.insert("Tag", ["name": .string("a")])
            let book = try context.insert("Book", ["isbn": .string("978-3")])
            try context.save()
            context.author = nil
            try tag.setValue(.string("a2"), forKey: "name")
            try context.delete(book)
            try context.save()
            written = try loaded.store.history(after: nil)
            try coordinator.removeStore(loaded)
        }
        #expect(written.map(\.changes.count) == [2, 2])
        #expect(written.last?.changes.map(\.kind).sorted { "\($0)" < "\($1)" } == [.delete, .update])
        #expect(written.last?.changes.first { $0.kind == .delete }?.tombstone == ["isbn": "978-3"])
        #expect(written.first?.processName != nil)
        // The store as an earlier version left it: every entry its JSON.
        for t in written { try Self.setHistory(url, token: t.token, to: try t.legacyJSONEncoded()) }

        let coordinator = StoreCoordinator(schema: schema, registry: registry)
        let loaded = try coordinator.addStore(description)
        #expect(try loaded.store.history(after: nil) == written)
        try Self.saveTags(coordinator, ["c"], author: "later")
        let all = try loaded.store.history(after: nil)
        #expect(Array(all.prefix(2)) == written)
        #expect(all.count == 3 && all.last?.author == "later" && all.last?.changes.map(\.kind) == [.insert])
        #expect(try loaded.store.history(after: written[1].token).map(\.author) == ["later"])
        try coordinator.removeStore(loaded)
    }

    @Test func aDamagedEntryIsTheStoresCorruption() throws {
        let dir = try TemporaryDirectory("sqlite-legacy-history")
        let url = dir.path("damaged.sqlite")
        let schema = try Fixture.schema()
        let store = try Fixture.open(url, schema: schema)
        let t = HistoryTransaction(token: HistoryTransaction.assignToken, timestamp: Date(), author: "me", changes: [
            HistoryChange(kind: .insert, entity: "Tag", primaryKey: 1, globalID: UUID())])
        try store.save(StoreChanges(history: [t]))
        try store.close()
        let good = try t.encoded()
        try Self.setHistory(url, token: 1, to: good.prefix(good.count - 3))
        let reopened = try SQLiteStoreBackend().open(at: url, options: StoreOptions(), creating: nil)
        defer { try? reopened.close() }
        #expect {
            try reopened.history(after: nil)
        } throws: { error in
            guard case StoreError.corruptStore(let at, let reason) = error else { return false }
            return at.standardizedFileURL.path == url.standardizedFileURL.path && reason.contains("history")
        }
    }
}
