@_spi(BackendKit) @testable import CoreDataBackend
import CSQLite
import Foundation
@_spi(BackendKit) import StoreAPI
import StoreTestSupport
import Testing

/// The Core Data store reads and writes on demand: opening reads no record, a fetch reads the rows its SQL selects,
/// a save writes the rows it touches. Checked on stores built in the test, through the public store API, and by
/// reading the raw tables.
@Suite struct CoreDataIncrementalTests {
    static let schema = Result { try CoreDataWriteTests.schema() }

    static func set(_ r: inout Record, _ e: Entity, _ name: String, _ value: StoreValue) throws {
        r.attributes[try #require(e.attributeIndex(name))] = value
    }

    static func link(_ r: inout Record, _ e: Entity, _ name: String, _ value: RelationshipValue) throws {
        r.relationships[try #require(e.relationshipIndex(name))] = value
    }

    /// Author `i` (0-based), key `i + 1`, name `Author i`.
    static func author(_ schema: Schema, _ i: Int, books: [Int64]) throws -> Record {
        let e = try schema.requireEntity("Author")
        var r = e.newRecord(primaryKey: Int64(i + 1))
        try Self.set(&r, e, "name", .string("Author \(i)"))
        try Self.set(&r, e, "active", i % 3 == 0 ? .null : .boolean(i % 2 == 0))
        try Self.set(&r, e, "born", i % 5 == 0 ? .null : .date(Date(timeIntervalSinceReferenceDate: Double(i * 1000) - 50_000)))
        try Self.link(&r, e, "books", .toMany(books))
        return r
    }

    /// Book `i` (a Novel when `i` is odd), key `i + 1`: `pages` = `i % 97` (nil for every 10th), title `Book i`.
    static func book(_ schema: Schema, _ i: Int, author: Int64?, tags: [Int64]) throws -> Record {
        let e = try schema.requireEntity(i % 2 == 1 ? "Novel" : "Book")
        var r = e.newRecord(primaryKey: Int64(i + 1))
        try Self.set(&r, e, "title", i % 13 == 0 ? .null : .string("Book \(i)"))
        try Self.set(&r, e, "pages", i % 10 == 0 ? .null : .integer32(Int32(i % 97)))
        try Self.set(&r, e, "weight", .double(Double(i % 7) / 2))
        if e.name == "Novel" { try Self.set(&r, e, "genre", .string(i % 4 == 1 ? "SF" : "crime")) }
        try Self.link(&r, e, "author", .toOne(author))
        try Self.link(&r, e, "tags", .toMany(tags))
        return r
    }

    static func tag(_ schema: Schema, _ i: Int, books: [Int64]) throws -> Record {
        let e = try schema.requireEntity("Tag")
        var r = e.newRecord(primaryKey: Int64(i + 1))
        try Self.set(&r, e, "label", .string("tag \(i)"))
        try Self.link(&r, e, "books", .toMany(books))
        return r
    }

    /// `books` books, one author per 10 books (ordered lists), one tag per 50 books (each book in its tag and the
    /// next one), consistent on both sides.
    static func records(books: Int) throws -> [Record] {
        let schema = try Self.schema.get()
        let authors = max(1, books / 10), tags = max(3, books / 50)
        func tagsOf(_ b: Int) -> [Int64] { [Int64(b % tags + 1), Int64((b + 1) % tags + 1)] }
        var out: [Record] = []
        for a in 0..<authors {
            out.append(try author(schema, a, books: stride(from: a, to: books, by: authors).reversed().map { Int64($0 + 1) }))
        }
        for t in 0..<tags {
            out.append(try tag(schema, t, books: (0..<books).filter { tagsOf($0).contains(Int64(t + 1)) }.map { Int64($0 + 1) }))
        }
        for b in 0..<books {
            out.append(try book(schema, b, author: Int64(b % authors + 1), tags: tagsOf(b)))
        }
        return out
    }

    /// A new writable store at `url` holding `records`, closed.
    static func makeStore(_ url: URL, _ records: [Record]) throws {
        let schema = try Self.schema.get()
        let store = try CoreDataStoreBackend().open(
            at: url, options: StoreOptions(), creating: StoreMetadata(storeType: "coredata", storeUUID: UUID(), schema: schema))
        try store.save(StoreChanges(inserted: records))
        try store.close()
    }

    static func open(_ url: URL, readOnly: Bool) throws -> any PersistentStore {
        try CoreDataStoreBackend().open(
            at: url, options: StoreOptions(isReadOnly: readOnly, createIfMissing: false), creating: nil)
    }

    /// Runs `sql` on the store's file with a plain read-write connection (to damage or inspect it).
    static func execute(_ url: URL, _ sql: String) throws {
        var db: OpaquePointer?
        guard sqlite3_open(url.path, &db) == SQLITE_OK else { throw StoreError.io(url, operation: "open", reason: "") }
        defer { sqlite3_close(db) }
        guard sqlite3_exec(db, sql, nil, nil, nil) == SQLITE_OK else {
            throw StoreError.io(url, operation: sql, reason: String(cString: sqlite3_errmsg(db)))
        }
    }

    static func rows(_ url: URL, _ sql: String) throws -> [[SQLiteValue]] {
        try ReadOnlyDatabase.open(url).rows(sql)
    }

    // MARK: Reading on demand

    /// A row no fetch selects is never decoded: a store whose one bad row would fail a whole-store read opens, and
    /// fetches, counts and key lookups of other records answer. (Reading every record at open fails on it.)
    @Test(arguments: [true, false])
    func openingAndFetchingReadOnlyWhatIsAskedFor(readOnly: Bool) throws {
        let dir = try TemporaryDirectory("coredata-incremental-read")
        defer { dir.remove() }
        let url = dir.path("Big.sqlite")
        try Self.makeStore(url, try Self.records(books: 5_000))
        // Book key 4001: a text where an integer32 belongs; reading it is an error.
        try Self.execute(url, "UPDATE ZBOOK SET ZPAGES = 'not a number' WHERE Z_PK = 4001")
        let store = try Self.open(url, readOnly: readOnly)
        defer { try? store.close() }

        let one = try store.records(withKeys: [1234], root: "Book")
        #expect(one.map(\.primaryKey) == [1234])
        #expect(one.first?.attributes.first == .string("Book 1233"))
        let p = try FetchPredicate("title == %@", .string("Book 77"))
        let fetched = try store.fetch(FetchRequest(entity: "Book", predicate: p))
        #expect(fetched.map(\.primaryKey) == [78])
        #expect(fetched.first?.entity == "Novel")
        #expect(try store.count(FetchRequest(entity: "Book", predicate: try FetchPredicate("self < 100"))) == 99)
        #expect(try store.fetch(FetchRequest(entity: "Novel", predicate: try FetchPredicate("self <= 20"))).count == 10)
        // The relationships of a fetched record come with it: the author's ordered books, the book's tags.
        let author = try #require(try store.records(withKeys: [3], root: "Author").first)
        #expect(author.relationships.first?.keys == stride(from: 2, to: 5_000, by: 500).reversed().map { Int64($0 + 1) })
        #expect(fetched.first?.relationships.last?.keys.sorted() == [78, 79])
        // The bad row is still an error when it is read.
        #expect(throws: StoreError.self) { try store.records(withKeys: [4001], root: "Book") }
    }

    /// A save writes the rows it touches: the updated row's `Z_OPT` advances, no other row's does, and a row the
    /// save does not touch keeps even a value this store could not have written.
    @Test func saveWritesOnlyTouchedRows() throws {
        let dir = try TemporaryDirectory("coredata-incremental-save")
        defer { dir.remove() }
        let url = dir.path("Big.sqlite")
        try Self.makeStore(url, try Self.records(books: 5_000))
        try Self.execute(url, "UPDATE ZBOOK SET ZWEIGHT = 'marker' WHERE Z_PK = 10")
        let schema = try Self.schema.get()
        let coordinator = StoreCoordinator(schema: schema, registry: BackendRegistry(backends: [CoreDataStoreBackend()]))
        let loaded = try coordinator.addStore(StoreDescription(url: url, type: "coredata"))
        let context = coordinator.newContext()
        let book = try #require(try context.fetch("Book", where: "title == %@", .string("Book 2500")).first)
        try book.setValue(.integer32(4242), forKey: "pages")
        try context.save()
        try coordinator.removeStore(loaded)

        #expect(try Self.rows(url, "SELECT Z_PK, Z_OPT, ZPAGES FROM ZBOOK WHERE Z_OPT <> 1").map { $0.map(\.int) }
            == [[2501, 2, 4242]])
        #expect(try Self.rows(url, "SELECT count(*) FROM ZAUTHOR WHERE Z_OPT <> 1").first?.first?.int == 0)
        #expect(try Self.rows(url, "SELECT ZWEIGHT FROM ZBOOK WHERE Z_PK = 10").first?.first?.text == "marker")
    }

    // MARK: Predicates

    /// Whatever the store translates to SQL, its results are the in-memory evaluator's on the same records.
    @Test func fetchesMatchTheMemoryStore() throws {
        let dir = try TemporaryDirectory("coredata-incremental-predicates")
        defer { dir.remove() }
        let url = dir.path("Small.sqlite")
        let records = try Self.records(books: 300)
        try Self.makeStore(url, records)
        let schema = try Self.schema.get()
        let memory = MemoryStore(url: nil, metadata: StoreMetadata(storeType: "memory", storeUUID: UUID(), schema: schema))
        try memory.save(StoreChanges(inserted: records))
        let store = try Self.open(url, readOnly: true)
        defer { try? store.close() }
        let day = Date(timeIntervalSinceReferenceDate: 20_000)
        // An unordered to-many has no order to compare.
        func normalized(_ r: Record) throws -> [RelationshipValue] {
            let e = try schema.requireEntity(r.entity)
            return zip(e.relationships, r.relationships).map { d, v in
                d.isToMany && !d.isOrdered ? .toMany(v.keys.sorted()) : v
            }
        }
        let cases: [(String, String, [StoreValue])] = [
            ("Book", "pages == 12", []), ("Book", "pages != 12", []), ("Book", "pages < 10", []),
            ("Book", "pages >= 90 OR pages == nil", []), ("Book", "NOT (pages > 50)", []), ("Book", "pages == nil", []),
            ("Book", "pages != nil AND weight > 1.5", []), ("Book", "pages IN {1, 2, 3, 96}", []),
            ("Book", "pages BETWEEN {10, 20}", []), ("Book", "title == %@", [.string("Book 42")]),
            ("Book", "title != %@", [.string("Book 42")]), ("Book", "title < %@", [.string("Book 2")]),
            ("Book", "title BEGINSWITH %@", [.string("Book 1")]), ("Book", "title BEGINSWITH[c] %@", [.string("book 1")]),
            ("Book", "NOT (title BEGINSWITH %@)", [.string("Book 1")]), ("Book", "author == 3", []),
            ("Book", "author.name == %@", [.string("Author 3")]), ("Book", "self > 250 AND pages < 40", []),
            ("Novel", "genre == %@", [.string("SF")]), ("Book", "ANY tags.label == %@", [.string("tag 2")]),
            ("Book", "pages > 10.5", []), ("Book", "weight == 1", []), ("Author", "born < %@", [.date(day)]),
            ("Author", "born == nil OR active == YES", []), ("Author", "NOT (active == NO)", []),
            ("Author", "books.@count > 9", []), ("Book", "TRUEPREDICATE", []), ("Book", "FALSEPREDICATE", []),
        ]
        for (entity, format, arguments) in cases {
            let p = try FetchPredicate(format, arguments: arguments)
            // Sorts SQL can do exactly (integers, doubles, dates, Booleans, several keys) and one it cannot (strings).
            let sorts: [([SortKey], Int, Int?)] = entity == "Author"
                ? [([], 0, nil), ([], 3, 5), ([SortKey("born", ascending: false)], 2, 7), ([SortKey("name")], 0, nil),
                   ([SortKey("active"), SortKey("born")], 1, 6), ([SortKey("active", ascending: false)], 0, nil)]
                : [([], 0, nil), ([], 3, 5), ([SortKey("pages", ascending: false)], 2, 7), ([SortKey("title")], 0, nil),
                   ([SortKey("weight"), SortKey("pages", ascending: false)], 1, 6), ([SortKey("weight", ascending: false)], 0, nil)]
            for (sort, offset, limit) in sorts {
                for sub in [true, false] {
                    let request = FetchRequest(entity: entity, predicate: p, sortDescriptors: sort, offset: offset,
                                               limit: limit, includesSubentities: sub)
                    let expected = try memory.fetch(request)
                    let got = try store.fetch(request)
                    #expect(got.map(\.key) == expected.map(\.key), "\(entity) \(format) \(sort) \(offset) \(String(describing: limit)) \(sub)")
                    #expect(got.map(\.attributes) == expected.map(\.attributes), "\(format): same values")
                    #expect(try got.map(normalized) == expected.map(normalized), "\(format): same relationships")
                    #expect(try store.count(request) == expected.count, "count \(entity) \(format)")
                }
            }
        }
    }

    /// A page of records holds what a scan returns, also when the page's keys are sparse in their table (a Book
    /// page whose keys are far apart, Novels between them) or dense with another entity's keys among them (the
    /// Novels, one Book between them).
    @Test func pagesMatchScansForSparseAndDenseKeys() throws {
        let dir = try TemporaryDirectory("coredata-incremental-pages")
        defer { dir.remove() }
        let url = dir.path("Pages.sqlite")
        let schema = try Self.schema.get()
        let keys = (1...200).map(Int64.init)
        var records = [try Self.author(schema, 0, books: keys.reversed()),
                       try Self.tag(schema, 0, books: keys), try Self.tag(schema, 1, books: keys.filter { $0 % 3 == 0 })]
        for k in keys {
            // Books at the two ends and in the middle; Novels (odd `i`) between them.
            var r = try Self.book(schema, [1, 100, 200].contains(k) ? 0 : 1, author: 1, tags: k % 3 == 0 ? [1, 2] : [1])
            r.primaryKey = k
            records.append(r)
        }
        try Self.makeStore(url, records)
        let store = try #require(try Self.open(url, readOnly: true) as? CoreDataStore)
        defer { try? store.close() }
        for entity in ["Book", "Novel", "Tag", "Author"] {
            let scanned = try store.scan(entity: entity, after: nil, limit: 500)
            let paged = try store.scanPage(entity: entity, after: nil, limit: 500).records(in: schema)
            #expect(!scanned.isEmpty)
            #expect(paged == scanned, "\(entity)")
        }
        let books = try store.scanPage(entity: "Book", after: nil, limit: 500).records(in: schema)
        #expect(books.map(\.primaryKey) == [1, 100, 200])
        #expect(books.map { $0.relationships[1].keys } == [[1], [1], [1]])
    }

    /// A page reads an ordered to-many's members with their positions in key order and puts them in list order
    /// itself: the same lists a scan reads sorted by SQL, also with positions shared by several members (key order
    /// among them) and a position that is not an integer (SQL's order).
    @Test func pagesOrderMembersByPositionAsScansDo() throws {
        let dir = try TemporaryDirectory("coredata-incremental-positions")
        defer { dir.remove() }
        let url = dir.path("Positions.sqlite")
        let schema = try Self.schema.get()
        try Self.makeStore(url, try Self.records(books: 60))
        let column = try #require(try Self.rows(url, "SELECT name FROM pragma_table_info('ZBOOK') WHERE name LIKE 'Z_FOK_%'")
            .first?.first?.text)
        func check(_ expectedAuthorOneBooks: [Int64]) throws {
            let store = try #require(try Self.open(url, readOnly: true) as? CoreDataStore)
            defer { try? store.close() }
            let scanned = try store.scan(entity: "Author", after: nil, limit: 500)
            let paged = try store.scanPage(entity: "Author", after: nil, limit: 500).records(in: schema)
            #expect(scanned.count == 6)
            #expect(paged == scanned)
            #expect(paged.first?.relationships[0].keys == expectedAuthorOneBooks)
        }
        // Author 1's books are 1, 7, …, 55, listed from the last: positions fall as keys rise.
        try check([55, 49, 43, 37, 31, 25, 19, 13, 7, 1])
        try Self.execute(url, "UPDATE ZBOOK SET \(column) = 5 WHERE ZAUTHOR = 1 AND Z_PK IN (7, 31, 43)")
        try check([7, 31, 43, 55, 49, 37, 25, 19, 13, 1])
        try Self.execute(url, "UPDATE ZBOOK SET \(column) = 'late' WHERE Z_PK = 7")
        try check([31, 43, 55, 49, 37, 25, 19, 13, 1, 7])
    }

