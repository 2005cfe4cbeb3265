import Foundation
@_spi(BackendKit) import StoreAPI
import StoreTestSupport
import Testing
@testable import SQLiteBackend

/// A save inserts runs of records of one entity several rows per statement: every record is stored as a save of
/// it alone stores it, and a record that cannot be inserted fails the whole save with the error it gives alone,
/// the store unchanged.
@Suite struct SQLiteInsertBatchTests {
    /// Books with a value of every type the entity has, key `first + i` for position `i`.
    static func books(_ schema: Schema, _ range: Range<Int>, first: Int64 = 1) -> [Record] {
        range.map { i in
            schema.record("Book", first + Int64(i), [
                "title": .string("book \(i)"), "price": .double(Double(i) / 4), "isbn": .string("isbn-\(i)"),
                "published": .date(Date(timeIntervalSinceReferenceDate: Double(i) * 86_400)),
                "pages": .integer16(Int16(i % 1_000)), "cost": .decimal(Decimal(i) / 100), "ident": .uuid(UUID()),
                "link": .uri(URL(fileURLWithPath: "/books/\(i)")), "cover": .binary(Data([UInt8(i % 256), 0, 7])),
                "inPrint": .boolean(i % 2 == 0), "weight": .float(Float(i) / 8),
            ])
        }
    }

    /// Rows of one book per statement, as the layout batches them.
    static func batchRows(_ schema: Schema) throws -> Int {
        let layout = SQLiteLayout(schema: schema)
        return try #require(layout.entities["Book"]).insertBatchRows
    }

    @Test func runsOfOneEntityAreStoredAsRecordByRecord() throws {
        let dir = try TemporaryDirectory("sqlite-insert-batches")
        let schema = try Fixture.schema()
        let rows = try Self.batchRows(schema)
        #expect(rows > 1, "books are inserted several per statement")
        // Two full batches and a few more, then a run broken by a record of another entity, then a short run.
        var books = Self.books(schema, 0..<(2 * rows + 5))
        let tail = Self.books(schema, (2 * rows + 5)..<(3 * rows + 9))
        let person = schema.record("Person", 1, ["name": "between", "email": "p@example.com"])
        let store = try Fixture.open(dir.path("books.sqlite"), schema: schema)
        defer { try? store.close() }
        try store.save(StoreChanges(inserted: books + [person] + tail))
        books += tail

        let read = try store.fetch(FetchRequest(entity: "Book"))
        #expect(read.count == books.count)
        let byKey = Dictionary(uniqueKeysWithValues: read.map { ($0.primaryKey, $0) })
        for book in books {
            let stored = try #require(byKey[book.primaryKey])
            #expect(stored.globalID == book.globalID)
            #expect(stored.attributes == book.attributes, "book \(book.primaryKey)")
        }
        #expect(try store.fetch(FetchRequest(entity: "Person")).map(\.globalID) == [person.globalID])
        // The key allocator moved past every inserted key.
        #expect(try store.allocatePrimaryKeys(root: "Book", count: 1) > Int64(books.count))
    }

    /// What makes one record of a batch fail.
    enum Fault: String, CaseIterable, Sendable {
        case repeatedPrimaryKey, repeatedGlobalID, repeatedUniqueValue, valueOfTheWrongType
        /// A repeated unique value early in the batch and a value of the wrong type later in it: the record first
        /// in order is the one the save names, as when the records are inserted one by one.
        case twoFaultsInOneBatch
    }

    private static func failure(_ body: () throws -> Void) -> String? { SQLiteDeferredIndexTests.failure(body) }

