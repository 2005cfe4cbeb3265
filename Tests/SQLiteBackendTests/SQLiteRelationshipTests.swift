import Foundation
@_spi(BackendKit) import StoreAPI
import StoreTestSupport
import Testing
@testable import SQLiteBackend

/// Every relationship kind comes back with both sides, in order where ordered, after saves, updates, deletes and
/// a reopen — compared with the in-memory reference store holding the same records.
@Suite struct SQLiteRelationshipTests {
    /// Authors with ordered books (out of key order), readers with inverse-less ordered favourites, an ordered
    /// many-to-many to tags, chapters, self-references (spouse, mentor/mentees, friends), animals of sub-entities.
    static func library(_ schema: Schema) -> Graph {
        var g = Graph(schema: schema)
        g.add("Author", 1, ["name": "Ada", "email": "ada@example.com", "penName": "A.", "rank": .integer16(3)])
        g.add("Author", 2, ["name": "Bea", "email": "bea@example.com", "rank": .integer16(-2)])
        g.add("Reader", 3, ["name": "Cy", "email": nil, "rank": "gold"])
        g.add("Reader", 4, ["name": "Di", "rank": "silver"])
        g.add("Person", 5, ["name": "Ed", "email": "ed@example.com"])
        for pk in Int64(1)...6 { g.add("Book", pk, ["title": .string("Book \(pk)"), "isbn": .string("isbn-\(pk)")]) }
        for pk in Int64(1)...4 { g.add("Tag", pk, ["name": .string("tag\(pk)")]) }
        for pk in Int64(1)...5 { g.add("Chapter", pk, ["title": .string("Ch \(pk)"), "number": .integer32(Int32(pk))]) }
        g.add("Dog", 1, ["name": "Rex", "barks": true])
        g.add("Cat", 2, ["name": "Tom", "lives": .integer16(9)])
        // Ordered one-to-many, out of key order.
        for b in [Int64(3), 1, 5] { g.link("Author", 1, "books", b) }
        for b in [Int64(6), 2] { g.link("Author", 2, "books", b) }
        // Ordered many-to-many (Book side ordered, Tag side unordered).
        for t in [Int64(4), 2, 1] { g.link("Book", 1, "tags", t) }
        for t in [Int64(2), 3] { g.link("Book", 3, "tags", t) }
        g.link("Book", 6, "tags", 2)
        // Unordered one-to-many.
        for c in [Int64(5), 2, 4] { g.link("Book", 1, "chapters", c) }
        g.link("Book", 2, "chapters", 1)
        // Inverse-less to-many (unordered, self) and ordered (Reader.favorites).
        g.link("Book", 1, "related", 6)
        g.link("Book", 1, "related", 2)
        g.link("Book", 6, "related", 1)
        for b in [Int64(6), 1, 4] { g.link("Reader", 3, "favorites", b) }
        // Self-references within one hierarchy.
        g.link("Author", 1, "spouse", 5)
        g.link("Author", 2, "mentor", 1)
        g.link("Reader", 3, "mentor", 1)
        g.link("Person", 5, "friends", 3)
        g.link("Person", 5, "friends", 1)
        g.link("Author", 2, "friends", 4)
        // To-one without inverse, into a hierarchy.
        g.link("Dog", 1, "owner", 5)
        g.link("Cat", 2, "owner", 3)
        return g
    }

    static let entities = ["Person", "Author", "Reader", "Book", "Tag", "Chapter", "Animal", "Dog", "Cat"]

    /// Every entity's records, both ways, must agree between the SQLite store and the reference.
    static func expectSame(_ sqlite: any PersistentStore, _ reference: any PersistentStore, _ schema: Schema, _ when: String)
        throws
    {
        for entity in entities {
            for sub in [true, false] {
                let request = FetchRequest(entity: entity, includesSubentities: sub)
                let a = try sqlite.fetch(request)
                let b = try reference.fetch(request)
                #expect(sameRecords(a, b, schema), "\(when): \(entity) (subentities \(sub)): \(firstDifference(a, b, schema))")
            }
        }
    }