    // MARK: Relationship maintenance

    /// Moving a book between two authors' ordered lists, adding and removing many-to-many links, and deleting
    /// records, checked in the raw tables.
    @Test func relationshipsAreMaintainedInTheirRows() throws {
        let dir = try TemporaryDirectory("coredata-incremental-links")
        defer { dir.remove() }
        let url = dir.path("Links.sqlite")
        try Self.makeStore(url, try Self.records(books: 100))
        let schema = try Self.schema.get()
        let coordinator = StoreCoordinator(schema: schema, registry: BackendRegistry(backends: [CoreDataStoreBackend()]))
        let loaded = try coordinator.addStore(StoreDescription(url: url, type: "coredata"))
        let context = coordinator.newContext()
        func author(_ name: String) throws -> ManagedObject {
            try #require(try context.fetch("Author", where: "name == %@", .string(name)).first)
        }
        func book(_ pk: Int64) throws -> ManagedObject {
            try #require(try context.fetch("Book", where: "self == %@", .integer64(pk)).first)
        }
        func tag(_ label: String) throws -> ManagedObject {
            try #require(try context.fetch("Tag", where: "label == %@", .string(label)).first)
        }
        // Author 1's books are 92, 82, …, 2 (keys); move book 42 to the front of author 2's list.
        let a2 = try author("Author 2")
        let moved = try book(42)
        try a2.insertObject(moved, at: 0, forKey: "books")
        // Book 5 leaves tag key 3 and joins tag key 1 (it keeps tag key 2).
        let b5 = try book(5)
        try b5.setObjects([try tag("tag 0"), try tag("tag 1")], forKey: "tags")
        // Delete author 3 (its books lose their author) and book 7 (its join rows go).
        try context.delete(try author("Author 3"))
        try context.delete(try book(7))
        try context.save()
        try coordinator.removeStore(loaded)

        let a2Books = try Self.rows(url, "SELECT Z_PK, Z_FOK_AUTHOR FROM ZBOOK WHERE ZAUTHOR = 3 ORDER BY Z_FOK_AUTHOR").map { $0[0].int }
        #expect(a2Books.first == 42)
        #expect(a2Books.count == 11)
        #expect(try Self.rows(url, "SELECT ZAUTHOR FROM ZBOOK WHERE Z_PK = 42").first?.first?.int == 3)
        let a1Books = try Self.rows(url, "SELECT Z_PK FROM ZBOOK WHERE ZAUTHOR = 2 ORDER BY Z_FOK_AUTHOR").map { $0[0].int }
        #expect(a1Books == [92, 82, 72, 62, 52, 32, 22, 12, 2])
        let joinTable = try #require(try Self.rows(url, "SELECT name FROM sqlite_master WHERE name LIKE 'Z\\_%BOOKS' ESCAPE '\\' OR name LIKE 'Z\\_%TAGS' ESCAPE '\\'").first?.first?.text)
        let columns = try Self.rows(url, "PRAGMA table_info(\(joinTable))").compactMap { $0[1].text }
        let bookColumn = try #require(columns.first { $0.hasSuffix("BOOKS") })
        let tagColumn = try #require(columns.first { $0.hasSuffix("TAGS") })
        #expect(try Self.rows(url, "SELECT \(tagColumn) FROM \(joinTable) WHERE \(bookColumn) = 5 ORDER BY 1").map { $0[0].int } == [1, 2])
        #expect(try Self.rows(url, "SELECT count(*) FROM \(joinTable) WHERE \(bookColumn) = 7").first?.first?.int == 0)
        #expect(try Self.rows(url, "SELECT count(*) FROM ZBOOK WHERE ZAUTHOR = 4").first?.first?.int == 0)
        #expect(try Self.rows(url, "SELECT count(*) FROM ZBOOK WHERE ZAUTHOR IS NULL AND Z_FOK_AUTHOR IS NOT NULL").first?.first?.int == 0)
        #expect(try Self.rows(url, "SELECT count(*) FROM ZAUTHOR").first?.first?.int == 9)

        // Read back through the store: the same lists.
        let store = try Self.open(url, readOnly: true)
        defer { try? store.close() }
        let authors = try store.fetch(FetchRequest(entity: "Author", predicate: try FetchPredicate("self == 3")))
        #expect(authors.first?.relationships.first?.keys.first == 42)
        let tags = try store.records(withKeys: [1, 2, 3], root: "Tag").sorted { $0.primaryKey < $1.primaryKey }
        #expect(tags.map { $0.relationships.first?.keys.contains(5) } == [true, true, false])
    }
}

