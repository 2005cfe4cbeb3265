import Foundation
import StoreAPI
import StoreModels
import StoreSync
import StoreTestSupport
import Testing

/// Typed models sync as any store does: a `ModelStore` opened from a description with sync options, a `SyncEngine`
/// over its coordinator, and observations that see what a pull brings.
@Suite("Typed models sync")
struct TypedSyncTests {
    /// A store of the test models in `dir`, attached to the folder remote `share`.
    static func peer(_ name: String, type: String, in dir: TemporaryDirectory, share: URL) throws -> (ModelStore, SyncEngine) {
        var description = StoreDescription(url: dir.path(name), type: type)
        description.options.historyTracking = true
        description.syncOptions = SyncOptions(remote: share, containerIdentifier: "books")
        let db = try ModelStore(for: allModels, description: description, registry: StoreKind.registry)
        let store = try #require(db.coordinator.stores.first)
        return (db, try SyncEngine(store: store, coordinator: db.coordinator))
    }

    @Test("Books written on one peer reach the other's observation, linked to their author, once")
    func observedAcrossPeers() async throws {
        let dir = try TemporaryDirectory("typed-sync")
        let share = try dir.directory("share")
        let (a, syncA) = try Self.peer("a.sqlite", type: "sqlite", in: dir, share: share)
        let (b, syncB) = try Self.peer("b.lmdb", type: "lmdb", in: dir, share: share)
        try await a.write { tx in
            let author = try tx.insert(Author(name: "Ursula K. Le Guin"))
            try tx.insert(Book(title: "The Dispossessed", pages: 387, author: author.ref))
            try tx.insert(Book(title: "Lavinia", pages: 279, author: author.ref))
        }
        var changes = b.observe(Book.self, sortedBy: [.ascending(\.title)]).makeAsyncIterator()
        #expect(try await changes.next()?.results.isEmpty == true)

        let pushed = try await syncA.sync()
        #expect(pushed.pushedRecords == 3)
        let pulled = try await syncB.sync()
        #expect(pulled.insertedRecords == 3)
        let seen = try #require(try await changes.next())
        #expect(seen.results.map(\.title) == ["Lavinia", "The Dispossessed"])
        #expect(seen.inserted.count == 2)
        let authors = try await b.read { tx in try tx.fetch(Book.self).compactMap { try $0.author.flatMap { try tx.model($0) }?.name } }
        #expect(authors == ["Ursula K. Le Guin", "Ursula K. Le Guin"])

        // An edit on b comes back to a as an update of the same record, not a new one.
        try await b.write { tx in
            var book = try #require(try tx.fetch(Book.self, where: \.title == "Lavinia").first)
            book.pages = 280
            _ = try tx.update(book)
        }
        #expect(try await syncB.sync().pushedRecords == 1)
        #expect(try await syncA.sync().updatedRecords == 1)
        #expect(try await a.read { try $0.fetch(Book.self, sortedBy: [.ascending(\.title)]).map(\.pages) } == [280, 387])
        #expect(try await a.read { try $0.count(Book.self) } == 2)
        try a.close()
        try b.close()
    }
}