    @Test func bothSidesOfEveryRelationshipComeBack() throws {
        let dir = try TemporaryDirectory("sqlitestore-tests")
        let schema = try Fixture.schema()
        let url = dir.path("library.sqlite")
        let records = Self.library(schema).all
        var store = try Fixture.open(url, schema: schema)
        let reference = MemoryStore(url: nil, metadata: Fixture.metadata(schema))
        try store.save(StoreChanges(inserted: records))
        try reference.save(StoreChanges(inserted: records))
        try Self.expectSame(store, reference, schema, "after insert")

        // Exact order of ordered relationships, spelled out.
        let author = try #require(try store.records(withKeys: [1], root: "Person").first)
        let books = try #require(schema.entity(named: "Author")?.relationshipIndex("books"))
        #expect(author.relationships[books] == .toMany([3, 1, 5]))
        let reader = try #require(try store.records(withKeys: [3], root: "Person").first)
        let favorites = try #require(schema.entity(named: "Reader")?.relationshipIndex("favorites"))
        #expect(reader.relationships[favorites] == .toMany([6, 1, 4]))

        try store.close()
        store = try SQLiteStoreBackend().open(at: url, options: StoreOptions(), creating: nil)
        try Self.expectSame(store, reference, schema, "after reopen")
        try store.close()
    }

    @Test func updatesAndDeletesKeepBothSidesInStep() throws {
        let dir = try TemporaryDirectory("sqlitestore-tests")
        let schema = try Fixture.schema()
        let store = try Fixture.open(dir.path("changes.sqlite"), schema: schema)
        defer { try? store.close() }
        let reference = MemoryStore(url: nil, metadata: Fixture.metadata(schema))
        let g = Self.library(schema)
        try store.save(StoreChanges(inserted: g.all))
        try reference.save(StoreChanges(inserted: g.all))

        // Move book 5 from author 1 to author 2 (at the front), reorder author 1, retag book 1, drop a favourite.
        var a1 = try #require(g.record("Person", 1))
        var a2 = try #require(g.record("Person", 2))
        var b5 = try #require(g.record("Book", 5))
        var b1 = try #require(g.record("Book", 1))
        var t4 = try #require(g.record("Tag", 4))
        var t3 = try #require(g.record("Tag", 3))
        var r3 = try #require(g.record("Person", 3))
        let author = try #require(schema.entity(named: "Author"))
        let book = try #require(schema.entity(named: "Book"))
        let tag = try #require(schema.entity(named: "Tag"))
        let readerEntity = try #require(schema.entity(named: "Reader"))
        a1.relationships[author.relationshipIndex("books")!] = .toMany([1, 3])
        a2.relationships[author.relationshipIndex("books")!] = .toMany([5, 6, 2])
        b5.relationships[book.relationshipIndex("author")!] = .toOne(2)
        b1.relationships[book.relationshipIndex("tags")!] = .toMany([1, 3, 2])
        t4.relationships[tag.relationshipIndex("books")!] = .toMany([])
        t3.relationships[tag.relationshipIndex("books")!] = .toMany([3, 1])
        r3.relationships[readerEntity.relationshipIndex("favorites")!] = .toMany([4, 6])
        let updated = [a1, a2, b5, b1, t4, t3, r3]
        try store.save(StoreChanges(updated: updated))
        try reference.save(StoreChanges(updated: updated))
        try Self.expectSame(store, reference, schema, "after updates")

        // Delete book 6 and nullify every reference to it (as a context would).
        let refs: [(String, Int64, String)] = [("Person", 2, "books"), ("Book", 1, "related"), ("Tag", 2, "books"), ("Person", 3, "favorites")]
        var nullified: [Record] = []
        for (root, pk, name) in refs {
            var r = try #require(try reference.records(withKeys: [pk], root: root).first)
            let e = try #require(schema.entity(named: r.entity))
            let i = try #require(e.relationshipIndex(name))
            r.relationships[i] = .toMany(r.relationships[i].keys.filter { $0 != 6 })
            nullified.append(r)
        }
        let deleted = [RecordKey(entity: "Book", primaryKey: 6)]
        try store.save(StoreChanges(updated: nullified, deleted: deleted))
        try reference.save(StoreChanges(updated: nullified, deleted: deleted))
        try Self.expectSame(store, reference, schema, "after delete")
    }

