@_spi(BackendKit) @testable import CoreDataBackend
import Foundation
@_spi(BackendKit) import StoreAPI
import StoreTestSupport
import Testing

/// A bulk load inserting pages binds their values straight from the page's bytes; it must leave exactly the tables a
/// bulk load saving the same records leaves.
@Suite struct CoreDataPageInsertTests {
    /// The same records, loaded entity by entity in chunks, as records into one store and as pages into another
    /// with the same store UUID: every table the model and the framework write holds the same rows, value for
    /// value and of the same storage class.
    @Test func pagesAndRecordsLoadTheSameTables() throws {
        let dir = try TemporaryDirectory("coredata-page-insert")
        defer { dir.remove() }
        let schema = try CoreDataIncrementalTests.schema.get()
        let storeUUID = UUID()
        let records = try Self.records(storeUUID: storeUUID)
        let byRecords = dir.path("Records.sqlite"), byPages = dir.path("Pages.sqlite")
        for (url, asPages) in [(byRecords, false), (byPages, true)] {
            let store = try CoreDataStoreBackend().open(
                at: url, options: StoreOptions(),
                creating: StoreMetadata(storeType: "coredata", storeUUID: storeUUID, schema: schema))
            defer { try? store.close() }
            let bulk = try #require(store as? any BulkLoadingStore)
            let sink = try #require(store as? any PageInsertingStore)
            #expect(try bulk.beginBulkLoad())
            for e in schema.entities where !e.isAbstract {
                let all = records.filter { $0.entity == e.name }.sorted { $0.primaryKey < $1.primaryKey }
                for start in stride(from: 0, to: all.count, by: 37) {
                    let chunk = Array(all[start..<min(all.count, start + 37)])
                    if asPages {
                        var page = RecordPage(entity: e.name)
                        for r in chunk { page.append(r) }
                        try sink.insert(page)
                    } else {
                        try store.save(StoreChanges(inserted: chunk))
                    }
                }
            }
            try bulk.finishBulkLoad()
        }
        let tables = try CoreDataWriteTests.rows(byRecords, "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
            .compactMap { $0.first?.text }
            .filter { $0 != "Z_METADATA" && $0 != "Z_MODELCACHE" && !$0.hasPrefix("sqlite_") }
        #expect(tables.contains("STOREKIT_GLOBALID"), "some records keep a global ID that is not the derived one")
        for table in tables {
            let want = try Self.dump(byRecords, table)
            let got = try Self.dump(byPages, table)
            #expect(!want.isEmpty || table == "Z_PRIMARYKEY", "\(table) has rows")
            #expect(got == want, "\(table)")
        }
        // And they read back as the records.
        let store = try CoreDataStoreBackend().open(at: byPages, options: StoreOptions(isReadOnly: true), creating: nil)
        defer { try? store.close() }
        for e in schema.entities where !e.isAbstract {
            let got = try store.scan(entity: e.name, after: nil, limit: .max)
            let want = records.filter { $0.entity == e.name }.sorted { $0.primaryKey < $1.primaryKey }
            #expect(got.map(\.globalID) == want.map(\.globalID), "\(e.name)")
            #expect(got.map(\.attributes) == want.map(\.attributes), "\(e.name)")
        }
    }

    /// A page whose value does not fit its attribute is refused in a bulk load, and nothing of it is written.
    @Test func aMisfitPageInABulkLoadWritesNothing() throws {
        let dir = try TemporaryDirectory("coredata-page-misfit")
        defer { dir.remove() }
        let schema = try CoreDataIncrementalTests.schema.get()
        let url = dir.path("Misfit.sqlite")
        let store = try CoreDataStoreBackend().open(
            at: url, options: StoreOptions(), creating: StoreMetadata(storeType: "coredata", storeUUID: UUID(), schema: schema))
        defer { try? store.close() }
        let bulk = try #require(store as? any BulkLoadingStore)
        let sink = try #require(store as? any PageInsertingStore)
        #expect(try bulk.beginBulkLoad())
        let book = try schema.requireEntity("Book")
        var good = try CoreDataIncrementalTests.book(schema, 0, author: nil, tags: [])
        good.primaryKey = 1
        var bad = try CoreDataIncrementalTests.book(schema, 2, author: nil, tags: [])
        try CoreDataIncrementalTests.set(&bad, book, "pages", .string("many"))
        var page = RecordPage(entity: "Book")
        page.append(good)
        page.append(bad)
        let error = #expect(throws: StoreError.self) { try sink.insert(page) }
        #expect(String(describing: error).contains("pages"), "\(String(describing: error))")
        try bulk.finishBulkLoad()
        #expect(try store.count(FetchRequest(entity: "Book")) == 0)
    }

    /// Authors with every attribute type set (and unset), books and novels with to-ones, ordered lists and a
    /// many-to-many; every third record keeps the global ID derived from its key, the rest a random one.
    static func records(storeUUID: UUID) throws -> [Record] {
        let schema = try CoreDataIncrementalTests.schema.get()
        let author = try schema.requireEntity("Author")
        var out = try CoreDataIncrementalTests.records(books: 200)
        for i in out.indices {
            let root = try schema.requireEntity(out[i].entity).rootName
            if out[i].primaryKey % 3 == 0 {
                out[i].globalID = CoreDataGlobalID.make(store: storeUUID, root: root, primaryKey: out[i].primaryKey)
            }
            guard out[i].entity == "Author" else { continue }
            let k = out[i].primaryKey
            guard k % 4 != 0 else { continue }
            try CoreDataIncrementalTests.set(&out[i], author, "id", .uuid(UUID()))
            try CoreDataIncrementalTests.set(&out[i], author, "rating", .decimal(Decimal(string: "\(k).25") ?? 0))
            try CoreDataIncrementalTests.set(&out[i], author, "home",
                                             .uri(try #require(URL(string: k % 2 == 0 ? "https://example.com/a/\(k)" : "file:///a%20b/\(k)?q=ü"))))
            try CoreDataIncrementalTests.set(&out[i], author, "photo", .binary(k == 1 ? Data() : Data([0, 1, UInt8(k % 256)])))
            try CoreDataIncrementalTests.set(&out[i], author, "name", .string(k == 2 ? "" : "Autör \(k) ✓"))
        }
        return out
    }

    /// Every row of `table`, each column quoted by SQLite (so a value's storage class counts), in a fixed order.
    static func dump(_ url: URL, _ table: String) throws -> [String] {
        let columns = try CoreDataWriteTests.rows(url, "PRAGMA table_info(\(CoreDataSQL.quoted(table)))").compactMap { $0.count > 1 ? $0[1].text : nil }
        guard !columns.isEmpty else { return [] }
        let select = columns.map { "quote(\(CoreDataSQL.quoted($0)))" }.joined(separator: " || '|' || ")
        return try CoreDataWriteTests.rows(url, "SELECT \(select) FROM \(CoreDataSQL.quoted(table)) ORDER BY 1")
            .compactMap { $0.first?.text }
    }
}