    @Test(arguments: Fault.allCases)
    func aRecordThatCannotBeInsertedFailsTheSaveWithItsOwnError(fault: Fault) throws {
        let dir = try TemporaryDirectory("sqlite-insert-batches")
        let schema = try Fixture.schema()
        let rows = try Self.batchRows(schema)
        let store = try Fixture.open(dir.path("books.sqlite"), schema: schema)
        defer { try? store.close() }
        // A book already stored, so that the indexes are in place and the inserts go row by row into them.
        let existing = Self.books(schema, 10_000..<10_001, first: 1_000_000)[0]
        try store.save(StoreChanges(inserted: [existing]))

        // The faulty record in the middle of the second batch.
        var books = Self.books(schema, 0..<(3 * rows))
        let at = rows + rows / 2
        let pages = try #require(schema.entity(named: "Book")?.attributeIndex("pages"))
        let isbn = try #require(schema.entity(named: "Book")?.attributeIndex("isbn"))
        switch fault {
        case .repeatedPrimaryKey: books[at].primaryKey = existing.primaryKey
        case .repeatedGlobalID: books[at].globalID = existing.globalID
        case .repeatedUniqueValue: books[at].attributes[isbn] = existing.attributes[isbn]
        case .valueOfTheWrongType: books[at].attributes[pages] = .string("many")
        case .twoFaultsInOneBatch:
            books[at - 3].attributes[isbn] = existing.attributes[isbn]
            books[at].attributes[pages] = .string("many")
        }
        let named = fault == .twoFaultsInOneBatch ? books[at - 3] : books[at]

        let batched = Self.failure { try store.save(StoreChanges(inserted: books)) }
        #expect(batched != nil)
        #expect(try store.count(FetchRequest(entity: "Book")) == 1, "nothing of the failed save is stored")
        let alone = Self.failure { try store.save(StoreChanges(inserted: [named])) }
        #expect(batched == alone, "the error the record gives alone")

        // The same save without the fault goes through, every book once.
        books[at] = Self.books(schema, at..<(at + 1))[0]
        books[at - 3] = Self.books(schema, (at - 3)..<(at - 2))[0]
        try store.save(StoreChanges(inserted: books))
        #expect(try store.count(FetchRequest(entity: "Book")) == books.count + 1)
    }

    /// A bulk load inserts a page's records several per statement too: a page with a record that cannot be inserted
    /// in the middle of a batch fails with the error a save of the same records gives, and leaves nothing of itself.
    @Test(arguments: [Fault.repeatedPrimaryKey, .valueOfTheWrongType, .twoFaultsInOneBatch])
    func aBulkLoadedPageFailsAsASaveOfItsRecordsFails(fault: Fault) throws {
        let dir = try TemporaryDirectory("sqlite-insert-batches")
        let schema = try Fixture.schema()
        let rows = try Self.batchRows(schema)
        var books = Self.books(schema, 0..<(3 * rows))
        let at = rows + rows / 2
        let pages = try #require(schema.entity(named: "Book")?.attributeIndex("pages"))
        switch fault {
        case .repeatedPrimaryKey: books[at].primaryKey = books[2].primaryKey
        case .twoFaultsInOneBatch:
            books[at - 3].primaryKey = books[2].primaryKey
            books[at].attributes[pages] = .string("many")
        default: books[at].attributes[pages] = .string("many")
        }

        let saved = try Fixture.open(dir.path("saved.sqlite"), schema: schema)
        defer { try? saved.close() }
        let expected = Self.failure { try saved.save(StoreChanges(inserted: books)) }
        #expect(expected != nil)

        let loaded = try Fixture.open(dir.path("loaded.sqlite"), schema: schema)
        defer { try? loaded.close() }
        let bulk = try #require(loaded as? any BulkLoadingStore & PageInsertingStore)
        #expect(try bulk.beginBulkLoad())
        var page = RecordPage(entity: "Book")
        for book in books { page.append(book) }
        #expect(Self.failure { try bulk.insert(page) } == expected)
        #expect(try loaded.count(FetchRequest(entity: "Book")) == 0, "nothing of the failed page is stored")
        // The load goes on: the page without its faults goes in whole.
        let good = Self.books(schema, 0..<(3 * rows))
        var fixed = RecordPage(entity: "Book")
        for book in good { fixed.append(book) }
        try bulk.insert(fixed)
        try bulk.finishBulkLoad()
        let read = Dictionary(uniqueKeysWithValues: try loaded.fetch(FetchRequest(entity: "Book")).map { ($0.primaryKey, $0) })
        #expect(read.count == good.count)
        for book in good {
            #expect(read[book.primaryKey]?.globalID == book.globalID)
            #expect(read[book.primaryKey]?.attributes == book.attributes, "book \(book.primaryKey)")
        }
    }
}
