import Foundation
@testable import PostgresBackend
@_spi(BackendKit) import StoreAPI
import StoreTestSupport
import Testing

/// A PostgreSQL store's fetch indexes: one per fetch index and indexed attribute over the hierarchy table,
/// descending where asked, none for an R-tree element; they do not change the layout's fingerprint.
@Suite struct PostgresFetchIndexTests {
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

    @Test func layoutHasAnIndexPerFetchIndex() throws {
        let plain = PostgresLayout(schema: try Self.schema(indexed: false))
        let indexed = PostgresLayout(schema: try Self.schema(indexed: true))
        #expect(plain.fetchIndexStatements.isEmpty)
        #expect(indexed.fetchIndexStatements == [
            #"CREATE INDEX "F_E_Base.Base.key" ON "E_Base" ("key")"#,
            #"CREATE INDEX "F_E_Base.Base.byKeyAndRank" ON "E_Base" ("key", "rank" DESC)"#,
            #"CREATE INDEX "F_E_Base.Leaf.byOwner" ON "E_Base" ("owner")"#,
            #"CREATE INDEX "F_E_Base.Leaf.byRankOnLeaf" ON "E_Base" ("rank")"#,
        ])
        #expect(plain.fingerprint == indexed.fingerprint, "indexes only speed fetches up: same tables")
    }

    /// A corpus model with Xcode fetch indexes (DuckDuckGo's bookmarks: `byUUID`, `byURL`, …) gets them on the server.
    @Test(.enabled(if: PostgresTestServer.isAvailable, PostgresTestServer.skipReason))
    func corpusFetchIndexesAreCreated() throws {
        let model = "models/duckduckgo__BrowserServicesKit__BookmarksModel.xcdatamodeld/BookmarksModel 5.xcdatamodel"
        guard let url = PackagePaths.corpus(model) else {
            Issue.record("corpus not found at ../shared/corpus; skipped")
            return
        }
        let schema = try Schema(xcodeModelAt: url)
        let declared = schema.entities.flatMap { e in e.definition.allFetchIndexes.map { "\(e.name).\($0.name)" } }
        #expect(declared.contains("BookmarkEntity.byUUID") && declared.contains("BookmarkEntity.byURL"))
        let storeURL = try PostgresTestServer.shared().storeURL("fetchindex")
        let backend = PostgresStoreBackend()
        try backend.open(at: storeURL, options: StoreOptions(), creating: StoreMetadata(storeType: "postgres", schema: schema)).close()
        defer { try? backend.destroyStore(at: storeURL) }
        let location = try PostgresLocation(storeURL)
        let connection = try PostgresConnection(location, connectTimeout: 10)
        defer { connection.close() }
        let rows = try connection.execute(
            "SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = $1 AND indexname LIKE 'F\\_%' ORDER BY indexname",
            [location.schema])
        let found = (0..<rows.count).compactMap { rows.text($0, 0) }
        let expected = PostgresLayout(schema: schema).fetchIndexStatements.count
        #expect(expected >= declared.count - 1, "every binary fetch index over columns becomes an index")
        #expect(found.count == expected)
        #expect(found.contains("F_E_BookmarkEntity.BookmarkEntity.byUUID"))
        let byUUID = (0..<rows.count).first { rows.text($0, 0) == "F_E_BookmarkEntity.BookmarkEntity.byUUID" }
        // PostgreSQL prints the definition back, quoting only names that need it.
        let definition = byUUID.flatMap { rows.text($0, 1) } ?? ""
        #expect(definition.hasSuffix(#"(uuid, "isPendingDeletion")"#), "\(definition)")
    }
}
