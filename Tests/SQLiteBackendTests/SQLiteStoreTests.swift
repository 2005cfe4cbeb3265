import Foundation
import StoreAPI
import StoreTestSupport
import Testing
@testable import SQLiteBackend

/// Store-level behaviour: persistence, history, key allocation across connections, read-only opens, uniqueness,
/// atomic saves and options.
@Suite struct SQLiteStoreTests {
    @Test func dataAndMetadataPersistAcrossReopen() throws {
        let dir = try TemporaryDirectory("sqlitestore-tests")
        let schema = try Fixture.schema()
        let url = dir.path("persist.sqlite")
        let uuid = UUID()
        var store = try Fixture.open(url, schema: schema, uuid: uuid)
        let records = SQLiteRelationshipTests.library(schema).all
        try store.save(StoreChanges(inserted: records))
        try store.close()
        #expect(throws: (any Error).self, "a closed store refuses work") { try store.fetch(FetchRequest(entity: "Book")) }

        // Reopening ignores the caller's metadata: the stored schema and UUID win.
        let other = try Schema(entities: [EntityDescription(name: "Other")])
        store = try SQLiteStoreBackend().open(at: url, options: StoreOptions(), creating: Fixture.metadata(other))
        defer { try? store.close() }
        #expect(store.metadata.storeUUID == uuid)
        #expect(store.metadata.schema == schema)
        #expect(store.metadata.custom["app"] == .string("tests"))
        #expect(try store.fetch(FetchRequest(entity: "Book")).count == 6)
        #expect(try store.count(FetchRequest(entity: "Person")) == 5)
    }

    @Test func missingStoreWithoutMetadataIsNotFound() throws {
        let dir = try TemporaryDirectory("sqlitestore-tests")
        let url = dir.path("absent.sqlite")
        #expect(errorCase { _ = try SQLiteStoreBackend().open(at: url, options: StoreOptions(), creating: nil) } == "storeNotFound")
        let schema = try Fixture.schema()
        let noCreate = StoreOptions(createIfMissing: false)
        #expect(errorCase { _ = try Fixture.open(url, schema: schema, options: noCreate) } == "storeNotFound")
        #expect(dir.listing().isEmpty)
    }

    @Test func historyAppendsAndReadsInTokenOrder() throws {
        let dir = try TemporaryDirectory("sqlitestore-tests")
        let schema = try Fixture.schema()
        let url = dir.path("history.sqlite")
        var store = try Fixture.open(url, schema: schema)
        let change = HistoryChange(kind: .insert, entity: "Tag", primaryKey: 1, globalID: UUID())
        let t1 = HistoryTransaction(token: HistoryTransaction.assignToken, timestamp: Date(timeIntervalSinceReferenceDate: 1.5), author: "me", changes: [change])
        try store.save(StoreChanges(inserted: [schema.record("Tag", 1)], history: [t1]))
        let t2 = HistoryTransaction(token: 10, timestamp: Date(timeIntervalSinceReferenceDate: 2), author: nil, changes: [])
        let t3 = HistoryTransaction(token: HistoryTransaction.assignToken, timestamp: Date(timeIntervalSinceReferenceDate: 3), author: "x", changes: [change])
        try store.save(StoreChanges(history: [t2, t3]))
        var all = try store.history(after: nil)
        #expect(all.map(\.token) == [1, 10, 11])
        #expect(all.first?.changes == [change] && all.first?.author == "me")
        #expect(all.first?.timestamp == t1.timestamp)
        #expect(try store.history(after: 1).map(\.token) == [10, 11])
        #expect(try store.history(after: 11).isEmpty)

        // A token that does not increase fails the whole save, records included.
        let stale = HistoryTransaction(token: 5, timestamp: Date(), author: nil, changes: [])
        #expect(errorCase { try store.save(StoreChanges(inserted: [schema.record("Tag", 2)], history: [stale])) } == "io")
        #expect(try store.fetch(FetchRequest(entity: "Tag")).map(\.primaryKey) == [1])

        try store.close()
        store = try SQLiteStoreBackend().open(at: url, options: StoreOptions(), creating: nil)
        defer { try? store.close() }
        all = try store.history(after: nil)
        #expect(all.map(\.token) == [1, 10, 11])
    }