/// A transfer into a new store is a bulk load: indexes built at the end, each many-to-many written from one side and
/// checked against the other.
@Suite struct CoreDataBulkLoadTests {
    static func copy(_ records: [Record], into url: URL) throws -> any PersistentStore {
        let schema = try CoreDataIncrementalTests.schema.get()
        let source = MemoryStore(url: nil, metadata: StoreMetadata(storeType: "memory", storeUUID: UUID(), schema: schema))
        try source.save(StoreChanges(inserted: records))
        let destination = try CoreDataStoreBackend().open(
            at: url, options: StoreOptions(), creating: StoreMetadata(storeType: "coredata", storeUUID: UUID(), schema: schema))
        do {
            try StoreTransfer(batchSize: 37).copy(from: source, to: destination)
        } catch {
            try? destination.close()
            throw error
        }
        return destination
    }

    @Test func aTransferKeepsEveryRecordAndRebuildsTheIndexes() throws {
        let dir = try TemporaryDirectory("coredata-bulk")
        defer { dir.remove() }
        let url = dir.path("Bulk.sqlite")
        let records = try CoreDataIncrementalTests.records(books: 300)
        let store = try Self.copy(records, into: url)
        defer { try? store.close() }
        let schema = try CoreDataIncrementalTests.schema.get()
        for e in schema.entities {
            let got = try store.fetch(FetchRequest(entity: e.name, includesSubentities: false))
            let expected = records.filter { $0.entity == e.name }.sorted { $0.primaryKey < $1.primaryKey }
            #expect(got.map(\.attributes) == expected.map(\.attributes), "\(e.name)")
            #expect(got.map { $0.relationships.map { RelationshipValue.toMany($0.keys.sorted()) } }
                == expected.map { $0.relationships.map { RelationshipValue.toMany($0.keys.sorted()) } }, "\(e.name)")
        }
        // Ordered lists keep their order.
        let author = try #require(try store.records(withKeys: [2], root: "Author").first)
        #expect(author.relationships.first == records.first { $0.entity == "Author" && $0.primaryKey == 2 }?.relationships.first)
        let indexes = try CoreDataIncrementalTests.rows(url, "SELECT count(*) FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL")
        #expect((indexes.first?.first?.int ?? 0) > 0)
        #expect(try CoreDataIncrementalTests.rows(url, "PRAGMA integrity_check").first?.first?.text == "ok")
    }

    /// Positions of ordered members beyond what a bulk load keeps in memory wait in a temporary table and still
    /// land in the members' rows.
    @Test func orderedPositionsSpilledByALoadKeepTheirOrder() throws {
        let dir = try TemporaryDirectory("coredata-bulk-spill")
        defer { dir.remove() }
        let url = dir.path("Spill.sqlite")
        let schema = try CoreDataIncrementalTests.schema.get()
        let records = try CoreDataIncrementalTests.records(books: 300)
        let source = MemoryStore(url: nil, metadata: StoreMetadata(storeType: "memory", storeUUID: UUID(), schema: schema))
        try source.save(StoreChanges(inserted: records))
        let destination = try CoreDataStoreBackend().open(
            at: url, options: StoreOptions(), creating: StoreMetadata(storeType: "coredata", storeUUID: UUID(), schema: schema))
        defer { try? destination.close() }
        let store = try #require(destination as? CoreDataStore)
        store.pendingPositionKeyLimit = 0
        store.pendingPositionLimit = 5
        try StoreTransfer(batchSize: 37).copy(from: source, to: destination)
        let authors = records.filter { $0.entity == "Author" }
        #expect(authors.contains { $0.relationships[0].keys.count > 1 })
        for expected in authors {
            let got = try #require(try store.records(withKeys: [expected.primaryKey], root: "Author").first)
            #expect(got.relationships[0] == expected.relationships[0], "Author \(expected.primaryKey)")
        }
        // Every member of an ordered list has its position: none was left waiting.
        let unplaced = try CoreDataIncrementalTests.rows(url, "SELECT count(*) FROM ZBOOK WHERE ZAUTHOR IS NOT NULL AND Z_FOK_AUTHOR IS NULL")
        #expect(unplaced.first?.first?.int == 0)
        #expect(try CoreDataIncrementalTests.rows(url, "PRAGMA integrity_check").first?.first?.text == "ok")
    }

    @Test func twoSidesOfAManyToManyThatDisagreeFailTheLoad() throws {
        let dir = try TemporaryDirectory("coredata-bulk-bad")
        defer { dir.remove() }
        var records = try CoreDataIncrementalTests.records(books: 30)
        // Tag 1 lists one book more than the books list it.
        let at = try #require(records.firstIndex { $0.entity == "Tag" && $0.primaryKey == 1 })
        let extra = try #require(records.first { $0.entity != "Tag" && $0.entity != "Author" && !$0.relationships[1].keys.contains(1) })
        records[at].relationships[0] = .toMany(records[at].relationships[0].keys + [extra.primaryKey])
        let error = #expect(throws: StoreError.self) { _ = try Self.copy(records, into: dir.path("Bad.sqlite")) }
        #expect(String(describing: error).contains("disagree"), "\(String(describing: error))")
    }
}

