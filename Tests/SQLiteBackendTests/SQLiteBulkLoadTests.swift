import CSQLite
import Foundation
@_spi(BackendKit) import StoreAPI
import StoreTestSupport
import Testing
@testable import SQLiteBackend

/// A transfer into a new SQLite store defers the record tables' indexes and builds them at the end: the result
/// has exactly the indexes of a store created normally, enforces the same constraints, and a load that breaks one
/// fails clearly when the index is built.
@Suite struct SQLiteBulkLoadTests {
    /// Every index of the database at `url`: name and SQL.
    static func indexes(_ url: URL) throws -> [String: String] {
        var db: OpaquePointer?
        defer { sqlite3_close(db) }
        guard sqlite3_open_v2(url.path, &db, SQLITE_OPEN_READONLY, nil) == SQLITE_OK else {
            throw StoreError.io(url, operation: "opening", reason: "sqlite3_open_v2 failed")
        }
        var stmt: OpaquePointer?
        defer { sqlite3_finalize(stmt) }
        guard sqlite3_prepare_v2(db, "SELECT name, sql FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL", -1, &stmt, nil) == SQLITE_OK
        else { throw StoreError.io(url, operation: "reading the schema", reason: "prepare failed") }
        var out: [String: String] = [:]
        while sqlite3_step(stmt) == SQLITE_ROW {
            out[String(cString: sqlite3_column_text(stmt, 0))] = String(cString: sqlite3_column_text(stmt, 1))
        }
        return out
    }

    /// A source store with people (a unique email), authors, books (a unique ISBN), tags and chapters.
    static func source(_ dir: TemporaryDirectory, _ schema: Schema) throws -> any PersistentStore {
        let store = try Fixture.open(dir.path("source.sqlite"), schema: schema)
        var records: [Record] = []
        for i in 1...40 {
            records.append(schema.record("Author", Int64(i), ["name": .string("author \(i)"), "email": .string("a\(i)@example.org")]))
            records.append(schema.record("Book", Int64(i), ["title": .string("book \(i)"), "isbn": .string("isbn-\(i)")],
                                          ["author": .toOne(Int64(i))]))
            records.append(schema.record("Chapter", Int64(i), ["title": .string("chapter \(i)")], ["book": .toOne(Int64(i))]))
        }
        try store.save(StoreChanges(inserted: records))
        return store
    }

    @Test func transferRebuildsExactlyTheIndexesOfANewStore() throws {
        let dir = try TemporaryDirectory("sqlitestore-tests")
        let schema = try Fixture.schema()
        let source = try Self.source(dir, schema)
        defer { try? source.close() }
        let fresh = try Fixture.open(dir.path("fresh.sqlite"), schema: schema)
        try fresh.close()
        let expected = try Self.indexes(dir.path("fresh.sqlite"))
        #expect(expected.keys.contains { $0.hasSuffix("._gid") }, "the layout indexes global IDs")

        let destination = try Fixture.open(dir.path("copy.sqlite"), schema: schema)
        try StoreTransfer(batchSize: 7).copy(from: source, to: destination)
        #expect(try destination.count(FetchRequest(entity: "Book")) == 40)
        // The uniqueness constraints hold again once the load is over.
        let clash = schema.record("Book", 1_000, ["title": .string("clash"), "isbn": .string("isbn-3")])
        #expect(throws: StoreError.self) { try destination.save(StoreChanges(inserted: [clash])) }
        try destination.close()
        #expect(try Self.indexes(dir.path("copy.sqlite")) == expected)
    }

