@_spi(BackendKit) @testable import CoreDataBackend
import Foundation
@_spi(BackendKit) import StoreAPI
import StoreTestSupport
import Testing

/// Stores without a model cache read with a model inferred from their tables, and every store read with the app's
/// model. Expectations come from the stores' `.info.json` (their `CREATE TABLE` and `CREATE INDEX` text, row counts,
/// `Z_PRIMARYKEY`) and the corpus models, never from this code; reading never changes a corpus file.
@Suite struct CoreDataInferredModelTests {
    typealias Store = CoreDataCorpusTests.Store

    static func storesWithoutCache() -> [Store] {
        CoreDataCorpusTests.stores().filter { !CoreDataStoreBackendTests.hasModelCache($0) }
    }

    static let models = PackagePaths.corpus("models")

    /// Store (path under stores/) → the model version it was written with, and another version of the same model
    /// whose hashes differ (the mapping of `CoreDataVersionHashTests`, from the source repositories' fixtures).
    static let appModels: [(store: String, model: String, other: String)] = [
        ("wibosco__CoreDataMigrationRevised-Example/CoreDataMigration_Example_2.sqlite",
         "wibosco__CoreDataMigrationRevised-Example__CoreDataMigration_Example.xcdatamodeld/CoreDataMigration_Example 2.xcdatamodel",
         "wibosco__CoreDataMigrationRevised-Example__CoreDataMigration_Example.xcdatamodeld/CoreDataMigration_Example.xcdatamodel"),
        ("alemar11__CoreDataPlus/SampleModel_V1.sqlite",
         "alemar11__CoreDataPlus__SampleModel.xcdatamodeld/SampleModel.xcdatamodel",
         "alemar11__CoreDataPlus__SampleModel.xcdatamodeld/SampleModel2.xcdatamodel"),
        ("alemar11__CoreDataPlus/SampleModel_V1.sqlite",
         "alemar11__CoreDataPlus__SampleModel.momd/SampleModel.mom",
         "alemar11__CoreDataPlus__SampleModel.momd/SampleModel2.mom"),
        ("duckduckgo__BrowserServicesKit/Bookmarks_V2.sqlite",
         "duckduckgo__BrowserServicesKit__BookmarksModel.xcdatamodeld/BookmarksModel 2.xcdatamodel",
         "duckduckgo__BrowserServicesKit__BookmarksModel.xcdatamodeld/BookmarksModel 5.xcdatamodel"),
        ("jeffreybergier__CoreDataMigrationTests/Example_v1.1.0.sqlite",
         "jeffreybergier__CoreDataMigrationTests__Model.xcdatamodeld/v1.1.0.xcdatamodel",
         "jeffreybergier__CoreDataMigrationTests__Model.xcdatamodeld/v2.0.0.xcdatamodel"),
    ]

    struct Case: CustomTestStringConvertible, Sendable {
        let store: URL, model: URL, other: URL
        var testDescription: String { "\(store.lastPathComponent) with \(model.lastPathComponent)" }
    }

    static func appModelCases() -> [Case] {
        guard let stores = CoreDataCorpusTests.root, let models else { return [] }
        return appModels.compactMap { c in
            let s = stores.appendingPathComponent(c.store), m = models.appendingPathComponent(c.model)
            let o = models.appendingPathComponent(c.other)
            let fm = FileManager.default
            guard fm.fileExists(atPath: s.path), fm.fileExists(atPath: m.path), fm.fileExists(atPath: o.path) else { return nil }
            return Case(store: s, model: m, other: o)
        }
    }

    static func open(_ url: URL, model: URL? = nil) throws -> any PersistentStore {
        var options = StoreOptions(isReadOnly: true, createIfMissing: false)
        if let model { options.backend[CoreDataStoreBackend.modelOptionKey] = model.path }
        return try CoreDataStoreBackend().open(at: url, options: options, creating: nil)
    }

    /// The columns of each table and their declared types, and the indexed columns, from the `.info.json`'s SQL.
    static func layout(_ store: Store) -> (columns: [String: [(String, String)]], indexed: Set<String>) {
        let statements = CoreDataCorpusTests.json(store, "schema") as? [String] ?? []
        var indexed: Set<String> = []
        for sql in statements where sql.hasPrefix("CREATE INDEX") {
            // CREATE INDEX <TABLE>_<COLUMN>_INDEX ON <TABLE> (<COLUMN>)
            let parts = sql.split(separator: " ")
            if parts.count >= 6 { indexed.insert("\(parts[4]).\(parts[5].trimmingCharacters(in: CharacterSet(charactersIn: "()")))") }
        }
        return (CoreDataCorpusTests.createTables(store), indexed)
    }

