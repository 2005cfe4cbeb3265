@_spi(BackendKit) @testable import CoreDataBackend
import Foundation
@_spi(BackendKit) import StoreAPI
import StoreTestSupport
import Testing

/// A bulk load checks a many-to-many's deferred side against the pairs the writing side inserted, without reading
/// the join table back, while those pairs are all the table holds. Every case here — sides that agree, that
/// disagree either way, a pair given twice on either side, join rows changed by an update or a delete during the
/// load — must end exactly as the check that reads the table back ends: the same error, or the same rows.
@Suite struct CoreDataJoinCheckTests {
    /// How the records given to a load differ from consistent ones.
    enum Change: String, CaseIterable, Sendable {
        case none, bookListsATagTwice, tagListsABookTwice, bookListsAnExtraTag, tagListsAnExtraBook, tagMissesABook
    }

    static func records(_ change: Change) throws -> [Record] {
        var records = try CoreDataIncrementalTests.records(books: 60)
        func index(_ entity: String, _ key: Int64) throws -> Int {
            try #require(records.firstIndex { $0.entity == entity && $0.primaryKey == key })
        }
        func isBook(_ r: Record) -> Bool { r.entity == "Book" || r.entity == "Novel" }
        let book = try #require(records.firstIndex { isBook($0) && $0.primaryKey == 3 })
        let tag = try index("Tag", 1)
        switch change {
        case .none:
            break
        case .bookListsATagTwice:
            let tags = records[book].relationships[1].keys
            records[book].relationships[1] = .toMany(tags + [tags[0]])
        case .tagListsABookTwice:
            let books = records[tag].relationships[0].keys
            records[tag].relationships[0] = .toMany(books + [books[0]])
        case .bookListsAnExtraTag:
            let tags = records[book].relationships[1].keys
            let other = try #require(records.first { $0.entity == "Tag" && !tags.contains($0.primaryKey) })
            records[book].relationships[1] = .toMany(tags + [other.primaryKey])
        case .tagListsAnExtraBook:
            let books = records[tag].relationships[0].keys
            let other = try #require(records.first { isBook($0) && !books.contains($0.primaryKey) })
            records[tag].relationships[0] = .toMany(books + [other.primaryKey])
        case .tagMissesABook:
            records[tag].relationships[0] = .toMany(Array(records[tag].relationships[0].keys.dropFirst()))
        }
        return records
    }

    /// The error of a load, or the join table's rows after it.
    static func outcome(_ url: URL, readingBack: Bool, _ load: (CoreDataStore) throws -> Void) throws -> String {
        let schema = try CoreDataIncrementalTests.schema.get()
        let opened = try CoreDataStoreBackend().open(
            at: url, options: StoreOptions(), creating: StoreMetadata(storeType: "coredata", storeUUID: UUID(), schema: schema))
        let store = try #require(opened as? CoreDataStore)
        store.finishesBulkLoadInFull = readingBack
        do {
            try load(store)
        } catch {
            try? store.close()
            return "error: \(error)"
        }
        try store.close()
        let table = try #require(try CoreDataIncrementalTests.rows(
            url, "SELECT name FROM sqlite_master WHERE name LIKE 'Z\\_%BOOKS' ESCAPE '\\' OR name LIKE 'Z\\_%TAGS' ESCAPE '\\'"
        ).first?.first?.text)
        let rows = try CoreDataIncrementalTests.rows(url, "SELECT * FROM \(table) ORDER BY 1, 2")
        #expect(!rows.isEmpty)
        return rows.map { "\($0.map { $0.int.map(String.init) ?? "-" })" }.joined(separator: " ")
    }

    @Test(arguments: Change.allCases)
    func aTransferEndsAsTheCheckReadingTheTableBack(_ change: Change) throws {
        let dir = try TemporaryDirectory("coredata-join-check")
        defer { dir.remove() }
        let records = try Self.records(change)
        var outcomes: [String] = []
        for readingBack in [false, true] {
            outcomes.append(try Self.outcome(dir.path("\(readingBack).sqlite"), readingBack: readingBack) { store in
                let schema = try CoreDataIncrementalTests.schema.get()
                let source = MemoryStore(url: nil, metadata: StoreMetadata(storeType: "memory", storeUUID: UUID(), schema: schema))
                try source.save(StoreChanges(inserted: records))
                try StoreTransfer(batchSize: 37).copy(from: source, to: store)
            })
        }
        #expect(outcomes[0] == outcomes[1], "\(change)")
        if change == .none || change == .bookListsATagTwice || change == .tagListsABookTwice {
            // Which side writes decides whether a pair given twice is an error; agreeing sides always load.
            if change == .none { #expect(!outcomes[0].hasPrefix("error"), "\(outcomes[0])") }
        } else {
            #expect(outcomes[0].contains("disagree"), "\(change): \(outcomes[0])")
        }
    }

    /// Join rows an update or a delete changes during a load are no longer the writing side's inserts.
    @Test(arguments: [false, true])
    func aLoadThatChangesJoinRowsEndsAsTheCheckReadingTheTableBack(deleting: Bool) throws {
        let dir = try TemporaryDirectory("coredata-join-check-changes")
        defer { dir.remove() }
        let records = try Self.records(.none)
        let schema = try CoreDataIncrementalTests.schema.get()
        var outcomes: [String] = []
        for readingBack in [false, true] {
            outcomes.append(try Self.outcome(dir.path("\(readingBack).sqlite"), readingBack: readingBack) { store in
                #expect(try store.beginBulkLoad())
                for entity in schema.entities.map(\.name) {
                    try store.save(StoreChanges(inserted: records.filter { $0.entity == entity }))
                }
                var book = try #require(records.first { $0.entity == "Book" && $0.primaryKey == 3 })
                if deleting {
                    try store.save(StoreChanges(deleted: [book.key]))
                } else {
                    // Book 3 drops its first tag; the tag still lists it, so the sides now disagree.
                    book.relationships[1] = .toMany(Array(book.relationships[1].keys.dropFirst()))
                    try store.save(StoreChanges(updated: [book]))
                }
                try store.finishBulkLoad()
            })
        }
        #expect(outcomes[0] == outcomes[1])
        #expect(outcomes[0].contains("disagree"), "\(outcomes[0])")
    }
}