    /// Join and order rows written by a bulk load (upserted, without reading the rows first) read back exactly as
    /// those of ordinary saves: both sides of an ordered many-to-many with their own orders, whichever
    /// side is saved first; an inverse foreign key's order; a relationship without inverse; a key listed twice; an
    /// update in the middle of the load (which reads and rewrites join rows), and rows added after it.
    @Test func bulkLoadedJoinRowsReadBackAsOrdinarySaves() throws {
        let dir = try TemporaryDirectory("sqlitestore-tests")
        let schema = try Fixture.schema()
        // Tags first and in a save of their own, so the other side of each tag row comes later.
        let tagBooks: [[Int64]] = [[3, 1, 2], [2, 3], [1, 3], []]
        let tags: [Record] = tagBooks.enumerated().map { i, members in
            schema.record("Tag", Int64(i + 1), ["name": .string("tag \(i + 1)")], ["books": .toMany(members)])
        }
        let bookTags: [Int64: [Int64]] = [1: [3, 1], 2: [2, 1], 3: [1, 2, 3, 3]]
        let books: [Record] = (1...3).map { (b: Int64) -> Record in
            let relationships: [String: RelationshipValue] = [
                "author": .toOne(10), "tags": .toMany(bookTags[b] ?? []), "related": .toMany(b == 1 ? [3, 2, 3] : []),
            ]
            return schema.record("Book", b, ["title": .string("book \(b)"), "isbn": .string("isbn-\(b)")], relationships)
        }
        let author = schema.record("Author", 10, ["name": .string("author"), "email": .string("a@example.org")],
                                    ["books": .toMany([3, 1, 2])])
        let reader = schema.record("Reader", 11, ["name": .string("reader"), "email": .string("r@example.org")],
                                    ["favorites": .toMany([2, 2, 1])])
        // An update in the middle of the load reads and rewrites join rows: the load's rows must be found.
        var changedBook = books[0]
        changedBook.relationships[try #require(schema.entity(named: "Book")?.relationshipIndex("tags"))] = .toMany([2, 4])
        let saves = [StoreChanges(inserted: tags), StoreChanges(inserted: books + [author, reader]),
                     StoreChanges(updated: [changedBook]), StoreChanges(inserted: [
                         schema.record("Tag", 5, ["name": .string("tag 5")], ["books": .toMany([1, 2])]),
                     ])]

        let ordinary = try Fixture.open(dir.path("ordinary.sqlite"), schema: schema)
        defer { try? ordinary.close() }
        for changes in saves { try ordinary.save(changes) }
        let bulk = try Fixture.open(dir.path("bulk.sqlite"), schema: schema)
        defer { try? bulk.close() }
        let loader = try #require(bulk as? any BulkLoadingStore)
        #expect(try loader.beginBulkLoad())
        for changes in saves { try bulk.save(changes) }
        try loader.finishBulkLoad()

        for entity in ["Book", "Author", "Reader"] {
            let expected = try ordinary.scan(entity: entity, after: nil, limit: 100)
            let loaded = try bulk.scan(entity: entity, after: nil, limit: 100)
            #expect(loaded == expected, "\(entity)")
        }
        // Tag.books is the unordered `dst` side of its join table: a bulk load leaves it to the ordered side to
        // write the rows (see DeferredLinks), so its links hold no position of their own and read back by key.
        let tag = try #require(schema.entity(named: "Tag"))
        let expectedTags = try ordinary.scan(entity: "Tag", after: nil, limit: 100)
        let loadedTags = try bulk.scan(entity: "Tag", after: nil, limit: 100)
        #expect(loadedTags.count == expectedTags.count)
        for (loaded, expected) in zip(loadedTags, expectedTags) {
            #expect(loaded.isLogicallyEqual(to: expected, in: tag), "\(loaded) \(expected)")
        }
        #expect(loadedTags[0].relationships[0] == .toMany([2, 3]), "tag 1 lost book 1 to the update, keeps 3 and 2, by key")
        let book3 = try #require(try bulk.scan(entity: "Book", after: 2, limit: 1).first)
        let tagsIndex = try #require(schema.entity(named: "Book")?.relationshipIndex("tags"))
        #expect(book3.relationships[tagsIndex] == .toMany([1, 2, 3]), "a key listed twice keeps its first position")
        let book1 = try #require(try bulk.scan(entity: "Book", after: nil, limit: 1).first)
        // The later tag's row has no position on the book's side, and such rows come first (as in ordinary saves).
        #expect(book1.relationships[tagsIndex] == .toMany([5, 2, 4]), "the update's rows and the later tag's")
        let reloaded = try #require(try bulk.scan(entity: "Reader", after: nil, limit: 1).first)
        let favoritesIndex = try #require(schema.entity(named: "Reader")?.relationshipIndex("favorites"))
        #expect(reloaded.relationships[favoritesIndex] == .toMany([2, 1]))
    }

    @Test func onlyAnEmptyStoreIsBulkLoaded() throws {
        let dir = try TemporaryDirectory("sqlitestore-tests")
        let schema = try Fixture.schema()
        let store = try Self.source(dir, schema)
        let bulk = try #require(store as? any BulkLoadingStore)
        #expect(try bulk.beginBulkLoad() == false)
        try bulk.finishBulkLoad()  // nothing in progress: nothing to do
        try store.close()
        let fresh = try Fixture.open(dir.path("fresh.sqlite"), schema: schema)
        try fresh.close()
        #expect(try Self.indexes(dir.path("source.sqlite")) == Self.indexes(dir.path("fresh.sqlite")))
    }

    @Test func duplicateGlobalIDsFailWhenTheIndexIsBuilt() throws {
        let dir = try TemporaryDirectory("sqlitestore-tests")
        let schema = try Fixture.schema()
        let store = try Fixture.open(dir.path("dup.sqlite"), schema: schema)
        defer { try? store.close() }
        let bulk = try #require(store as? any BulkLoadingStore)
        #expect(try bulk.beginBulkLoad())
        let a = schema.record("Tag", 1, ["name": .string("a")])
        var b = schema.record("Tag", 2, ["name": .string("b")])
        b = Record(entity: b.entity, primaryKey: b.primaryKey, globalID: a.globalID, attributes: b.attributes, relationships: b.relationships)
        try store.save(StoreChanges(inserted: [a, b]))
        let error = try #require(throws: StoreError.self) { try bulk.finishBulkLoad() }
        #expect("\(error)".contains("same global ID"), "\(error)")
        #expect("\(error)".contains("dup.sqlite"), "\(error)")
    }

    /// The two sides of a many-to-many relationship loaded in bulk must list the same links: the load writes one
    /// side's rows and checks the other's against them when it finishes (or before an update reads the rows).
    /// Sides that disagree fail with an error naming both — after the indexes are rebuilt — and are never merged.
    @Test func disagreeingSidesOfAManyToManyFailTheLoad() throws {
        let dir = try TemporaryDirectory("sqlitestore-tests")
        let schema = try Fixture.schema()
        func book(_ pk: Int64, tags: [Int64]) -> Record {
            schema.record("Book", pk, ["title": .string("book \(pk)"), "isbn": .string("isbn-\(pk)")], ["tags": .toMany(tags)])
        }
        func tag(_ pk: Int64, books: [Int64]) -> Record {
            schema.record("Tag", pk, ["name": .string("tag \(pk)")], ["books": .toMany(books)])
        }
        // Tag 2 says it has book 1; book 1 does not list tag 2 (as many links on each side, 3, but not the same).
        let cases: [(String, [StoreChanges])] = [
            ("different links", [StoreChanges(inserted: [tag(1, books: [1, 2]), tag(2, books: [1])]),
                                 StoreChanges(inserted: [book(1, tags: [1]), book(2, tags: [1, 2])])]),
            ("a missing link", [StoreChanges(inserted: [tag(1, books: [1, 2])]), StoreChanges(inserted: [book(1, tags: [1]), book(2, tags: [])])]),
            ("an extra link", [StoreChanges(inserted: [book(1, tags: [1, 1])]), StoreChanges(inserted: [tag(1, books: [])])]),
        ]
        for (name, saves) in cases {
            let url = dir.path("\(name).sqlite")
            let store = try Fixture.open(url, schema: schema)
            defer { try? store.close() }
            let bulk = try #require(store as? any BulkLoadingStore)
            #expect(try bulk.beginBulkLoad())
            for changes in saves { try store.save(changes) }
            let error = try #require(throws: StoreError.self, "\(name)") { try bulk.finishBulkLoad() }
            guard case .invalidRelationshipTarget(let entity, let relationship, let reason) = error else {
                Issue.record("\(name): \(error)")
                continue
            }
            #expect(entity == "Tag" && relationship == "books" && reason.contains("Book.tags"), "\(name): \(error)")
            // The indexes were built before the check: the store is whole, and its constraints hold.
            #expect(try Self.indexes(url).keys.contains { $0.hasSuffix("._gid") }, "\(name)")
        }

        // An update before the other side is loaded reads rows that are not there yet: refused the same way.
        let early = try Fixture.open(dir.path("early.sqlite"), schema: schema)
        defer { try? early.close() }
        let bulk = try #require(early as? any BulkLoadingStore)
        #expect(try bulk.beginBulkLoad())
        try early.save(StoreChanges(inserted: [tag(1, books: [1])]))
        try early.save(StoreChanges(inserted: [book(2, tags: [])]))
        #expect(throws: StoreError.self) { try early.save(StoreChanges(updated: [book(2, tags: [])])) }
        #expect(throws: StoreError.self) { try bulk.finishBulkLoad() }
    }
}