    @Test func corpusIsPresent() {
        if Self.storesWithoutCache().isEmpty {
            withKnownIssue("the shared corpus is absent (or has no store without a model cache); skipped") {
                Issue.record("corpus absent")
            }
        }
    }

    // MARK: Inferred

    @Test(arguments: storesWithoutCache())
    func inferredModelFollowsTheTables(_ store: Store) throws {
        let (before, listing) = try CoreDataStoreBackendTests.fingerprint(store.url)
        let opened = try Self.open(store.url)
        defer { try? opened.close() }
        let schema = opened.metadata.schema
        let rows = try #require(CoreDataCorpusTests.json(store, "Z_PRIMARYKEY") as? [[String: Any]])
        #expect(Set(schema.entities.map(\.name)) == Set(rows.compactMap { $0["Z_NAME"] as? String }))
        let (tables, indexed) = Self.layout(store)
        let counts = CoreDataStoreBackendTests.tableCounts(store)
        for root in schema.rootEntities {
            let table = "Z" + root.name.uppercased()
            let columns = try #require(tables[table], "\(store.name): no table \(table)")
            #expect(try opened.count(FetchRequest(entity: root.name)) == counts[table], "\(store.name): \(table)")
            for (column, declared) in columns where !["Z_PK", "Z_ENT", "Z_OPT"].contains(column) {
                let name = String(column.dropFirst()).lowercased()
                if indexed.contains("\(table).\(column)") {
                    // Every indexed integer column of these stores is a to-one whose inverse exists.
                    let r = try #require(root.relationship(name), "\(store.name): \(table).\(column) is no relationship")
                    #expect(!r.isToMany)
                    let inverse = try #require(r.inverse.flatMap { schema.entity(named: r.destination)?.relationship($0) })
                    #expect(inverse.inverse == r.name)
                } else {
                    let a = try #require(root.attribute(name), "\(store.name): \(table).\(column) is no attribute")
                    let expected: [String: AttributeType] = [
                        "INTEGER": .integer64, "FLOAT": .double, "TIMESTAMP": .date, "VARCHAR": .string,
                        "BLOB": .binary, "DECIMAL": .decimal,
                    ]
                    #expect(a.type == expected[declared], "\(store.name): \(table).\(column) \(declared)")
                }
            }
        }
        let (after, listingAfter) = try CoreDataStoreBackendTests.fingerprint(store.url)
        #expect(after == before && listingAfter == listing, "\(store.name): reading changed its files")
        #expect(CoreDataCorpusTests.sha256(store.url.path) == CoreDataCorpusTests.json(store, "sha256") as? String)
    }

    @Test(arguments: storesWithoutCache())
    func valuesAreTheColumns(_ store: Store) throws {
        let opened = try Self.open(store.url)
        defer { try? opened.close() }
        let db = try ReadOnlyDatabase.open(store.url)
        for root in opened.metadata.schema.rootEntities {
            let table = "Z" + root.name.uppercased()
            for record in try opened.scan(entity: root.name, after: nil, limit: 1_000) {
                for (i, a) in root.attributes.enumerated() {
                    let column = "Z" + a.name.uppercased()
                    let raw = try #require(try db.rows("SELECT \(column) FROM \(table) WHERE Z_PK = \(record.primaryKey)").first?.first)
                    let value = record.attributes[i]
                    switch (a.type, raw) {
                    case (_, .null): #expect(value == .null)
                    case (.date, _):
                        // Seconds since 2001, whether stored as INTEGER (2011) or REAL.
                        #expect(value == .date(Date(timeIntervalSinceReferenceDate: try #require(raw.real))))
                    case (.integer64, .integer(let n)): #expect(value == .integer64(n))
                    case (.string, .text(let t)): #expect(value == .string(t))
                    case (.binary, .blob(let b)): #expect(value == .binary(Data(b)))
                    default: break
                    }
                }
            }
        }
    }

    @Test(arguments: storesWithoutCache())
    func inferredSchemaIsReportedWithItsHashWarning(_ store: Store) throws {
        let source = try CoreDataStoreBackend().modelSource(ofStoreAt: store.url)
        guard case .inferred(let differing) = source else {
            Issue.record("\(store.name): model from \(source), not inferred")
            return
        }
        let meta = try #require(CoreDataCorpusTests.json(store, "Z_METADATA") as? [String: Any])
        let hashes = try #require((meta["plist"] as? [String: Any])?["NSStoreModelVersionHashes"] as? [String: Any])
        #expect(Set(differing).isSubset(of: Set(hashes.keys)))
        let info = try Child.storectl(["info", store.url.path])
        #expect(info.status == 0, "\(store.name): \(info.stderr)")
        #expect(info.stdout.contains("inferred from the tables"), "\(store.name): \(info.stdout)")
    }