    @Test func keyAllocationNeverOverlapsAcrossConnections() throws {
        let dir = try TemporaryDirectory("sqlitestore-tests")
        let schema = try Fixture.schema()
        let url = dir.path("keys.sqlite")
        let a = try Fixture.open(url, schema: schema)
        let b = try SQLiteStoreBackend().open(at: url, options: StoreOptions(timeout: 30), creating: nil)
        defer {
            try? a.close()
            try? b.close()
        }
        let ranges = RangeCollector()
        DispatchQueue.concurrentPerform(iterations: 2) { worker in
            let store = worker == 0 ? a : b
            for i in 0..<50 {
                do {
                    let n = i % 7 + 1
                    let first = try store.allocatePrimaryKeys(root: "Book", count: n)
                    ranges.add(first..<(first + Int64(n)))
                } catch {
                    ranges.fail("\(error)")
                }
            }
        }
        #expect(ranges.failures.isEmpty, "\(ranges.failures)")
        let sorted = ranges.ranges.sorted { $0.lowerBound < $1.lowerBound }
        #expect(sorted.count == 100)
        for (x, y) in zip(sorted, sorted.dropFirst()) {
            #expect(x.upperBound <= y.lowerBound, "\(x) overlaps \(y)")
        }
        #expect(sorted.first?.lowerBound == 1)

        // Single keys (what a context asks for) from both connections never collide either.
        let singles = RangeCollector()
        DispatchQueue.concurrentPerform(iterations: 2) { worker in
            let store = worker == 0 ? a : b
            for _ in 0..<600 {
                do {
                    let k = try store.allocatePrimaryKeys(root: "Book", count: 1)
                    singles.add(k..<(k + 1))
                } catch {
                    singles.fail("\(error)")
                }
            }
        }
        #expect(singles.failures.isEmpty)
        let singleKeys = singles.ranges.map(\.lowerBound)
        #expect(Set(singleKeys).count == 1_200)
        #expect(Set(singleKeys).isDisjoint(with: sorted.flatMap { Array($0) }))

        // Records inserted with their own keys (a transfer) push the allocator above them, in this connection
        // and in any other.
        let top = (singleKeys.max() ?? 0) + 10_000
        try a.save(StoreChanges(inserted: [schema.record("Book", top)]))
        #expect(try a.allocatePrimaryKeys(root: "Book", count: 1) > top)
        // Several records of one save, in any key order, inside the block this connection reserved: the next key
        // is above the highest of them, not above the last one saved.
        let reserved = try a.allocatePrimaryKeys(root: "Book", count: 1)
        try a.save(StoreChanges(inserted: [40, 3, 20].map { schema.record("Book", reserved + $0) }))
        #expect(try a.allocatePrimaryKeys(root: "Book", count: 1) == reserved + 41)
        let c = try SQLiteStoreBackend().open(at: url, options: StoreOptions(), creating: nil)
        defer { try? c.close() }
        #expect(try c.allocatePrimaryKeys(root: "Book", count: 5) > top)
        #expect(errorCase { _ = try a.allocatePrimaryKeys(root: "Nope", count: 1) } == "unknownEntity")

        // The very top of the key space is a clear error, not an overflow.
        try a.save(StoreChanges(inserted: [schema.record("Tag", .max), schema.record("Tag", .min)]))
        #expect(errorCase { _ = try c.allocatePrimaryKeys(root: "Tag", count: 1) } == "io")
        #expect(try c.records(withKeys: [.max, .min], root: "Tag").count == 2)
    }

    @Test func readOnlyOpenReadsButNeverWrites() throws {
        let dir = try TemporaryDirectory("sqlitestore-tests")
        let schema = try Fixture.schema()
        let url = dir.path("ro.sqlite")
        let writer = try Fixture.open(url, schema: schema, options: StoreOptions(backend: ["sqlite.journal_mode": "DELETE"]))
        try writer.save(StoreChanges(inserted: [schema.record("Tag", 1, ["name": "t"])]))
        try writer.close()
        let before = try Data(contentsOf: url)

        let reader = try SQLiteStoreBackend().open(at: url, options: StoreOptions(isReadOnly: true), creating: nil)
        #expect(try reader.fetch(FetchRequest(entity: "Tag")).count == 1)
        #expect(errorCase { try reader.save(StoreChanges(inserted: [schema.record("Tag", 2)])) } == "readOnly")
        #expect(errorCase { _ = try reader.allocatePrimaryKeys(root: "Tag", count: 1) } == "readOnly")
        try reader.close()
        #expect(try Data(contentsOf: url) == before)

        // A read-only open never creates a store.
        let absent = dir.path("absent.sqlite")
        #expect(errorCase { _ = try Fixture.open(absent, schema: schema, options: StoreOptions(isReadOnly: true)) } == "readOnly")
        #expect(!FileManager.default.fileExists(atPath: absent.path))
    }

