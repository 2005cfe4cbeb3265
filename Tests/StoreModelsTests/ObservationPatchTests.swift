import Foundation
import StoreAPI
import StoreModels
import StoreTestSupport
import Testing

/// A save of this process is applied to an observation's results without fetching them again when the results
/// depend on nothing but each record: what it emits must be exactly what a fetch returns, order included.
@Suite("Observation patched by saves")
struct ObservationPatchTests {
    /// What a test compares: each result's values and identity, in order.
    static func rows(_ books: [Book]) -> [String] {
        books.map { "\($0.persistentID?.description ?? "-") \($0.title) \($0.pages) \($0.genre.rawValue)" }
    }

    @Test("After every kind of write, the emitted results are what a fetch returns, ties in key order",
          arguments: StoreKind.allCases)
    func matchesFetch(kind: StoreKind) async throws {
        let dir = try TemporaryDirectory("typed-observe-patch")
        let db = try kind.open(in: dir)
        let predicate: ModelPredicate<Book> = \.pages >= 100 && \.pages < 400
        let sort: [ModelSort<Book>] = [.descending(\.genre), .ascending(\.pages)]
        var changes = db.observe(Book.self, where: predicate, sortedBy: sort).makeAsyncIterator()
        var shown = Self.rows(try #require(try await changes.next()).results)
        #expect(shown.isEmpty)

        // A fixed pseudo-random walk of inserts, updates (into, out of and within the results) and deletes; pages
        // repeat, so sort ties are common and broken by primary key.
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        func next(_ n: UInt64) -> Int {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Int((state >> 33) % n)
        }
        var stored: [Book] = []
        for step in 0..<60 {
            let choice = stored.isEmpty ? 0 : next(4)
            switch choice {
            case 0, 1:
                let book = Book(title: "b\(step)", pages: 50 * (1 + next(9)), genre: Genre.allCases[next(3)])
                stored.append(try await db.write { try $0.insert(book) })
            case 2:
                let i = next(UInt64(stored.count))
                var book = stored[i]
                book.pages = 50 * (1 + next(9))
                let changed = book
                stored[i] = try await db.write { try $0.update(changed) }
            default:
                let book = stored.remove(at: next(UInt64(stored.count)))
                try await db.write { try $0.delete(book) }
            }
            let fetched = Self.rows(try await db.read { try $0.fetch(Book.self, where: predicate, sortedBy: sort) })
            if fetched != shown {
                let emitted = try #require(try await changes.next())
                shown = Self.rows(emitted.results)
                #expect(shown == fetched, "step \(step)")
            }
        }
        // Several records in one write, and one that touches another entity too.
        try await db.write { tx in
            for i in 0..<5 { try tx.insert(Book(title: "batch\(i)", pages: 150, genre: .poetry)) }
            try tx.insert(Tag(label: "sf"))
        }
        let emitted = try #require(try await changes.next())
        #expect(Self.rows(emitted.results)
                == Self.rows(try await db.read { try $0.fetch(Book.self, where: predicate, sortedBy: sort) }))
        #expect(emitted.inserted.count == 5)
        try db.close()
    }

    @Test("A save is applied by reading back the records it names; a change behind the coordinator's back waits for refreshObservations()",
          arguments: StoreKind.allCases)
    func readsBackWhatASaveNames(kind: StoreKind) async throws {
        let dir = try TemporaryDirectory("typed-observe-patch-names")
        let url: URL? = kind == .memory ? nil : dir.path("books.\(kind.rawValue)")
        // No looking for other processes' saves: nothing but this process's saves refreshes the observation.
        let db = try ModelStore(for: allModels, at: url, type: kind.rawValue, registry: StoreKind.registry,
                                externalChangeCheckInterval: nil)
        var changes = db.observe(Book.self, sortedBy: [.ascending(\.title)]).makeAsyncIterator()
        #expect(try #require(try await changes.next()).results.isEmpty)

        // A record saved straight into the store, as an import would: no save of the coordinator names it.
        let loaded = try #require(db.coordinator.stores.first)
        let entity = try #require(db.coordinator.schema.entity(named: "Book"))
        var record = entity.newRecord(primaryKey: try loaded.store.allocatePrimaryKeys(root: "Book", count: 1))
        for (name, value) in [("title", StoreValue.string("A")), ("pages", .integer64(1)), ("genre", .string("essay"))] {
            record.attributes[try #require(entity.attributeIndex(name))] = value
        }
        try loaded.store.save(StoreChanges(inserted: [record]))

        try await db.write { try $0.insert(Book(title: "B", pages: 2)) }
        #expect(try #require(try await changes.next()).results.map(\.title) == ["B"])
        db.refreshObservations()
        // A write after the refresh, so that the test waits for an emission whatever the refresh did.
        try await db.write { try $0.insert(Book(title: "C", pages: 3)) }
        let refreshed = try #require(try await changes.next())
        #expect(refreshed.results.map(\.title) == ["A", "B"] && refreshed.inserted.map(\.title) == ["A"])
        try db.close()
    }

    @Test("A predicate that follows a relationship sees a change to the related record", arguments: StoreKind.allCases)
    func relationshipPredicate(kind: StoreKind) async throws {
        let dir = try TemporaryDirectory("typed-observe-patch-rel")
        let db = try kind.open(in: dir)
        let author = try await db.write { tx in
            let a = try tx.insert(Author(name: "Ursula"))
            try tx.insert(Book(title: "The Lathe of Heaven", pages: 184, author: a.ref))
            return a
        }
        let byU = ModelPredicate<Book>(try FetchPredicate("author.name BEGINSWITH %@", arguments: ["U"]))
        var changes = db.observe(Book.self, where: byU).makeAsyncIterator()
        #expect(try #require(try await changes.next()).results.map(\.title) == ["The Lathe of Heaven"])
        // Only the author's record changes: the book leaves the results all the same.
        var renamed = author
        renamed.name = "Le Guin"
        let changed = renamed
        try await db.write { try $0.update(changed) }
        let second = try #require(try await changes.next())
        #expect(second.results.isEmpty && second.deleted.count == 1)
        try db.close()
    }
}
