import CSQLite
import Foundation
@_spi(BackendKit) import StoreAPI
import StoreTestSupport
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
        let dir = try TemporaryDirectory("sqlitestore-tests")
        let url = dir.path("order.sqlite")
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
        let dir = try TemporaryDirectory("sqlitestore-tests")
        let url = dir.path("index.sqlite")
        let store = try Fixture.open(url, schema: try Fixture.schema())
        try store.close()
        let indexes = try SQLiteBulkLoadTests.indexes(url)
        #expect(indexes["X_J_Book.tags.dst"]?.hasSuffix("(dst, dst_ord)") == true, "\(indexes)")
    }
}

/// A page read from SQLite (``PageScanningStore``) holds exactly what a scan returns, for values written by other
/// programs too: invalid UTF-8 is repaired alike, and a value a scan refuses is refused with the same error.
@Suite struct SQLitePageTests {
    static func outcome(_ body: () throws -> [Record]) -> String {
        do { return "\(try body())" } catch { return "error: \(error)" }
    }

    @Test func pagesReadWhatScansRead() throws {
        let dir = try TemporaryDirectory("sqlitestore-tests")
        let url = dir.path("pages.sqlite")
        let schema = try Fixture.schema()
        do {
            let store = try Fixture.open(url, schema: schema)
            let items = (1...4).map { schema.record("Item", Int64($0), ["str": .string("item \($0)"), "i16": .integer16(Int16($0))]) }
            try store.save(StoreChanges(inserted: items))
            try store.close()
        }
        // Another program's values: text that is not UTF-8, an ASCII text with a NUL, a REAL where a float
        // must be exact, then an integer too wide for its 16-bit attribute.
        let edits = [
            ("UPDATE \"E_Item\" SET str = CAST(X'61FF62C3' AS TEXT) WHERE _pk = 1", true),
            ("UPDATE \"E_Item\" SET str = CAST(X'410042' AS TEXT), flt = 0.5 WHERE _pk = 2", true),
            ("UPDATE \"E_Item\" SET i16 = 70000 WHERE _pk = 3", false),
            ("UPDATE \"E_Item\" SET i16 = 3, flt = 0.1 WHERE _pk = 3", false),
        ]
        for (sql, readable) in edits {
            try SQLiteOrderTableTests.exec(url, sql)
            let store = try Fixture.open(url, schema: schema)
            defer { try? store.close() }
            let pages = try #require(store as? any PageScanningStore)
            let scanned = Self.outcome { try store.scan(entity: "Item", after: nil, limit: 10) }
            let paged = Self.outcome { try pages.scanPage(entity: "Item", after: nil, limit: 10).records(in: schema) }
            #expect(paged == scanned, "\(sql)")
            #expect(scanned.hasPrefix("error") != readable, "\(sql): \(scanned.prefix(200))")
        }
    }
}
