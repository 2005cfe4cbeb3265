import Foundation
@_spi(BackendKit) import StoreAPI
import StoreTestSupport
import Testing
@testable import SQLiteBackend

/// A save inserting many records into an empty table builds its global-ID and entity-code indexes after the inserts
/// instead of row by row: the store ends with exactly the indexes it had, finds every record, and a save that breaks
/// the global IDs' uniqueness fails with the error the row-by-row path gives, changing nothing.
@Suite struct SQLiteDeferredIndexTests {
    /// Enough records to defer the indexes of the people's table.
    static let count = SQLiteSaveWriter.deferredIndexMinimum + 10

    /// People and authors (one table, so both its indexes are deferred), key `i + 1` for position `i`.
    static func people(_ schema: Schema, ids: [UUID]) -> [Record] {
        ids.enumerated().map { i, id in
            schema.record(i % 3 == 0 ? "Author" : "Person", Int64(i + 1), ["name": .string("person \(i)")], globalID: id)
        }
    }

    @Test func aLargeSaveIntoAnEmptyTableKeepsItsIndexesAndFindsEveryRecord() throws {
        let dir = try TemporaryDirectory("sqlite-deferred-indexes")
        let schema = try Fixture.schema()
        try Fixture.open(dir.path("fresh.sqlite"), schema: schema).close()
        let expected = try SQLiteBulkLoadTests.indexes(dir.path("fresh.sqlite"))
        #expect(expected.keys.contains("X_E_Person._gid") && expected.keys.contains("X_E_Person._ent"))

        let store = try Fixture.open(dir.path("large.sqlite"), schema: schema)
        let ids = (0..<Self.count).map { _ in UUID() }
        try store.save(StoreChanges(inserted: Self.people(schema, ids: ids)))
        #expect(try store.count(FetchRequest(entity: "Person")) == Self.count)
        #expect(try store.count(FetchRequest(entity: "Author", includesSubentities: false)) == (Self.count + 2) / 3)
        #expect(Set(try store.fetch(FetchRequest(entity: "Person")).map(\.globalID)) == Set(ids))
        // The rebuilt global-ID index still refuses a taken global ID.
        let clash = schema.record("Person", Int64(Self.count + 1), ["name": "clash"], globalID: ids[7])
        #expect(throws: StoreError.self) { try store.save(StoreChanges(inserted: [clash])) }
        try store.close()
        #expect(try SQLiteBulkLoadTests.indexes(dir.path("large.sqlite")) == expected)
    }

    /// What a failed save says: its operation and reason, without the store's file.
    static func failure(_ body: () throws -> Void) -> String? {
        do {
            try body()
            return nil
        } catch let StoreError.io(_, operation, reason) {
            return "\(operation): \(reason)"
        } catch {
            return "\(error)"
        }
    }

    /// The same inserts into an empty table (indexes deferred) and into one holding a record (row by row), with a
    /// global ID repeated, a primary key repeated, or both (the global ID first): the same error, and the deferred
    /// save leaves the store as it was, indexes included.
    @Test(arguments: [(gid: true, pk: false), (gid: false, pk: true), (gid: true, pk: true)])
    func aBrokenLargeSaveFailsAsTheRowByRowPathFails(repeats: (gid: Bool, pk: Bool)) throws {
        let dir = try TemporaryDirectory("sqlite-deferred-indexes")
        let schema = try Fixture.schema()
        var ids = (0..<Self.count).map { _ in UUID() }
        if repeats.gid { ids[3_000] = ids[10] }
        var records = Self.people(schema, ids: ids)
        if repeats.pk { records[3_500].primaryKey = records[20].primaryKey }

        let empty = try Fixture.open(dir.path("empty.sqlite"), schema: schema)
        let deferred = Self.failure { try empty.save(StoreChanges(inserted: records)) }
        #expect(try empty.count(FetchRequest(entity: "Person")) == 0)
        try empty.close()
        try Fixture.open(dir.path("fresh.sqlite"), schema: schema).close()
        #expect(try SQLiteBulkLoadTests.indexes(dir.path("empty.sqlite")) == SQLiteBulkLoadTests.indexes(dir.path("fresh.sqlite")))

        let holding = try Fixture.open(dir.path("holding.sqlite"), schema: schema)
        defer { try? holding.close() }
        try holding.save(StoreChanges(inserted: [schema.record("Person", 1_000_000, ["name": "already here"])]))
        let rowByRow = Self.failure { try holding.save(StoreChanges(inserted: records)) }
        #expect(deferred != nil)
        #expect(deferred == rowByRow)
        if repeats.gid { #expect(deferred?.contains(ids[10].uuidString) == true, "the repeated global ID is named") }
    }
}
