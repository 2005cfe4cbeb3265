@_spi(BackendKit) @testable import CoreDataBackend
import Foundation
@_spi(BackendKit) import StoreAPI
import StoreTestSupport
import Testing

/// A bulk load inserts a page's rows several to a statement; a row that would fail makes its statement go in row by
/// row, so that the page fails with the error of the row at fault — the error that record gives in a page of its
/// own — and leaves nothing of itself behind.
@Suite struct CoreDataInsertBatchTests {
    enum Fault: String, CaseIterable, CustomTestStringConvertible {
        /// A key already stored by an earlier page.
        case repeatedKey
        /// An integer for the book's title, a string.
        case wrongType
        /// A to-many's keys where the to-one `author` goes.
        case malformedLink

        var testDescription: String { rawValue }
    }

    /// Books 1–100 go in as one page; books 101–300, with the fault at the 71st (in the second multi-row
    /// statement), as another.
    @Test(arguments: Fault.allCases)
    func aFaultInABatchFailsThePageWithItsRowsOwnError(fault: Fault) throws {
        let dir = try TemporaryDirectory("coredata-insert-batch")
        defer { dir.remove() }
        let schema = try CoreDataPageInsertTests.librarySchema()
        let storeUUID = UUID()
        let book = try schema.requireEntity("Book")
        let books = try CoreDataPageInsertTests.libraryRecords(schema, storeUUID: storeUUID, books: 300)
            .filter { $0.entity == "Book" }.sorted { $0.primaryKey < $1.primaryKey }
        let first = Array(books[0..<100])
        var second = Array(books[100...])
        let at = 70
        switch fault {
        case .repeatedKey: second[at].primaryKey = 50
        case .wrongType: try CoreDataIncrementalTests.set(&second[at], book, "title", .integer64(7))
        case .malformedLink: try CoreDataIncrementalTests.link(&second[at], book, "author", .toMany([1]))
        }

        let url = dir.path("Batches.sqlite")
        let store = try CoreDataStoreBackend().open(
            at: url, options: StoreOptions(), creating: StoreMetadata(storeType: "coredata", storeUUID: storeUUID, schema: schema))
        defer { try? store.close() }
        let bulk = try #require(store as? any BulkLoadingStore)
        let sink = try #require(store as? any PageInsertingStore)
        func insert(_ records: some Sequence<Record>) throws {
            var page = RecordPage(entity: "Book")
            for r in records { page.append(r) }
            try sink.insert(page)
        }
        #expect(try bulk.beginBulkLoad())
        try insert(first)
        let inBatch = #expect(throws: StoreError.self) { try insert(second) }
        // The error the faulty record gives in a page of its own.
        let alone = #expect(throws: StoreError.self) { try insert([second[at]]) }
        #expect(String(describing: inBatch) == String(describing: alone))
        switch fault {
        case .repeatedKey: #expect(String(describing: inBatch).contains("Z_PK 50"), "\(String(describing: inBatch))")
        case .wrongType: #expect(String(describing: inBatch).contains("title"), "\(String(describing: inBatch))")
        case .malformedLink:
            #expect(String(describing: inBatch).contains("record \(second[at].primaryKey): the value of Book.author"),
                    "\(String(describing: inBatch))")
        }
        // Nothing of the failed pages: the first page's books, as they went in (their people and reviews are not
        // stored, so only their own values are compared); and the same page without its fault goes in.
        func kept() throws -> [String] {
            try store.scan(entity: "Book", after: nil, limit: .max).map { "\($0.primaryKey) \($0.globalID) \($0.attributes)" }
        }
        #expect(try kept() == first.map { "\($0.primaryKey) \($0.globalID) \($0.attributes)" })
        try insert(books[100...])
        try bulk.finishBulkLoad()
        #expect(try kept() == books.map { "\($0.primaryKey) \($0.globalID) \($0.attributes)" })
        #expect(try store.count(FetchRequest(entity: "Book")) == 300)
    }

    /// A page of exactly as many rows as one statement inserts, and one row more, read back as they were written.
    @Test(arguments: [0, 1])
    func fullAndPartialBatchesReadBack(extra: Int) throws {
        let dir = try TemporaryDirectory("coredata-insert-batch-sizes")
        defer { dir.remove() }
        let schema = try CoreDataPageInsertTests.librarySchema()
        let storeUUID = UUID()
        let url = dir.path("Sizes.sqlite")
        let store = try CoreDataStoreBackend().open(
            at: url, options: StoreOptions(), creating: StoreMetadata(storeType: "coredata", storeUUID: storeUUID, schema: schema))
        defer { try? store.close() }
        let plan = try #require(try (store as? CoreDataStore)?.requireWriter().1.plan.entities["Review"])
        let count = plan.table.insertBatchRows + extra
        #expect(plan.table.insertBatchRows > 1)
        let reviews = try CoreDataPageInsertTests.libraryRecords(schema, storeUUID: storeUUID, books: 300)
            .filter { $0.entity == "Review" }.sorted { $0.primaryKey < $1.primaryKey }.prefix(count)
            .map { r in
                var r = r
                r.relationships = r.relationships.map { _ in .toOne(nil) }
                return r
            }
        let bulk = try #require(store as? any BulkLoadingStore)
        let sink = try #require(store as? any PageInsertingStore)
        #expect(try bulk.beginBulkLoad())
        var page = RecordPage(entity: "Review")
        for r in reviews { page.append(r) }
        try sink.insert(page)
        try bulk.finishBulkLoad()
        #expect(try store.scan(entity: "Review", after: nil, limit: .max) == reviews)
    }
}
