import CSQLite
import Foundation
import StoreAPI
import Testing
@testable import SQLiteBackend

/// An ordered to-many whose inverse is to-one (`Author.books`) takes its members from the members' foreign keys
/// and their positions from an order table, read separately and matched by `(owner, member)`. Whatever the order
/// table holds, the foreign keys decide membership: a member without a position comes first (by key), and a row
/// for a record that is not a member is ignored — by a key-range read (a scan) and by a key-list read alike.
@Suite struct SQLiteOrderTableTests {
    static func exec(_ url: URL, _ sql: String) throws {
        var db: OpaquePointer?
        defer { sqlite3_close(db) }
        guard sqlite3_open_v2(url.path, &db, SQLITE_OPEN_READWRITE, nil) == SQLITE_OK,
              sqlite3_exec(db, sql, nil, nil, nil) == SQLITE_OK
        else {
            throw StoreError.io(url, operation: "editing", reason: String(cString: sqlite3_errmsg(db)))
        }
    }

    static func books(of author: Int64, in records: [Record], _ schema: Schema) throws -> [Int64] {
        let index = try #require(schema.entity(named: "Author")?.relationshipIndex("books"))
        let record = try #require(records.first { $0.entity == "Author" && $0.primaryKey == author })
        guard case .toMany(let keys) = record.relationships[index] else {
            Issue.record("Author.books is not a to-many value")
            return []
        }
        return keys
    }

    @Test func positionsComeFromTheOrderTableAndMembershipFromForeignKeys() throws {
        let dir = try TempDirectory()
        let url = dir.file("order.sqlite")
        let schema = try Fixture.schema()
        do {
            let store = try Fixture.open(url, schema: schema)
            try store.save(StoreChanges(inserted: SQLiteRelationshipTests.library(schema).all))
            try store.close()
        }
        // Saved in order: author 1 has books 3, 1, 5; author 2 has 6, 2.
        var store = try Fixture.open(url, schema: schema)
        let scanned = try store.scan(entity: "Author", after: nil, limit: 100)
        #expect(try Self.books(of: 1, in: scanned, schema) == [3, 1, 5])
        #expect(try Self.books(of: 2, in: scanned, schema) == [6, 2])
        try store.close()

        // Book 5 loses its position; author 1 gains a position (first of all) for book 6, which is author 2's.
        try Self.exec(url, """
            DELETE FROM "J_Author.books" WHERE src = 1 AND dst = 5;
            INSERT INTO "J_Author.books" (src, dst, src_ord) VALUES (1, 6, -1);
            """)
        store = try Fixture.open(url, schema: schema)
        defer { try? store.close() }
        let ranged = try store.scan(entity: "Author", after: nil, limit: 100)
        #expect(try Self.books(of: 1, in: ranged, schema) == [5, 3, 1])
        #expect(try Self.books(of: 2, in: ranged, schema) == [6, 2])
        // Keys far apart are read with an `IN` list rather than a range.
        let listed = try store.records(withKeys: [1, 2, 1_000_000], root: "Person")
        #expect(try Self.books(of: 1, in: listed, schema) == [5, 3, 1])
        #expect(try Self.books(of: 2, in: listed, schema) == [6, 2])
    }

    @Test func newStoresIndexTheSharedJoinTablesOtherSideWithItsPositions() throws {
        // Reading the `dst` side of a many-to-many then never leaves the index.
        let dir = try TempDirectory()
        let url = dir.file("index.sqlite")
        let store = try Fixture.open(url, schema: try Fixture.schema())
        try store.close()
        let indexes = try SQLiteBulkLoadTests.indexes(url)
        #expect(indexes["X_J_Book.tags.dst"]?.hasSuffix("(dst, dst_ord)") == true, "\(indexes)")
    }
}