/// The allocation-free global identifiers are exactly the general name-based UUIDs.
@Suite struct CoreDataGlobalIDTests {
    @Test func fastPathMatchesTheGeneralDigest() {
        let store = UUID()
        for root in ["A", "Book", "ALongRootEntityNameOfThirtyOneCh", "Überentität"] {
            let maker = CoreDataGlobalID.Maker(store: store, root: root)
            for key: Int64 in [0, 1, 9, 10, 99, 12_345, -7, 1 << 40, .max, .min] {
                #expect(maker.make(key) == CoreDataGlobalID.make(store: store, root: root, primaryKey: key), "\(root)/p\(key)")
            }
        }
    }

    /// The byte comparison a write makes accepts exactly the derived identifier: the general digest's, and not one
    /// differing in any byte; roots too long for one block take the general path both ways.
    @Test func isDerivedAcceptsExactlyTheDerivedIdentifier() {
        let store = UUID()
        let longRoot = String(repeating: "R", count: 40)
        for root in ["A", "Book", "ALongRootEntityNameOfThirtyOneCh", "Überentität", longRoot] {
            for usesHardware in [true, false] {
                let maker = CoreDataGlobalID.Maker(store: store, root: root, usesHardware: usesHardware)
                for key: Int64 in [0, 1, 10, 12_345, -7, 1 << 40, .max, .min] {
                    let derived = CoreDataGlobalID.make(store: store, root: root, primaryKey: key)
                    #expect(maker.isDerived(derived, key), "\(root)/p\(key)")
                    #expect(!maker.isDerived(derived, key &+ 1), "\(root)/p\(key) against the next key")
                    for byte in 0..<16 {
                        var bytes = derived.uuid
                        withUnsafeMutableBytes(of: &bytes) { $0[byte] ^= 0x01 }
                        #expect(!maker.isDerived(UUID(uuid: bytes), key), "\(root)/p\(key), byte \(byte) changed")
                    }
                }
            }
        }
    }

    /// The processor's SHA instructions and the rounds written out in Swift give the same IDs (where the processor
    /// has them; elsewhere both makers take the Swift rounds).
    @Test func hardwareAndSoftwareRoundsAgree() {
        var generator = SystemRandomNumberGenerator()
        for root in ["A", "Review", "ALongRootEntityNameOfThirtyOneCh", "Überentität"] {
            let store = UUID()
            let hardware = CoreDataGlobalID.Maker(store: store, root: root, usesHardware: true)
            let software = CoreDataGlobalID.Maker(store: store, root: root, usesHardware: false)
            var keys: [Int64] = [0, 1, -1, .max, .min]
            for _ in 0..<2_000 { keys.append(Int64.random(in: .min ... .max, using: &generator) >> Int64.random(in: 0...62, using: &generator)) }
            for key in keys {
                #expect(hardware.make(key) == software.make(key), "\(root)/p\(key)")
            }
            #expect(software.make(42) == CoreDataGlobalID.make(store: store, root: root, primaryKey: 42))
        }
    }
}
