@_spi(BackendKit) @testable import CoreDataBackend
import Foundation
@_spi(BackendKit) import StoreAPI
import StoreTestSupport
import Testing

/// Saves with history write Core Data's persistent history: `ATRANSACTION`, `ACHANGE`, `ATRANSACTIONSTRING` and their
/// `Z_PRIMARYKEY` rows, checked in the file itself and read back through `history(after:)`; a corpus store with
/// history keeps its transaction through coredata → lmdb → coredata.
@Suite struct CoreDataHistoryWriteTests {
    static func rows(_ url: URL, _ sql: String) throws -> [[ReadOnlyDatabase.Value]] {
        try ReadOnlyDatabase.open(url).rows(sql)
    }

    static func entityNumber(_ url: URL, _ name: String) throws -> Int64? {
        try rows(url, "SELECT Z_ENT FROM Z_PRIMARYKEY WHERE Z_NAME = '\(name)'").first?.first?.int
    }

    @Test func savesWriteCoreDataHistoryRows() throws {
        let dir = try TemporaryDirectory("coredata-history-write")
        defer { dir.remove() }
        let url = dir.path("Library.sqlite")
        let schema = try CoreDataWriteTests.schema()
        let start = Date()
        var ids: (author: UUID, book: UUID) = (UUID(), UUID())
        var keys: (author: Int64, book: Int64) = (0, 0)
        do {
            let coordinator = StoreCoordinator(schema: schema, registry: BackendRegistry(backends: [CoreDataStoreBackend()]))
            let loaded = try coordinator.addStore(StoreDescription(
                url: url, type: "coredata", options: StoreOptions(historyTracking: true)))
            let context = coordinator.newContext()
            context.author = "tester"
            context.name = "editor"
            let author = try context.insert("Author", ["name": .string("Ada")])
            let book = try context.insert("Book", ["title": .string("One")])
            try context.save()
            try book.setValue(.string("Uno"), forKey: "title")
            try context.save()
            context.author = nil
            try context.delete(book)
            try context.save()
            ids = (author.globalID, book.globalID)
            keys = (author.objectID.primaryKey, book.objectID.primaryKey)
            try coordinator.removeStore(loaded)
        }
        let authorEnt = try #require(try Self.entityNumber(url, "Author"))
        let bookEnt = try #require(try Self.entityNumber(url, "Book"))

        // The rows, as Core Data lays them out.
        let strings = Dictionary(uniqueKeysWithValues: try Self.rows(url, "SELECT Z_PK, ZNAME, Z_ENT FROM ATRANSACTIONSTRING").map {
            ($0[0].int ?? 0, $0[1].text ?? "")
        })
        #expect(Set(try Self.rows(url, "SELECT Z_ENT FROM ATRANSACTIONSTRING").map { $0[0].int }) == [16003])
        let named = ["tester", "editor", ProcessInfo.processInfo.processName] + [Bundle.main.bundleIdentifier].compactMap { $0 }
        #expect(Set(strings.values) == Set(named) && strings.count == Set(named).count, "\(strings)")
        let transactions = try Self.rows(
            url, "SELECT Z_PK, Z_ENT, ZTIMESTAMP, ZAUTHORTS, ZPROCESSIDTS, ZCONTEXTNAMETS FROM ATRANSACTION ORDER BY Z_PK")
        #expect(transactions.map { $0[0].int } == [1, 2, 3])
        #expect(transactions.allSatisfy { $0[1].int == 16002 })
        for t in transactions {
            let seconds = try #require(t[2].real)
            #expect(abs(seconds - start.timeIntervalSinceReferenceDate) < 60, "2001-based seconds")
            #expect(t[4].int.flatMap { strings[$0] } == ProcessInfo.processInfo.processName)
        }
        #expect(transactions.map { $0[3].int.flatMap { strings[$0] } } == ["tester", "tester", nil])
        #expect(transactions.map { $0[5].int.flatMap { strings[$0] } } == ["editor", "editor", "editor"])
        let changes = try Self.rows(
            url, "SELECT Z_PK, Z_ENT, ZCHANGETYPE, ZENTITY, ZENTITYPK, ZTRANSACTIONID, ZCOLUMNS FROM ACHANGE ORDER BY Z_PK")
        #expect(changes.map { $0[0].int } == [1, 2, 3, 4])
        #expect(changes.allSatisfy { $0[1].int == 16001 })
        #expect(changes.map { $0[2].int } == [0, 0, 1, 2])
        #expect(changes.map { $0[3].int } == [authorEnt, bookEnt, bookEnt, bookEnt])
        #expect(changes.map { $0[4].int } == [keys.author, keys.book, keys.book, keys.book])
        #expect(changes.map { $0[5].int } == [1, 1, 2, 3])
        // Inserts and deletes have no bitmap; the update's names `title`, fourth of Book's properties by name
        // (author, pages, tags, title, weight): CoreDataHistoryColumns' unverified layout.
        #expect(changes.map { $0[6].bytes.map(Array.init) } == [nil, nil, [0x08], nil])
        let maxima = Dictionary(uniqueKeysWithValues: try Self.rows(
            url, "SELECT Z_ENT, Z_MAX FROM Z_PRIMARYKEY WHERE Z_ENT >= 16000").map { ($0[0].int ?? 0, $0[1].int ?? 0) })
        #expect(maxima == [16001: 4, 16002: 3, 16003: Int64(strings.count)])
        #expect(try CoreDataStoreBackend().checkIntegrity(at: url) == [])

        // Read back: the same transactions.
        let store = try CoreDataStoreBackend().open(at: url, options: StoreOptions(isReadOnly: true), creating: nil)
        defer { try? store.close() }
        let history = try store.history(after: nil)
        #expect(history.map(\.token) == [1, 2, 3])
        #expect(history.map(\.author) == ["tester", "tester", nil])
        #expect(history.map(\.contextName) == ["editor", "editor", "editor"])
        #expect(history.allSatisfy { $0.processName == ProcessInfo.processInfo.processName })
        #expect(history.allSatisfy { $0.bundleIdentifier == Bundle.main.bundleIdentifier })
        #expect(history.map { $0.changes.map(\.kind) } == [[.insert, .insert], [.update], [.delete]])
        #expect(history.map { $0.changes.map(\.globalID) } == [[ids.author, ids.book], [ids.book], [ids.book]],
                "the deleted record is named by its own identifier")
        #expect(history.map { $0.changes.map(\.entity) } == [["Author", "Book"], ["Book"], ["Book"]])
        #expect(history[1].changes.first?.changedKeys == ["title"])
        #expect(try store.history(after: 1).map(\.token) == [2, 3])
    }

    /// A transaction carried with a token must come after the store's last; the save is refused whole.
    @Test func aTokenNotAfterTheLastIsRefused() throws {
        let dir = try TemporaryDirectory("coredata-history-token")
        defer { dir.remove() }
        let url = dir.path("Library.sqlite")
        let schema = try CoreDataWriteTests.schema()
        let store = try CoreDataStoreBackend().open(
            at: url, options: StoreOptions(historyTracking: true),
            creating: StoreMetadata(storeType: "coredata", storeUUID: UUID(), schema: schema))
        defer { try? store.close() }
        let tag = try schema.requireEntity("Tag").newRecord(primaryKey: 1, globalID: UUID())
        func transaction(_ token: Int64) -> HistoryTransaction {
            HistoryTransaction(token: token, timestamp: Date(timeIntervalSinceReferenceDate: 100), author: nil, changes: [
                HistoryChange(kind: .insert, entity: "Tag", primaryKey: 1, globalID: tag.globalID),
            ])
        }
        try store.save(StoreChanges(inserted: [tag], history: [transaction(5)]))
        #expect(throws: StoreError.self) { try store.save(StoreChanges(history: [transaction(5)])) }
        #expect(try store.history(after: nil).map(\.token) == [5])
        try store.save(StoreChanges(history: [transaction(HistoryTransaction.assignToken)]))
        #expect(try store.history(after: nil).map(\.token) == [5, 6])
        #expect(try store.history(after: nil).first?.timestamp == Date(timeIntervalSinceReferenceDate: 100))
    }

    /// The corpus store with persistent history, converted to lmdb and back: its transaction comes back whole
    /// (token, timestamp, the names of the process and app that wrote it, changes with their entities, keys and
    /// global IDs), and `storectl diff` finds the two stores identical.
    @Test func corpusHistoryRoundTripsThroughLMDB() throws {
        guard let source = PackagePaths.corpus("stores/alemar11__CoreDataPlus/SampleModel2_V2.sqlite") else {
            Issue.record("corpus store SampleModel2_V2.sqlite is absent: skipped")
            return
        }
        let dir = try TemporaryDirectory("coredata-history-roundtrip")
        defer { dir.remove() }
        let lmdb = dir.path("y.lmdb"), back = dir.path("z.sqlite")
        let there = try Child.storectl(["convert", source.path, lmdb.path])
        #expect(there.status == 0, "\(there.stderr)")
        let again = try Child.storectl(["convert", lmdb.path, back.path, "--type", "coredata"])
        #expect(again.status == 0, "\(again.stderr)")
        let diff = try Child.storectl(["diff", source.path, back.path])
        #expect(diff.status == 0 && (diff.stdout + diff.stderr).contains("identical"), "\(diff.stdout)\(diff.stderr)")
        let backend = CoreDataStoreBackend()
        let original = try backend.open(at: source, options: StoreOptions(isReadOnly: true), creating: nil)
        defer { try? original.close() }
        let copy = try backend.open(at: back, options: StoreOptions(isReadOnly: true), creating: nil)
        defer { try? copy.close() }
        let history = try original.history(after: nil)
        #expect(history.count == 1 && history.first?.changes.isEmpty == false)
        // Core Data recorded the test runner that wrote the store, by ATRANSACTIONSTRING keys.
        #expect(history.first?.processName == "xctest")
        #expect(history.first?.bundleIdentifier == "com.apple.dt.xctest.tool")
        #expect(history.first?.author == nil && history.first?.contextName == nil)
        #expect(Set(try Self.rows(back, "SELECT ZNAME FROM ATRANSACTIONSTRING").compactMap { $0[0].text })
                == ["xctest", "com.apple.dt.xctest.tool"], "the converting tool does not name itself")
        #expect(try copy.history(after: nil) == history)
        // Derived identifiers only: no table of kept ones.
        #expect(try !ReadOnlyDatabase.open(back).tableNames().contains(CoreDataGlobalIDTable.name))
    }
}