    @Test func uniquenessFollowsTheEvaluatorsNilAndNaNRules() throws {
        let dir = try TemporaryDirectory("sqlitestore-tests")
        let schema = try Fixture.schema()
        let store = try Fixture.open(dir.path("unique.sqlite"), schema: schema)
        defer { try? store.close() }
        // nil never conflicts.
        try store.save(StoreChanges(inserted: [
            schema.record("Book", 1, ["isbn": nil]), schema.record("Book", 2, ["isbn": nil]),
            schema.record("Book", 3, ["isbn": "x"]),
        ]))
        let duplicate = schema.record("Book", 4, ["isbn": "x"])
        do {
            try store.save(StoreChanges(inserted: [schema.record("Book", 5, ["isbn": "y"]), duplicate]))
            Issue.record("a duplicate isbn was saved")
        } catch StoreError.uniquenessViolation(let entity, let attributes, let values, let existing) {
            #expect(entity == "Book" && attributes == ["isbn"] && values == ["x"])
            #expect(existing?.primaryKey == 3 && existing?.entity == "Book")
        }
        #expect(try store.count(FetchRequest(entity: "Book")) == 3, "the failed save stored nothing")

        // Two records may swap values in one save.
        try store.save(StoreChanges(inserted: [schema.record("Book", 6, ["isbn": "y"])]))
        try store.save(StoreChanges(updated: [
            schema.record("Book", 3, ["isbn": "y"]), schema.record("Book", 6, ["isbn": "x"]),
        ]))
        let isbns = try store.fetch(FetchRequest(entity: "Book", predicate: .comparison(.keyPath(["isbn"]), .notEqual, .constant(nil), [])))
            .map { ($0.primaryKey, $0.attributes[schema.entity(named: "Book")!.attributeIndex("isbn")!]) }
        #expect(isbns.map(\.0) == [3, 6] && isbns.map(\.1) == ["y", "x"])

        // NaN equals nothing, so two NaNs coexist; 0.0 and -0.0 are equal numbers, so they conflict.
        try store.save(StoreChanges(inserted: [
            schema.record("Measure", 1, ["value": .double(.nan)]),
            schema.record("Measure", 2, ["value": .double(.nan)]),
            schema.record("Measure", 3, ["value": .double(0.0)]),
        ]))
        #expect(errorCase { try store.save(StoreChanges(inserted: [schema.record("Measure", 4, ["value": .double(-0.0)])])) } == "uniquenessViolation")

        // Uniqueness on a parent applies to the whole hierarchy (Person.email, shared by Author and Reader).
        try store.save(StoreChanges(inserted: [schema.record("Author", 1, ["email": "a@x"])]))
        #expect(errorCase { try store.save(StoreChanges(inserted: [schema.record("Reader", 2, ["email": "a@x"])])) } == "uniquenessViolation")
    }

    @Test func savesAreAllOrNothing() throws {
        let dir = try TemporaryDirectory("sqlitestore-tests")
        let schema = try Fixture.schema()
        let store = try Fixture.open(dir.path("atomic.sqlite"), schema: schema)
        defer { try? store.close() }
        try store.save(StoreChanges(inserted: [schema.record("Tag", 1, ["name": "one"])]))
        // A duplicate key after a good insert, an update of a missing record, a delete: nothing may stick.
        #expect(errorCase {
            try store.save(StoreChanges(inserted: [schema.record("Tag", 2), schema.record("Tag", 1)]))
        } == "io")
        #expect(errorCase {
            try store.save(StoreChanges(
                updated: [schema.record("Tag", 99)], deleted: [RecordKey(entity: "Tag", primaryKey: 1)]))
        } == "objectNotFound")
        #expect(try store.fetch(FetchRequest(entity: "Tag")).map(\.primaryKey) == [1])
        // The same global ID twice is refused too.
        var twin = schema.record("Tag", 3)
        twin.globalID = try #require(try store.fetch(FetchRequest(entity: "Tag")).first).globalID
        #expect(errorCase { try store.save(StoreChanges(inserted: [twin])) } == "io")
        // Metadata saved with changes is stored; a schema that lays records out differently is refused.
        var m = store.metadata
        m.custom["saved"] = .bool(true)
        try store.save(StoreChanges(metadata: m))
        #expect(store.metadata.custom["saved"] == .bool(true))
        var incompatible = m
        incompatible.schema = try Schema(entities: [EntityDescription(name: "Tag")])
        #expect(errorCase { try store.save(StoreChanges(metadata: incompatible)) } == "incompatibleSchema")
    }

    @Test func optionsChooseTheJournalAndAreValidated() throws {
        let dir = try TemporaryDirectory("sqlitestore-tests")
        let schema = try Fixture.schema()
        let url = dir.path("journal.sqlite")
        let store = try Fixture.open(url, schema: schema, options: StoreOptions(backend: ["sqlite.journal_mode": "delete", "sqlite.synchronous": "FULL"]))
        try store.save(StoreChanges(inserted: [schema.record("Tag", 1)]))
        #expect(dir.listing() == ["journal.sqlite"], "no -wal in DELETE mode")
        try store.close()
        #expect(errorCase { _ = try Fixture.open(url, schema: schema, options: StoreOptions(backend: ["sqlite.journal_mode": "OFF; DROP TABLE x"])) } == "unsupported")
        #expect(errorCase { _ = try Fixture.open(url, schema: schema, options: StoreOptions(backend: ["sqlite.synchronous": "sometimes"])) } == "unsupported")
    }
}

/// Collects allocated ranges from several threads.
final class RangeCollector: @unchecked Sendable {
    private let lock = NSLock()
    private(set) var ranges: [Range<Int64>] = []
    private(set) var failures: [String] = []

    func add(_ r: Range<Int64>) { lock.withLock { ranges.append(r) } }
    func fail(_ s: String) { lock.withLock { failures.append(s) } }
}