    // MARK: Stores made here without a cache

    typealias L = CoreDataLayoutTests

    /// A store laid out from `model` with no model cache, as Core Data wrote them before 2012.
    static func storeWithoutCache(_ model: CoreDataModel, in dir: TemporaryDirectory) throws -> URL {
        let url = dir.path("Old.sqlite")
        try CoreDataLayout.createEmptyStore(at: url, model: model)
        #expect(try CoreDataStoreFile.read(at: url).modelCacheBlob == nil)
        return url
    }

    @Test func hierarchyAndToManyAreInferred() throws {
        let dir = try TemporaryDirectory("coredata-infer")
        defer { dir.remove() }
        let model = CoreDataModel(
            entities: [
                L.entity("Book", attributes: [L.attribute("title", 700), L.attribute("published", 900)],
                         relationships: [L.relationship("pages", to: "Page", inverse: "book", toMany: true)]),
                L.entity("GraphicNovel", parent: "Book", attributes: [L.attribute("artist", 700), L.attribute("score", 500)]),
                L.entity("Page", attributes: [L.attribute("number", 300), L.attribute("scan", 1000)],
                         relationships: [L.relationship("book", to: "Book", inverse: "pages", toMany: false)]),
            ],
            configurations: [:], versionIdentifiers: [""])
        let url = try Self.storeWithoutCache(model, in: dir)
        let schema = try CoreDataStoreBackend().readMetadata(at: url).schema
        #expect(schema.entity(named: "GraphicNovel")?.definition.parent == "Book")
        let book = try schema.requireEntity("Book"), page = try schema.requireEntity("Page")
        // Sub-entities' columns are put on the root: the table does not say which entity declared them.
        #expect(Set(book.attributes.map(\.name)) == ["title", "published", "artist", "score"])
        #expect(book.attribute("published")?.type == .date && book.attribute("score")?.type == .double)
        #expect(page.attribute("number")?.type == .integer64 && page.attribute("scan")?.type == .binary)
        #expect(page.relationship("book")?.destination == "Book" && page.relationship("book")?.isToMany == false)
        #expect(book.relationship("pages")?.isToMany == true && book.relationship("pages")?.inverse == "book")
        let opened = try Self.open(url)
        defer { try? opened.close() }
        #expect(try opened.count(FetchRequest(entity: "Book")) == 0)
    }

