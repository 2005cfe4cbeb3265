import CSQLite
import Foundation
@_spi(BackendKit) import StoreAPI
import StoreTestSupport
import Testing
@testable import SQLiteBackend

/// A store's fetch indexes: an index per fetch index and indexed attribute over the hierarchy table, descending
/// where asked, none for an R-tree element; they do not make two otherwise equal schemas incompatible.
@Suite struct SQLiteFetchIndexTests {
    static func schema(indexed: Bool) throws -> Schema {
        try Schema(entities: [
            EntityDescription(
                name: "Base",
                attributes: [AttributeDescription(name: "key", type: .string, isIndexed: indexed),
                             AttributeDescription(name: "rank", type: .integer32)],
                fetchIndexes: indexed ? [FetchIndex(name: "byKeyAndRank", elements: [
                    FetchIndex.Element(property: "key"), FetchIndex.Element(property: "rank", isAscending: false),
                ])] : []),
            EntityDescription(
                name: "Leaf", parent: "Base", attributes: [AttributeDescription(name: "area", type: .double)],
                relationships: [RelationshipDescription(name: "owner", destination: "Leaf")],
                fetchIndexes: indexed ? [
                    FetchIndex(name: "byOwner", elements: [FetchIndex.Element(property: "owner")]),
                    FetchIndex(name: "byArea", elements: [FetchIndex.Element(property: "area", kind: .rTree)]),
                    FetchIndex(name: "byRankOnLeaf", elements: [FetchIndex.Element(property: "rank")]),
                ] : []),
        ])
    }

    /// The plan SQLite makes for `sql` (`EXPLAIN QUERY PLAN`), one line per step.
    static func plan(_ url: URL, _ sql: String) throws -> [String] {
        var db: OpaquePointer?
        defer { sqlite3_close(db) }
        guard sqlite3_open_v2(url.path, &db, SQLITE_OPEN_READONLY, nil) == SQLITE_OK else { return [] }
        var stmt: OpaquePointer?
        defer { sqlite3_finalize(stmt) }
        guard sqlite3_prepare_v2(db, "EXPLAIN QUERY PLAN " + sql, -1, &stmt, nil) == SQLITE_OK else { return [] }
        var out: [String] = []
        while sqlite3_step(stmt) == SQLITE_ROW { out.append(String(cString: sqlite3_column_text(stmt, 3))) }
        return out
    }

    @Test func fetchIndexesBecomeIndexes() throws {
        let dir = try TemporaryDirectory("sqlite-fetch-index")
        defer { dir.remove() }
        let url = dir.path("s.sqlite")
        try Fixture.open(url, schema: try Self.schema(indexed: true)).close()
        let indexes = try SQLiteBulkLoadTests.indexes(url).filter { $0.key.hasPrefix("F_") }
        #expect(indexes == [
            "F_E_Base.Base.key": #"CREATE INDEX "F_E_Base.Base.key" ON "E_Base" ("key")"#,
            "F_E_Base.Base.byKeyAndRank": #"CREATE INDEX "F_E_Base.Base.byKeyAndRank" ON "E_Base" ("key", "rank" DESC)"#,
            "F_E_Base.Leaf.byOwner": #"CREATE INDEX "F_E_Base.Leaf.byOwner" ON "E_Base" ("owner")"#,
            "F_E_Base.Leaf.byRankOnLeaf": #"CREATE INDEX "F_E_Base.Leaf.byRankOnLeaf" ON "E_Base" ("rank")"#,
        ])
        #expect(try Self.plan(url, #"SELECT _pk FROM "E_Base" WHERE "key" = 'a'"#).contains { $0.contains("F_E_Base.Base.key") })
        // The schema read back from the store has them.
        let store = try SQLiteStoreBackend().open(at: url, options: StoreOptions(), creating: nil)
        defer { try? store.close() }
        #expect(store.metadata.schema == (try Self.schema(indexed: true)))
    }

    /// Indexes change no layout: metadata whose schema differs in fetch indexes only is accepted by a store.
    @Test func schemasDifferingInIndexesOnlyShareAStore() throws {
        let dir = try TemporaryDirectory("sqlite-fetch-index")
        defer { dir.remove() }
        let url = dir.path("s.sqlite")
        try Fixture.open(url, schema: try Self.schema(indexed: false)).close()
        let plain = SQLiteLayout(schema: try Self.schema(indexed: false))
        let indexed = SQLiteLayout(schema: try Self.schema(indexed: true))
        #expect(plain.fingerprint == indexed.fingerprint)
        #expect(plain.fetchIndexStatements.isEmpty && indexed.fetchIndexStatements.count == 4)
        var metadata = try SQLiteStoreBackend().readMetadata(at: url)
        metadata.schema = try Self.schema(indexed: true)
        try SQLiteStoreBackend().writeMetadata(metadata, at: url)
        #expect(try SQLiteStoreBackend().readMetadata(at: url).schema == (try Self.schema(indexed: true)))
    }
}
