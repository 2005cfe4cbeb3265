@_spi(BackendKit) @testable import CoreDataBackend
import Foundation
@_spi(BackendKit) import StoreAPI
import StoreTestSupport
import Testing

/// Every corpus store, with or without a model cache, converted by the real `storectl` to every other store type and
/// back to `coredata`: each leg diffed identical with the source, the store written back holding the row counts its
/// `.info.json` records, in Core Data's layout, and the source's files unchanged. Expectations come from the
/// `.info.json` files and the source stores, never from this code.
@Suite struct CoreDataCorpusRoundTripTests {
    typealias Store = CoreDataCorpusTests.Store

    static let fileTypes = ["lmdb", "xml", "sqlite"]

    @Test func corpusIsPresent() {
        if CoreDataCorpusTests.stores().isEmpty {
            withKnownIssue("the shared corpus (../shared/corpus/stores) is absent; round trips skipped") {
                Issue.record("corpus absent")
            }
        }
    }

    @Test(arguments: CoreDataCorpusTests.stores(), fileTypes)
    func roundTripsThroughAFile(_ store: Store, _ type: String) throws {
        let dir = try TemporaryDirectory("coredata-roundtrip")
        defer { dir.remove() }
        try Self.roundTrip(store, through: dir.path("middle.\(type)").path, type: type, in: dir)
    }

    /// The same through a PostgreSQL server: one schema per store.
    @Test(.enabled(if: PostgresTestServer.isAvailable, PostgresTestServer.skipReason),
          arguments: CoreDataCorpusTests.stores())
    func roundTripsThroughPostgres(_ store: Store) throws {
        let server = try PostgresTestServer.shared()
        let dir = try TemporaryDirectory("coredata-roundtrip-pg")
        defer { dir.remove() }
        let middle = server.storeURL("cdround").absoluteString
        defer { _ = try? Child.storectl(["destroy", middle]) }
        try Self.roundTrip(store, through: middle, type: "postgres", in: dir)
    }

    /// source → `middle` (of `type`) → a new coredata store, each leg diffed with the source.
    static func roundTrip(_ store: Store, through middle: String, type: String, in dir: TemporaryDirectory) throws {
        let (hashes, listing) = try CoreDataStoreBackendTests.fingerprint(store.url)
        #expect(hashes[store.name] == CoreDataCorpusTests.json(store, "sha256") as? String, "\(store.name)")
        let back = dir.path("back.sqlite")

        let there = try Child.storectl(["convert", store.url.path, middle])
        try #require(there.status == 0, "\(store.name) → \(type): \(there.stderr)")
        expectIdentical(store.url.path, middle, "\(store.name) vs \(type)")

        let again = try Child.storectl(["convert", middle, back.path, "--type", "coredata"])
        try #require(again.status == 0, "\(type) → \(store.name): \(again.stderr)")
        #expect(CoreDataStoreBackend().sniff(back) == .store, "\(store.name) back from \(type)")
        expectIdentical(store.url.path, back.path, "\(store.name) back from \(type)")

        // Every table the .info.json counts holds as many rows written back, history included: each transaction
        // and change comes back, and the history's strings (author, context, process and bundle names).
        let db = try ReadOnlyDatabase.open(back)
        let tables = try db.tableNames()
        for (table, count) in CoreDataStoreBackendTests.tableCounts(store) {
            let rows = try db.rows("SELECT count(*) FROM \"\(table)\"")
            #expect(rows.first?.first?.int == Int64(count), "\(store.name) back from \(type): \(table)")
        }
        // Every record keeps its derived global identifier, the store its UUID.
        #expect(!tables.contains(CoreDataGlobalIDTable.name), "\(store.name) back from \(type): kept identifiers")
        #expect(try db.rows("SELECT Z_UUID FROM Z_METADATA").first?.first?.text
                    == (CoreDataCorpusTests.json(store, "Z_METADATA") as? [String: Any])?["Z_UUID"] as? String,
                "\(store.name) back from \(type): Z_UUID")
        withExtendedLifetime(db) {}
        let sqlBack = try CoreDataWriteTests.modelSchemaSQL(back), sqlSource = try CoreDataWriteTests.modelSchemaSQL(store.url)
        if CoreDataStoreBackendTests.hasModelCache(store) {
            // Every table, column, index and trigger of the model, statement for statement.
            #expect(sqlBack == sqlSource, "\(store.name) back from \(type): schema SQL")
        } else {
            // A store from before the model cache: written back as Core Data writes one today, with a model cache
            // and its columns in today's order (the order of the old store's columns is not part of the schema
            // the middle store holds), but the same tables, columns, types, indexes and triggers.
            #expect(tables.contains("Z_MODELCACHE"), "\(store.name) back from \(type): no model cache written")
            #expect(Self.unordered(sqlBack.filter { !$0.hasPrefix("CREATE TABLE Z_MODELCACHE ") }) == Self.unordered(sqlSource),
                    "\(store.name) back from \(type): schema SQL")
        }
        // When history came back, its tables are laid out as Core Data lays them out.
        if !tables.filter(CoreDataLayout.isHistoryTable).isEmpty {
            #expect(try CoreDataWriteTests.schemaSQL(back) == (try CoreDataWriteTests.schemaSQL(store.url)),
                    "\(store.name) back from \(type): history schema SQL")
        }

        let (after, listingAfter) = try CoreDataStoreBackendTests.fingerprint(store.url)
        #expect(after == hashes, "\(store.name) was changed")
        #expect(listingAfter == listing, "files appeared or vanished beside \(store.name)")
    }

    /// Schema statements with each `CREATE TABLE`'s column list as a set: what is left when column order is not.
    static func unordered(_ sql: [String]) -> Set<String> {
        Set(sql.map { statement in
            guard statement.hasPrefix("CREATE TABLE "), let open = statement.firstIndex(of: "("),
                  let close = statement.lastIndex(of: ")"), open < close
            else { return statement }
            let columns = statement[statement.index(after: open)..<close].split(separator: ",")
                .map { $0.trimmingCharacters(in: .whitespaces) }.sorted()
            return String(statement[..<open]) + "(" + columns.joined(separator: ", ") + ")"
        })
    }

    static func expectIdentical(_ a: String, _ b: String, _ what: String,
                                sourceLocation: SourceLocation = #_sourceLocation) {
        do {
            let diff = try Child.storectl(["diff", a, b])
            #expect(diff.status == 0 && (diff.stdout + diff.stderr).contains("identical"),
                    "\(what): \(diff.stdout)\(diff.stderr)", sourceLocation: sourceLocation)
        } catch {
            Issue.record("\(what): storectl diff did not run: \(error)", sourceLocation: sourceLocation)
        }
    }
}
