import Foundation
import StoreAPI
import StoreTestSupport
import Testing
import XMLBackend

/// The keys-only and history-only reads writers and upgrades use: the same keys, in the same order, and the same
/// history as a whole read, for our stores and for Core Data's own XML stores.
@Suite struct XMLPartialReadTests {
    static func wholeRead(_ url: URL) throws -> (keys: [String], history: [HistoryTransaction]) {
        var keys: [String] = []
        var history: [HistoryTransaction] = []
        try XMLStoreBackend().readStore(at: url) { element in
            switch element {
            case .record(let r): keys.append("\(r.entity)/\(r.primaryKey)")
            case .history(let t): history.append(t)
            case .metadata: break
            }
        }
        return (keys, history)
    }

    static func partialReads(_ url: URL) throws -> (keys: [String], history: [HistoryTransaction]) {
        var keys: [String] = []
        var history: [HistoryTransaction] = []
        try XMLStoreBackend().readPrimaryKeys(at: url) { keys.append("\($0)/\($1)") }
        try XMLStoreBackend().readHistory(at: url) { history.append($0) }
        return (keys, history)
    }

    @Test func keysAndHistoryEqualAWholeRead() throws {
        let dir = try TemporaryDirectory("xml-partial")
        let url = dir.path("store.xml")
        let schema = try Fixture.schema()
        let store = try openStore(url, creating: Fixture.metadata(schema))
        var changes = StoreChanges(inserted: (1...40).map { schema.record("Book", Int64($0 * 3), ["title": .string("t\($0) <&>")]) })
        changes.inserted += (1...5).map { schema.record("Tag", Int64($0), ["label": .string("tag \($0)")]) }
        changes.history = [HistoryTransaction(token: HistoryTransaction.assignToken, timestamp: Date(timeIntervalSinceReferenceDate: 1),
                                              author: "a", changes: [HistoryChange(kind: .insert, entity: "Tag", primaryKey: 1, globalID: UUID())])]
        try store.save(changes)
        try store.save(StoreChanges(deleted: [RecordKey(entity: "Book", primaryKey: 3)], history: [
            HistoryTransaction(token: HistoryTransaction.assignToken, timestamp: Date(timeIntervalSinceReferenceDate: 2), author: nil, changes: []),
        ]))
        try store.close()

        let whole = try Self.wholeRead(url)
        let partial = try Self.partialReads(url)
        #expect(whole.keys.count == 44 && whole.history.count == 2)
        #expect(partial.keys == whole.keys)
        #expect(partial.history == whole.history)
    }

    @Test func coreDataXMLStoresReadTheSameKeys() throws {
        let files = XMLCoreDataCorpusTests.corpusFiles()
        guard !files.isEmpty else {
            print("skipped: the corpus's xmlstores folder is absent")
            return
        }
        for url in files where XMLStoreBackend().sniff(url) == .store {
            let whole = try Self.wholeRead(url)
            let partial = try Self.partialReads(url)
            #expect(partial.keys == whole.keys, "\(url.lastPathComponent)")
            #expect(!whole.keys.isEmpty, "\(url.lastPathComponent) has records")
        }
    }

    @Test("a truncated file is an error for the partial reads too")
    func truncatedFileIsAnError() throws {
        let dir = try TemporaryDirectory("xml-partial")
        let url = dir.path("store.xml")
        let schema = try Fixture.schema()
        let store = try openStore(url, creating: Fixture.metadata(schema))
        try store.save(StoreChanges(inserted: (1...20).map { schema.record("Tag", Int64($0), ["label": .string("tag \($0)")]) }))
        try store.close()
        let data = try Data(contentsOf: url)
        try data.prefix(data.count * 2 / 3).write(to: url)
        #expect(throws: StoreError.self) { try XMLStoreBackend().readPrimaryKeys(at: url) { _, _ in } }
        #expect(throws: StoreError.self) { try XMLStoreBackend().readHistory(at: url) { _ in } }
    }
}
