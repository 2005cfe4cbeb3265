import Foundation
@testable import LMDBBackend
import StoreAPI
import StoreTestSupport
import Testing

/// Every relationship kind keeps both sides, and ordered to-many relationships keep their order.
@Suite struct LMDBRelationshipTests {
    /// A small graph: an author with ordered works of three sub-entities, tags (many-to-many), a sequel chain
    /// (self-referential one-to-one), an inverse-less to-many, a mentor (self-referential one-to-many) and an agent.
    static func graph(_ schema: Schema) throws -> [Record] {
        return [
            schema.record("Author", 1, ["name": "Ada", "country": "UK", "born": .integer16(1815)],
                ["works": .toMany([12, 10, 11]), "agent": .toOne(1), "favorites": .toMany([2, 1]), "students": .toMany([2])]),
            schema.record("Author", 2, ["name": "Bob"], ["mentor": .toOne(1), "works": .toMany([])]),
            schema.record("Agent", 1, ["name": "Agnes"], ["client": .toOne(1)]),
            schema.record("Book", 10, ["title": "First", "isbn": "isbn-10", "pages": .integer32(100)],
                ["author": .toOne(1), "tags": .toMany([1, 2]), "sequel": .toOne(11)]),
            schema.record("Novel", 11, ["title": "Second", "genre": "drama"],
                ["author": .toOne(1), "tags": .toMany([2]), "prequel": .toOne(10)]),
            schema.record("Article", 12, ["title": "Third", "journal": "J"], ["author": .toOne(1)]),
            schema.record("Tag", 1, ["name": "red"], ["works": .toMany([10])]),
            schema.record("Tag", 2, ["name": "blue"], ["works": .toMany([11, 10])]),
        ]
    }

    @Test func bothSidesAndOrderSurviveReopen() throws {
        let dir = try TemporaryDirectory("lmdb-tests")
        let schema = try LMDBFixture.schema()
        let url = dir.path("graph.lmdb")
        let graph = try Self.graph(schema)
        let store = try LMDBFixture.create(url, schema: schema)
        try store.save(StoreChanges(inserted: graph))
        try store.close()

        let reopened = try LMDBFixture.open(url)
        defer { try? reopened.close() }
        let all = try LMDBFixture.allRecords(reopened, schema: schema)
        #expect(Set(all) == Set(graph))
        let ada = try #require(try reopened.records(withKeys: [1], root: "Author").first)
        let works = try #require(schema.requireEntity("Author").relationshipIndex("works"))
        #expect(ada.relationships[works] == .toMany([12, 10, 11]), "ordered to-many keeps its order")

        // Sub-entities share the root's key space and are included or not as asked.
        #expect(try reopened.fetch(FetchRequest(entity: "Work")).map(\.primaryKey) == [10, 11, 12])
        #expect(try reopened.fetch(FetchRequest(entity: "Book")).map(\.entity) == ["Book", "Novel"])
        #expect(try reopened.fetch(FetchRequest(entity: "Book", includesSubentities: false)).map(\.entity) == ["Book"])
        #expect(try reopened.count(FetchRequest(entity: "Work")) == 3)
        #expect(try reopened.count(FetchRequest(entity: "Book", includesSubentities: false)) == 1)
        #expect(try reopened.scan(entity: "Novel", after: nil, limit: 10).map(\.primaryKey) == [11])
        #expect(try reopened.scan(entity: "Book", after: 10, limit: 10).isEmpty, "scan covers exactly the entity")

        // Key paths through relationships resolve inside the store.
        let byAuthor = try reopened.fetch(FetchRequest(entity: "Work", predicate: try FetchPredicate("author.name == %@", "Ada"), sortDescriptors: [SortKey("title", ascending: false)]))
        #expect(byAuthor.map(\.primaryKey) == [12, 11, 10])
        let tagged = try reopened.fetch(FetchRequest(entity: "Work", predicate: try FetchPredicate("ANY tags.name == %@", "blue")))
        #expect(tagged.map(\.primaryKey) == [10, 11])
        let mentored = try reopened.fetch(FetchRequest(entity: "Author", predicate: try FetchPredicate("mentor.name == %@", "Ada")))
        #expect(mentored.map(\.primaryKey) == [2])
    }

    @Test func globalIDsFindRecordsAndStayUnique() throws {
        let dir = try TemporaryDirectory("lmdb-tests")
        let schema = try LMDBFixture.schema()
        let graph = try Self.graph(schema)
        let store = try LMDBFixture.create(dir.path("gid.lmdb"), schema: schema)
        defer { try? store.close() }
        try store.save(StoreChanges(inserted: graph))
        for r in graph { #expect(try store.record(globalID: r.globalID) == r) }
        #expect(try store.record(globalID: UUID()) == nil)
        // Another record may not take an existing global ID.
        var clash = schema.record("Tag", 3, ["name": "green"])
        clash.globalID = graph[0].globalID
        #expect(storeError { try store.save(StoreChanges(inserted: [clash])) } != nil)
        // Once its owner is deleted, the global ID is free again.
        try store.save(StoreChanges(deleted: [graph[0].key]))
        #expect(try store.record(globalID: graph[0].globalID) == nil)
        try store.save(StoreChanges(inserted: [clash]))
        #expect(try store.record(globalID: clash.globalID) == clash)
    }
}
