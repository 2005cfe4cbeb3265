import Foundation
import StoreAPI
import StoreModels
import StoreTestSupport
import Testing

@Suite("Observation")
struct ObservationTests {
    @Test("A fetch's results are emitted again after a write that changes them, not after others",
          arguments: StoreKind.allCases)
    func emitsAfterWrites(kind: StoreKind) async throws {
        let dir = try TemporaryDirectory("typed-observe")
        let db = try kind.open(in: dir)
        try await db.write { try $0.insert(Book(title: "The Telling", pages: 264)) }
        var changes = db.observe(Book.self, where: \.pages > 300, sortedBy: [.ascending(\.title)]).makeAsyncIterator()

        let first = try #require(try await changes.next())
        #expect(first.results.isEmpty && first.inserted.isEmpty)

        // Unrelated writes: another entity, and a book the predicate leaves out. Neither emits: the next
        // emission is the write after them.
        try await db.write { try $0.insert(Tag(label: "sf")) }
        try await db.write { try $0.insert(Book(title: "Lavinia", pages: 279)) }
        let dispossessed = try await db.write { try $0.insert(Book(title: "The Dispossessed", pages: 387)) }
        let second = try #require(try await changes.next())
        #expect(second.results.map(\.title) == ["The Dispossessed"])
        #expect(second.inserted.map(\.title) == ["The Dispossessed"])
        #expect(second.updated.isEmpty && second.deleted.isEmpty)

        var longer = dispossessed
        longer.pages = 400
        let changed = longer
        try await db.write { try $0.update(changed) }
        let third = try #require(try await changes.next())
        #expect(third.updated.map(\.pages) == [400] && third.inserted.isEmpty)

        try await db.write { try $0.delete(changed) }
        let fourth = try #require(try await changes.next())
        #expect(fourth.results.isEmpty)
        #expect(fourth.deleted == [try #require(dispossessed.persistentID)])

        try db.close()
        #expect(try await changes.next() == nil)
    }

    @Test("A write that fails emits nothing")
    func failedWrite() async throws {
        let db = try StoreKind.memory.open(in: try TemporaryDirectory("typed-observe-fail"))
        var changes = db.observe(Tag.self).makeAsyncIterator()
        _ = try await changes.next()
        try await db.write { try $0.insert(Tag(label: "sf")) }
        #expect(try await changes.next()?.results.map(\.label) == ["sf"])
        // A duplicate unique label fails the save: nothing changed, nothing is emitted.
        await #expect(throws: StoreError.self) { try await db.write { try $0.insert(Tag(label: "sf")) } }
        try await db.write { try $0.insert(Tag(label: "essay")) }
        #expect(try await changes.next()?.inserted.map(\.label) == ["essay"])
        try db.close()
    }
}