    @Test func orderSurvivesSavingOwnersBeforeTheirMembers() throws {
        // A transfer writes one entity after another: authors (with their ordered books) before the books exist,
        // tags before the books that list them. Order and membership must come out exactly as in memory.
        let dir = try TemporaryDirectory("sqlitestore-tests")
        let schema = try Fixture.schema()
        let store = try Fixture.open(dir.path("transfer.sqlite"), schema: schema)
        defer { try? store.close() }
        let reference = MemoryStore(url: nil, metadata: Fixture.metadata(schema))
        let records = Self.library(schema).all
        try reference.save(StoreChanges(inserted: records))
        for entity in ["Person", "Author", "Reader", "Tag", "Chapter", "Dog", "Cat", "Book"] {
            try store.save(StoreChanges(inserted: records.filter { $0.entity == entity }))
        }
        try Self.expectSame(store, reference, schema, "after entity-by-entity inserts")
        // Reversed, members first.
        let second = try Fixture.open(dir.path("reversed.sqlite"), schema: schema)
        defer { try? second.close() }
        for entity in ["Book", "Cat", "Dog", "Chapter", "Tag", "Reader", "Author", "Person"] {
            try second.save(StoreChanges(inserted: records.filter { $0.entity == entity }))
        }
        try Self.expectSame(second, reference, schema, "after members-first inserts")
    }

    @Test func subEntitiesShareTheirHierarchyTable() throws {
        let dir = try TemporaryDirectory("sqlitestore-tests")
        let schema = try Fixture.schema()
        let store = try Fixture.open(dir.path("hierarchy.sqlite"), schema: schema)
        defer { try? store.close() }
        try store.save(StoreChanges(inserted: Self.library(schema).all))
        #expect(try store.fetch(FetchRequest(entity: "Person")).map(\.primaryKey) == [1, 2, 3, 4, 5])
        #expect(try store.fetch(FetchRequest(entity: "Person", includesSubentities: false)).map(\.primaryKey) == [5])
        #expect(try store.scan(entity: "Author", after: nil, limit: 10).map(\.primaryKey) == [1, 2])
        #expect(try store.scan(entity: "Reader", after: 3, limit: 10).map(\.primaryKey) == [4])
        #expect(try store.fetch(FetchRequest(entity: "Animal")).map(\.entity) == ["Dog", "Cat"])
        #expect(try store.count(FetchRequest(entity: "Person", includesSubentities: false)) == 1)

        // The siblings' same-named `rank` attributes (Int16 and String) live in separate columns.
        let layout = SQLiteLayout(schema: schema)
        let columns = try #require(layout.tables["Person"]).columns.map(\.name)
        #expect(columns.contains("rank") && columns.contains("rank.Reader"), "\(columns)")
        let ranks = try store.fetch(FetchRequest(entity: "Person")).compactMap { r -> StoreValue? in
            schema.entity(named: r.entity)?.attributeIndex("rank").map { r.attributes[$0] }
        }
        #expect(ranks == [.integer16(3), .integer16(-2), "gold", "silver"])
    }

    @Test func layoutStoresEachRelationshipOnce() throws {
        let layout = SQLiteLayout(schema: try Fixture.schema())
        let tables = layout.joinTables.map(\.name).sorted()
        // Book.tags/Tag.books share one table; Book.related, Reader.favorites and the self-inverse Person.friends
        // each have their own; Author.books, Book.chapters and Person.mentees are derived from foreign keys, and
        // the ordered Author.books keeps its positions in an order table.
        #expect(tables == ["J_Author.books", "J_Book.related", "J_Book.tags", "J_Person.friends", "J_Reader.favorites"])
        let author = try #require(layout.entities["Author"])
        let books = try #require(author.entity.relationshipIndex("books"))
        guard case .inverseForeignKey(let ifk) = author.relationships[books] else {
            Issue.record("Author.books should be derived from Book.author")
            return
        }
        #expect(ifk.table == "E_Book" && ifk.column == "author" && ifk.orderTable == "J_Author.books")
        let item = try #require(layout.tables["Item"]).columns.map(\.name)
        #expect(item.contains("__pk") && item.contains("__hidden"))
    }
}