    @Test func joinTablesAreRefusedWithoutTheAppModel() throws {
        let dir = try TemporaryDirectory("coredata-infer-join")
        defer { dir.remove() }
        let model = CoreDataModel(
            entities: [
                L.entity("Tag", relationships: [L.relationship("notes", to: "Note", inverse: "tags", toMany: true)]),
                L.entity("Note", relationships: [L.relationship("tags", to: "Tag", inverse: "notes", toMany: true)]),
            ],
            configurations: [:], versionIdentifiers: [""])
        let url = try Self.storeWithoutCache(model, in: dir)
        #expect { try CoreDataStoreBackend().readMetadata(at: url) } throws: { error in
            guard case StoreError.unsupported(let why) = error else { return false }
            return why.contains(url.path) && why.contains("join table") && why.contains("app's model")
        }
    }

    // MARK: Guesses

    @Test func guessesFollowTheReference() {
        #expect(CoreDataInferenceGuesses.propertyName(column: "ZDISPLAYORDER") == "displayorder")
        #expect(CoreDataInferenceGuesses.toManyName(source: "Ingredient", taken: []) == "ingredients")
        #expect(CoreDataInferenceGuesses.toManyName(source: "Ingredient", taken: ["ingredients"]) == "ingredients2")
        #expect(CoreDataInferenceGuesses.attributeType(declared: "TIMESTAMP") == .date)
        #expect(CoreDataInferenceGuesses.attributeType(declared: "NUMERIC") == nil)
        for column in ["Z_PK", "Z_ENT", "Z_OPT", "Z_FOK_PAGES", "Z1_BOOK"] {
            #expect(CoreDataInferenceGuesses.isBookkeepingColumn(column), "\(column)")
        }
        for column in ["ZNAME", "ZV1_0_NAME", "ZTITLE1"] {
            #expect(!CoreDataInferenceGuesses.isBookkeepingColumn(column), "\(column)")
        }
    }

    // MARK: The app's model

    @Test(arguments: appModelCases())
    func matchingAppModelReadsWhatTheCacheReads(_ c: Case) throws {
        let (before, listing) = try CoreDataStoreBackendTests.fingerprint(c.store)
        let viaCache = try Self.open(c.store)
        let viaModel = try Self.open(c.store, model: c.model)
        defer { try? viaCache.close(); try? viaModel.close() }
        let a = try CoreDataStoreBackendTests.allRecords(viaCache), b = try CoreDataStoreBackendTests.allRecords(viaModel)
        #expect(Set(a.keys) == Set(b.keys))
        #expect(a.values.reduce(0) { $0 + $1.count } > 0)
        for (entity, records) in a {
            let other = b[entity] ?? []
            #expect(records.map(\.primaryKey) == other.map(\.primaryKey), "\(entity)")
            #expect(records.map(\.globalID) == other.map(\.globalID), "\(entity)")
            // Compared by name: the model may declare properties in another order than the cache.
            let ea = try viaCache.metadata.schema.requireEntity(entity), eb = try viaModel.metadata.schema.requireEntity(entity)
            for (x, y) in zip(records, other) {
                for (i, attr) in ea.attributes.enumerated() {
                    let j = try #require(eb.attributes.firstIndex { $0.name == attr.name })
                    #expect(x.attributes[i] == y.attributes[j], "\(entity)/p\(x.primaryKey).\(attr.name)")
                }
                for (i, rel) in ea.relationships.enumerated() {
                    let j = try #require(eb.relationships.firstIndex { $0.name == rel.name })
                    #expect(x.relationships[i] == y.relationships[j], "\(entity)/p\(x.primaryKey).\(rel.name)")
                }
            }
        }
        #expect(try CoreDataStoreBackend().modelSource(
            ofStoreAt: c.store, options: StoreOptions(backend: [CoreDataStoreBackend.modelOptionKey: c.model.path]))
            == .appModel(c.model))
        let (after, listingAfter) = try CoreDataStoreBackendTests.fingerprint(c.store)
        #expect(after == before && listingAfter == listing)
    }

    @Test(arguments: appModelCases())
    func anotherVersionIsRefusedNamingTheEntities(_ c: Case) throws {
        let file = try CoreDataStoreFile.read(at: c.store)
        let other = try CoreDataAppModel.load(c.other).schema()
        // Expected from the two sides' hashes: the store's recorded ones and Core Data's hashes of the other model.
        let computed = other.coreDataVersionHashes.entityHashes
        let differing = Set(computed.keys).union(file.metadata.versionHashes.keys)
            .filter { computed[$0] != file.metadata.versionHashes[$0] }
        #expect(!differing.isEmpty)
        #expect { try Self.open(c.store, model: c.other) } throws: { error in
            guard case StoreError.incompatibleSchema(let url, let entities) = error else { return false }
            let names = Set(entities.map { String($0.split(separator: " ").first ?? "") })
            return url == c.store && names == differing
        }
        #expect(throws: StoreError.self) { try CoreDataStoreBackend(model: c.other).readMetadata(at: c.store) }
    }

    @Test(arguments: appModelCases().prefix(1))
    func storectlTakesTheModel(_ c: Case) throws {
        let dir = try TemporaryDirectory("coredata-model")
        defer { dir.remove() }
        let info = try Child.storectl(["info", c.store.path, "--model", c.model.path])
        #expect(info.status == 0 && info.stdout.contains(c.model.lastPathComponent), "\(info.stdout)\(info.stderr)")
        let out = dir.path("out.lmdb")
        let convert = try Child.storectl(["convert", c.store.path, out.path, "--model", c.model.path])
        #expect(convert.status == 0, "\(convert.stderr)")
        let diff = try Child.storectl(["diff", c.store.path, out.path, "--model", c.model.path])
        #expect(diff.status == 0 && (diff.stdout + diff.stderr).contains("identical"), "\(diff.stdout)\(diff.stderr)")
        let export = try Child.storectl(["export", c.store.path, "--output", dir.path("o.ndjson").path, "--model", c.model.path])
        #expect(export.status == 0, "\(export.stderr)")
        let refused = try Child.storectl(["info", c.store.path, "--model", c.other.path])
        #expect(refused.status != 0)
        #expect(refused.stderr.contains("incompatible schema"), "\(refused.stderr)")
    }
}
