import Foundation
import LMDBBackend
import StoreAPI
import StoreTestSupport
import Testing

/// Every attribute type round-trips exactly, through a save and through closing and reopening the store.
@Suite struct LMDBValueTests {
    /// Samples covering the edge values of every attribute type.
    static func samples(_ schema: Schema) throws -> [Record] {
        var blob = [UInt8](repeating: 0, count: 1 << 20)
        for i in blob.indices { blob[i] = UInt8(truncatingIfNeeded: i &* 2_654_435_761 >> 7) }
        let nanWithPayload = Double(nan: 0x5_1234, signaling: false)
        let rows: [[String: StoreValue]] = [
            ["i16": .integer16(.min), "i32": .integer32(.min), "i64": .integer64(.min), "dbl": .double(nanWithPayload),
             "flt": .float(.nan), "str": .string("a\u{0}b\u{0}"), "flag": .boolean(false),
             "when": .date(.distantPast), "blob": .binary(Data()), "uid": .uuid(UUID()),
             "link": .uri(URL(string: "https://example.com/p%20q?x=1#frag")!), "dec": .decimal(Decimal(string: "-12345678901234567890.123456789")!),
             "archived": .binary(Data([0, 1, 2, 255])), "label": .null, "count": .integer32(0)],
            ["i16": .integer16(.max), "i32": .integer32(.max), "i64": .integer64(.max), "dbl": .double(-0.0),
             "flt": .float(-0.0), "str": .string("日本語 🎉 e\u{301} \u{10FFFF}"), "flag": .boolean(true),
             "when": .date(.distantFuture), "blob": .binary(Data(blob)), "uid": .uuid(UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0))),
             "link": .uri(URL(string: "file:///tmp/a%C3%A9b")!), "dec": .decimal(Decimal.nan), "count": .integer32(-1)],
            ["dbl": .double(.infinity), "flt": .float(-.infinity), "i64": .integer64(0), "str": .string(""),
             "when": .date(Date(timeIntervalSinceReferenceDate: -0.0)), "dec": .decimal(Decimal.greatestFiniteMagnitude),
             "blob": .binary(Data([0]))],
            ["dbl": .double(-.infinity), "flt": .float(.leastNonzeroMagnitude), "dec": .decimal(Decimal.leastNonzeroMagnitude),
             "when": .date(Date(timeIntervalSinceReferenceDate: 0.1 + 0.2)), "i16": .integer16(-1)],
            ["dbl": .double(.leastNonzeroMagnitude), "flt": .float(.greatestFiniteMagnitude), "dec": .decimal(0)],
            // Everything nil (and the defaults of label and count kept).
            [:],
        ]
        return rows.enumerated().map { i, values in schema.record("Sample", Int64(i + 1), values) }
    }

    @Test func everyAttributeTypeRoundTripsBitExactly() throws {
        let dir = try TemporaryDirectory("lmdb-tests")
        let schema = try LMDBFixture.schema()
        let url = dir.path("values.lmdb")
        let records = try Self.samples(schema)
        let store = try LMDBFixture.create(url, schema: schema)
        try store.save(StoreChanges(inserted: records))

        let fetched = try store.fetch(FetchRequest(entity: "Sample"))
        #expect(fetched == records, "values must come back bit for bit (StoreValue equality is identity)")
        // Spot checks of what identity means, so the comparison above cannot pass vacuously.
        let first = try #require(fetched.first)
        let e = try schema.requireEntity("Sample")
        if case .double(let d) = first.attributes[try #require(e.attributeIndex("dbl"))] {
            #expect(d.bitPattern == Double(nan: 0x5_1234, signaling: false).bitPattern)
        } else {
            Issue.record("dbl is not a double")
        }
        #expect(fetched[1].attributes[try #require(e.attributeIndex("dbl"))] != .double(0.0), "-0 is not 0")
        #expect(fetched[0].attributes[try #require(e.attributeIndex("blob"))] == .binary(Data()), "empty data is not nil")
        #expect(fetched[5].attributes[try #require(e.attributeIndex("label"))] == .string("default label"), "defaults are stored")
        #expect(fetched[0].attributes[try #require(e.attributeIndex("label"))] == .null, "an explicit nil is not the default")
        try store.close()

        let reopened = try LMDBFixture.open(url)
        #expect(try reopened.fetch(FetchRequest(entity: "Sample")) == records)
        #expect(try reopened.records(withKeys: [3, 1, 99], root: "Sample").map(\.primaryKey) == [3, 1])
        #expect(reopened.metadata == LMDBFixture.metadata(schema).withUUID(store.metadata.storeUUID))
        try reopened.close()
    }

    @Test func updatesAndDeletesPersist() throws {
        let dir = try TemporaryDirectory("lmdb-tests")
        let schema = try LMDBFixture.schema()
        let url = dir.path("updates.lmdb")
        var records = try Self.samples(schema)
        let store = try LMDBFixture.create(url, schema: schema)
        try store.save(StoreChanges(inserted: records))
        var changed = records[2]
        changed.attributes[0] = .integer16(42)
        try store.save(StoreChanges(updated: [changed], deleted: [records[0].key, RecordKey(entity: "Sample", primaryKey: 999)]))
        records[2] = changed
        records.removeFirst()
        try store.close()

        let reopened = try LMDBFixture.open(url)
        #expect(try reopened.fetch(FetchRequest(entity: "Sample")) == records)
        #expect(try reopened.count(FetchRequest(entity: "Sample")) == records.count)
        // Updating a record that is not stored is refused, and nothing of the save is kept.
        let ghost = schema.record("Sample", 500)
        let fresh = schema.record("Sample", 501)
        let error = storeError { try reopened.save(StoreChanges(inserted: [fresh], updated: [ghost])) }
        #expect(error?.caseName == "objectNotFound")
        #expect(try reopened.records(withKeys: [501], root: "Sample").isEmpty, "a failed save stores nothing")
        try reopened.close()
    }

    @Test func interleavedInsertsIntoOneHierarchyAllLand() throws {
        let dir = try TemporaryDirectory("lmdb-tests")
        let schema = try LMDBFixture.schema()
        let store = try LMDBFixture.create(dir.path("interleaved.lmdb"), schema: schema)
        defer { try? store.close() }
        let plan: [(String, Int64)] = [("Book", 1), ("Novel", 5), ("Book", 3), ("Article", 4), ("Novel", 2), ("Book", 9), ("Book", 7), ("Novel", 8), ("Article", 6)]
        let records = plan.map { schema.record($0.0, $0.1, ["title": .string("w\($0.1)")]) }
        try store.save(StoreChanges(inserted: records))
        #expect(try store.fetch(FetchRequest(entity: "Work")) == records.sorted { $0.primaryKey < $1.primaryKey })
        try store.save(StoreChanges(inserted: [schema.record("Novel", 10, ["title": "w10"]), schema.record("Book", 0, ["title": "w0"])]))
        #expect(try store.fetch(FetchRequest(entity: "Work")).map(\.primaryKey) == Array(0...10))
        #expect(try store.allocatePrimaryKeys(root: "Work", count: 1) == 11)
    }

    @Test func malformedRecordsAreRefusedBeforeWriting() throws {
        let dir = try TemporaryDirectory("lmdb-tests")
        let schema = try LMDBFixture.schema()
        let store = try LMDBFixture.create(dir.path("typed.lmdb"), schema: schema)
        defer { try? store.close() }
        var wrongType = schema.record("Sample", 1)
        wrongType.attributes[0] = .string("not a number")
        #expect(storeError { try store.save(StoreChanges(inserted: [wrongType])) }?.caseName == "typeMismatch")
        var short = schema.record("Sample", 2)
        short.attributes.removeLast()
        #expect(storeError { try store.save(StoreChanges(inserted: [short])) } != nil)
        let abstract = Record(entity: "Work", primaryKey: 3, globalID: UUID(), attributes: [], relationships: [])
        #expect(storeError { try store.save(StoreChanges(inserted: [abstract])) }?.caseName == "abstractEntity")
        #expect(try store.count(FetchRequest(entity: "Sample")) == 0)
        // The same primary key twice is refused too.
        let a = schema.record("Sample", 7)
        try store.save(StoreChanges(inserted: [a]))
        let b = schema.record("Sample", 7)
        #expect(storeError { try store.save(StoreChanges(inserted: [b])) } != nil)
        #expect(try store.fetch(FetchRequest(entity: "Sample")) == [a])
    }
}

extension StoreMetadata {
    func withUUID(_ uuid: UUID) -> StoreMetadata {
        var m = self
        m.storeUUID = uuid
        return m
    }
}
