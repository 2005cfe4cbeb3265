@_spi(BackendKit) @testable import CoreDataBackend
import CSQLite
import Foundation
@_spi(BackendKit) import StoreAPI
import StoreTestSupport
import Testing

/// Core Data's layout of a model, checked against every corpus store that carries its model in `Z_MODELCACHE`: the
/// layout computed from that model must create the store's tables and indexes with the same SQL text (the
/// expectations are the schema SQL in each store's `.info.json` and the store's own `sqlite_master`).
@Suite struct CoreDataLayoutTests {
    typealias Store = CoreDataCorpusTests.Store

    /// Corpus stores with a model cache (the 2009 and 2011 stores have none, so no model to lay out).
    static func storesWithModel() -> [Store] {
        CoreDataCorpusTests.stores().filter { store in
            (CoreDataCorpusTests.json(store, "tables") as? [String: Any])?["Z_MODELCACHE"] != nil
        }
    }

    /// Whether the store tracks persistent history (its `Z_PRIMARYKEY` has the history entities, 16000 and up).
    static func hasHistory(_ store: Store) -> Bool {
        let rows = CoreDataCorpusTests.json(store, "Z_PRIMARYKEY") as? [[String: Any]] ?? []
        return rows.contains { ($0["Z_ENT"] as? Int ?? 0) >= 16000 }
    }

    /// Every statement of `.info.json`'s schema.
    static func schemaStatements(_ store: Store) -> [String] {
        CoreDataCorpusTests.json(store, "schema") as? [String] ?? []
    }

    /// The table a `CREATE TABLE` or `CREATE [UNIQUE] INDEX` statement is about.
    static func tableName(of sql: String) -> String? {
        let words = sql.split(separator: " ")
        if sql.hasPrefix("CREATE TABLE"), words.count > 2 { return String(words[2]) }
        if let on = words.firstIndex(of: "ON"), on + 1 < words.count { return String(words[on + 1]) }
        return nil
    }

    static func layout(_ store: Store) throws -> (CoreDataLayout, CoreDataModel) {
        let file = try CoreDataStoreFile.read(at: store.url)
        let model = try #require(try file.model())
        return (try CoreDataLayout(model: model), model)
    }

    @Test func corpusHasStoresWithModels() {
        if Self.storesWithModel().isEmpty {
            withKnownIssue("the shared corpus (../shared/corpus/stores) is absent; Core Data layout tests skipped") {
                Issue.record("corpus absent")
            }
        }
    }

    /// Same statements, text for text: tables with their columns, types and order, every index name and its terms,
    /// derived-attribute triggers, the bookkeeping tables, and the history tables where the store has them.
    @Test(arguments: storesWithModel())
    func layoutCreatesTheStoresSchema(_ store: Store) throws {
        let (layout, _) = try Self.layout(store)
        let expected = Self.schemaStatements(store).sorted()
        let computed = layout.statements(persistentHistory: Self.hasHistory(store)).sorted()
        #expect(expected.contains { $0.hasPrefix("CREATE TABLE Z") && !$0.hasPrefix("CREATE TABLE Z_") })
        #expect(computed.count == expected.count)
        #expect(Set(computed).subtracting(expected).sorted() == [], "statements the store does not have")
        #expect(Set(expected).subtracting(computed).sorted() == [], "statements the layout does not make")
        #expect(layout.notes == [])
    }

    /// `Z_PRIMARYKEY`: one row per entity with the store's `Z_ENT` and `Z_SUPER`; the name is the entity's, or (in a
    /// migrated store that kept a renamed entity's old name) its renaming identifier.
    @Test(arguments: storesWithModel())
    func primaryKeyRowsMatchTheStore(_ store: Store) throws {
        let (layout, model) = try Self.layout(store)
        let rows = try #require(CoreDataCorpusTests.json(store, "Z_PRIMARYKEY") as? [[String: Any]])
        let modelRows = rows.filter { ($0["Z_ENT"] as? Int ?? 0) < 16000 }
        #expect(modelRows.count == rows.count - (Self.hasHistory(store) ? CoreDataLayout.historyPrimaryKeyRows.count : 0))
        #expect(layout.primaryKeyRows.map(\.entityNumber) == modelRows.map { Int64($0["Z_ENT"] as? Int ?? -1) })
        #expect(layout.primaryKeyRows.map(\.superNumber) == modelRows.map { Int64($0["Z_SUPER"] as? Int ?? -1) })
        for (row, stored) in zip(layout.primaryKeyRows, modelRows) {
            let storedName = stored["Z_NAME"] as? String
            let renamed = model.entity(named: row.name)?.renamingIdentifier
            #expect(storedName == row.name || storedName == renamed, "Z_ENT \(row.entityNumber)")
            #expect(row.maxPrimaryKey == 0)
        }
    }

    /// The columns read back from the store itself (`PRAGMA table_info`), not only from the `.info.json` text.
    @Test(arguments: storesWithModel())
    func columnsMatchTheStoresTables(_ store: Store) throws {
        let (layout, _) = try Self.layout(store)
        let db = try ReadOnlyDatabase.open(store.url)
        for table in layout.tables {
            let info = try db.rows("PRAGMA table_info(\(table.name))")
            let stored = info.compactMap { row -> String? in
                guard row.count > 2, let name = row[1].text, let type = row[2].text else { return nil }
                return "\(name) \(type)"
            }
            #expect(stored == table.columns.map { "\($0.name) \($0.type)" }, "\(table.name)")
        }
        // Indexes the store has for the model: not SQLite's own (no SQL) and not on history tables.
        let indexes = Set(try db.rows("SELECT name, tbl_name FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL")
            .compactMap { row -> String? in
                guard row.count == 2, let name = row[0].text, let table = row[1].text,
                      !CoreDataLayout.isHistoryTable(table)
                else {
                    return nil
                }
                return name
            })
        #expect(indexes == Set(layout.indexes.map(\.name)))
    }

    /// A schema (here the one the store's model decodes to) lays out as its model does, fetch indexes included,
    /// and hashes to the store's version hashes.
    @Test(arguments: storesWithModel())
    func schemaLaysOutAsItsModel(_ store: Store) throws {
        let file = try CoreDataStoreFile.read(at: store.url)
        let model = try #require(try file.model())
        let schema = try #require(try file.schema())
        let fromSchema = try CoreDataLayout(model: CoreDataModel(schema: schema))
        let fromModel = try CoreDataLayout(model: model)
        #expect(fromSchema.entities == fromModel.entities)
        #expect(fromSchema.tables == fromModel.tables)
        #expect(fromSchema.triggers == fromModel.triggers)
        #expect(fromSchema.indexes.sorted { $0.name < $1.name } == fromModel.indexes.sorted { $0.name < $1.name })
        #expect(fromSchema.statements().sorted() == fromModel.statements().sorted())
        let metadata = try CoreDataMetadata(newStoreFor: CoreDataModel(schema: schema))
        #expect(metadata.versionHashes == file.metadata.versionHashes)
    }

    // MARK: Creating an empty store

    /// `sqlite_master` of a store as (type, name, table, SQL), sorted.
    static func master(_ url: URL) throws -> [[String]] {
        let db = try ReadOnlyDatabase.open(url)
        return try db.rows("SELECT type, name, tbl_name, sql FROM sqlite_master").map { row in
            row.map { $0.text ?? "" }
        }.sorted { $0.lexicographicallyPrecedes($1) }
    }

    /// A store created empty from each corpus model has the corpus store's tables, columns, indexes (names and SQL)
    /// and entity numbering, and reads back with the model's version hashes, digest, checksum and its UUID.
    @Test(arguments: storesWithModel())
    func emptyStoreFromTheModelMatchesTheStore(_ store: Store) throws {
        let file = try CoreDataStoreFile.read(at: store.url)
        let model = try #require(try file.model())
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("cdlayout-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let url = dir.appendingPathComponent(store.url.lastPathComponent)
        let uuid = UUID()
        try CoreDataLayout.createEmptyStore(
            at: url, model: model, uuid: uuid, modelCache: file.modelCacheBlob, persistentHistory: Self.hasHistory(store))

        // Only the main file: the -wal was checkpointed and removed when the connection closed.
        let files = try FileManager.default.contentsOfDirectory(atPath: dir.path)
        #expect(files == [url.lastPathComponent])

        // (Reading it from here on may create a -shm: SQLite's read-only WAL access needs one.)
        #expect(try Self.master(url) == Self.master(store.url))

        let created = try CoreDataStoreFile.read(at: url)
        #expect(created.uuid == uuid.uuidString.uppercased())
        #expect(created.metadata.storeType == "SQLite")
        #expect(created.metadata.versionHashes == file.metadata.versionHashes)
        #expect(created.metadata.versionHashesVersion == 3)
        #expect(created.metadata.autoVacuumLevel == "2")
        #expect(created.metadata.versionIdentifiers == model.versionIdentifiers)
        if let digest = file.metadata.versionHashesDigest { #expect(created.metadata.versionHashesDigest == digest) }
        if let checksum = file.metadata.versionChecksum { #expect(created.metadata.versionChecksum == checksum) }
        #expect(created.primaryKeys.map(\.entityNumber) == file.primaryKeys.map(\.entityNumber))
        #expect(created.primaryKeys.map(\.superNumber) == file.primaryKeys.map(\.superNumber))
        #expect(created.primaryKeys.allSatisfy { $0.maxPrimaryKey == 0 })
        #expect(try created.model() == model)

        let db = try ReadOnlyDatabase.open(url)
        #expect(try db.rows("PRAGMA page_size").first?.first?.int == 4096)
        #expect(try db.rows("PRAGMA auto_vacuum").first?.first?.int == 2)
        // WAL mode is in the file header (read and write format versions 2); an immutable read-only connection
        // reports its own journal mode, not the file's.
        let header = try #require(try FileHandle(forReadingFrom: url).read(upToCount: 20))
        #expect(header.count == 20 && header[18] == 2 && header[19] == 2, "the store is in WAL mode")
        for table in try db.rows("SELECT name FROM sqlite_master WHERE type = 'table'").compactMap({ $0.first?.text })
        where !table.hasPrefix("Z_") {
            #expect(try db.rows("SELECT COUNT(*) FROM \(table)").first?.first?.int == 0, "\(table)")
        }
    }

    /// The Xcode model each corpus store was written with (the store's fixture sits beside that model version in its
    /// project; see CoreDataVersionHashTests for the matching), for the stores whose model is in the corpus.
    static let xcodeModels: [String: String] = {
        var map = [
            "SampleModel_V1.sqlite": "alemar11__CoreDataPlus__SampleModel.xcdatamodeld/SampleModel.xcdatamodel",
            "SampleModel_V2.sqlite": "alemar11__CoreDataPlus__SampleModel.xcdatamodeld/SampleModel2.xcdatamodel",
            "SampleModel3_V1.sqlite": "alemar11__CoreDataPlus__SampleModel3.xcdatamodeld/SampleModel3.xcdatamodel",
            "Bookmarks_V1.sqlite": "duckduckgo__BrowserServicesKit__BookmarksModel.xcdatamodeld/BookmarksModel.xcdatamodel",
            "SyncMetadata_V3.sqlite": "duckduckgo__BrowserServicesKit__SyncMetadata.xcdatamodeld/SyncMetadata 3.xcdatamodel",
            "CoreDataMigration_Example_1.sqlite":
                "wibosco__CoreDataMigrationRevised-Example__CoreDataMigration_Example.xcdatamodeld/CoreDataMigration_Example.xcdatamodel",
        ]
        for v in 2...5 {
            map["Bookmarks_V\(v).sqlite"] = "duckduckgo__BrowserServicesKit__BookmarksModel.xcdatamodeld/BookmarksModel \(v).xcdatamodel"
        }
        for v in 2...3 {
            map["CoreDataMigration_Example_\(v).sqlite"] =
                "wibosco__CoreDataMigrationRevised-Example__CoreDataMigration_Example.xcdatamodeld/CoreDataMigration_Example \(v).xcdatamodel"
        }
        for v in ["1.0.0", "1.1.0", "1.1.2", "1.2.0", "2.0.0"] {
            map["Example_v\(v).sqlite"] = "jeffreybergier__CoreDataMigrationTests__Model.xcdatamodeld/v\(v).xcdatamodel"
        }
        return map
    }()

    static func storesWithXcodeModel() -> [Store] { storesWithModel().filter { xcodeModels[$0.name] != nil } }

    /// The issue's bar: a store created empty from the app's Xcode model (through the framework's schema, fetch
    /// indexes included) has the corpus store's tables, columns, indexes and triggers, statement for statement.
    @Test(arguments: storesWithXcodeModel())
    func emptyStoreFromTheXcodeModelMatchesTheStore(_ store: Store) throws {
        let models = try #require(PackagePaths.corpus("models"))
        let path = try #require(Self.xcodeModels[store.name])
        let schema = try Schema(xcodeModelAt: models.appendingPathComponent(path))
        let file = try CoreDataStoreFile.read(at: store.url)
        let dir = try TemporaryDirectory("cdlayout-xcode")
        defer { dir.remove() }
        let url = dir.path(store.name)
        try CoreDataLayout.createEmptyStore(at: url, model: CoreDataModel(schema: schema))
        #expect(try Self.master(url) == Self.master(store.url))
        // The Xcode model and the store's cache are one schema, indexed attributes included.
        let cached = try #require(try file.schema())
        for entity in schema.definitions {
            let fromCache = cached.entity(named: entity.name)?.definition
            #expect(fromCache?.fetchIndexes == entity.fetchIndexes, "\(entity.name)")
            #expect(fromCache?.attributes.map(\.isIndexed) == entity.attributes.map(\.isIndexed), "\(entity.name)")
        }
        #expect(try CoreDataStoreFile.read(at: url).metadata.versionHashes == file.metadata.versionHashes)
    }

    /// The derived-attribute triggers of a created store keep the count when rows are inserted, moved and deleted,
    /// once the functions they call are registered (a plain connection fails with "no such function").
    @Test func derivedAttributeTriggersKeepTheCount() throws {
        guard let store = Self.storesWithModel().first(where: { Self.schemaStatements($0).contains { $0.hasPrefix("CREATE TRIGGER") } }) else {
            withKnownIssue("no corpus store with derived-attribute triggers (corpus absent?)") { Issue.record("skipped") }
            return
        }
        let file = try CoreDataStoreFile.read(at: store.url)
        let model = try #require(try file.model())
        let entity = try #require(model.entities.first { $0.attributes.contains { $0.isDerived } })
        let derived = try #require(entity.attributes.first { $0.isDerived })
        let path = String((derived.derivationExpression ?? "").dropFirst("count:(".count).dropLast())
        let rel = try #require(entity.relationships.first { $0.name == path })
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("cdlayout-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let url = dir.appendingPathComponent("Derived.sqlite")
        let layout = try CoreDataLayout.createEmptyStore(at: url, model: model)
        let s = try #require(layout.table(forEntity: entity.name)?.name)
        let c = try #require(layout.column(entity: entity.name, property: derived.name)?.name)
        let d = try #require(layout.table(forEntity: rel.destination)?.name)
        let f = try #require(layout.column(entity: rel.destination, property: rel.inverse ?? "")?.name)
        let sourceEnt = try #require(layout.entity(named: entity.name)?.number)
        let destinationEnt = try #require(layout.entity(named: rel.destination)?.number)

        var handle: OpaquePointer?
        #expect(sqlite3_open_v2(url.path, &handle, SQLITE_OPEN_READWRITE, nil) == SQLITE_OK)
        let db = try #require(handle)
        defer { sqlite3_close_v2(db) }
        func exec(_ sql: String) -> Bool { sqlite3_exec(db, sql, nil, nil, nil) == SQLITE_OK }
        func counts() -> [Int64] {
            var stmt: OpaquePointer?
            guard sqlite3_prepare_v2(db, "SELECT \(c) FROM \(s) ORDER BY Z_PK", -1, &stmt, nil) == SQLITE_OK else { return [] }
            defer { sqlite3_finalize(stmt) }
            var out: [Int64] = []
            while sqlite3_step(stmt) == SQLITE_ROW { out.append(sqlite3_column_int64(stmt, 0)) }
            return out
        }
        let insertSources = "INSERT INTO \(s) (Z_PK, Z_ENT, Z_OPT) VALUES (1, \(sourceEnt), 1), (2, \(sourceEnt), 1)"
        #expect(!exec(insertSources), "the triggers call functions only Core Data registers")
        for name in ["NSCoreDataDATriggerUpdatedAffectedObjectValue", "NSCoreDataDATriggerInsertUpdatedAffectedObjectValue"] {
            let rc = sqlite3_create_function_v2(
                db, name, 5, SQLITE_UTF8, nil, { context, _, _ in sqlite3_result_null(context) }, nil, nil, nil)
            #expect(rc == SQLITE_OK)
        }
        #expect(exec(insertSources))
        #expect(exec("INSERT INTO \(d) (Z_PK, Z_ENT, Z_OPT, \(f)) VALUES (1, \(destinationEnt), 1, 1), (2, \(destinationEnt), 1, 1), (3, \(destinationEnt), 1, 2)"))
        #expect(counts() == [2, 1])
        #expect(exec("UPDATE \(d) SET \(f) = 2 WHERE Z_PK = 1"))
        #expect(counts() == [1, 2])
        #expect(exec("DELETE FROM \(d) WHERE Z_PK = 3"))
        #expect(counts() == [1, 1])
    }

    /// An existing file (or a sidecar of one) is never overwritten, and nothing is left behind.
    @Test func creatingOverAnExistingStoreIsRefused() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("cdlayout-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let url = dir.appendingPathComponent("Taken.sqlite")
        try Data("x".utf8).write(to: URL(fileURLWithPath: url.path + "-wal"))
        let model = CoreDataModel(
            entities: [Self.entity("Note", attributes: [Self.attribute("text", 700)])], configurations: [:],
            versionIdentifiers: [""])
        #expect(throws: StoreError.self) { try CoreDataLayout.createEmptyStore(at: url, model: model) }
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.path) == ["Taken.sqlite-wal"])
        // Without a model cache the table exists and is empty; the store still reads.
        let fresh = dir.appendingPathComponent("Fresh.sqlite")
        try CoreDataLayout.createEmptyStore(at: fresh, model: model)
        let read = try CoreDataStoreFile.read(at: fresh)
        #expect(read.modelCacheBlob == nil)
        #expect(read.tableNames.contains("Z_MODELCACHE"))
        #expect(read.metadata.versionHashes.keys.sorted() == ["Note"])
    }

    // MARK: Rules on hand-made models

    static let types: [Int: AttributeType] = [
        100: .integer16, 200: .integer32, 300: .integer64, 400: .decimal, 500: .double, 600: .float, 700: .string,
        800: .boolean, 900: .date, 1000: .binary, 1100: .uuid, 1200: .uri, 1800: .transformable,
    ]

    static func attribute(_ name: String, _ code: Int) -> CoreDataModel.Attribute {
        CoreDataModel.Attribute(
            name: name, typeCode: code, type: types[code], isOptional: true,
            isTransient: false, isReadOnly: false, defaultValue: nil, valueClassName: nil, valueTransformerName: nil,
            versionHashModifier: nil, renamingIdentifier: nil, allowsExternalBinaryDataStorage: false,
            preservesValueInHistoryOnDeletion: false, isDerived: false, derivationExpression: nil, userInfo: [:])
    }

    static func relationship(
        _ name: String, to destination: String, inverse: String?, toMany: Bool, ordered: Bool = false
    ) -> CoreDataModel.Relationship {
        CoreDataModel.Relationship(
            name: name, destination: destination, inverse: inverse, minCount: 0, maxCount: toMany ? 0 : 1,
            deleteRule: .nullify, isOrdered: ordered, isOptional: true, isTransient: false, versionHashModifier: nil,
            renamingIdentifier: nil, userInfo: [:])
    }

    static func entity(
        _ name: String, parent: String? = nil, attributes: [CoreDataModel.Attribute] = [],
        relationships: [CoreDataModel.Relationship] = []
    ) -> CoreDataModel.Entity {
        CoreDataModel.Entity(
            name: name, parent: parent, isAbstract: false, className: name, versionHashModifier: nil,
            renamingIdentifier: nil, userInfo: [:], attributes: attributes, relationships: relationships,
            fetchedPropertyNames: [], uniquenessConstraints: [])
    }

    /// Two sub-entities declaring a property of the same name get one column each, the later one with a counter.
    @Test func collidingNamesInOneTreeGetACounter() throws {
        let model = CoreDataModel(
            entities: [
                Self.entity("Item"),
                Self.entity("Movie", parent: "Item", attributes: [Self.attribute("title", 700)]),
                Self.entity("Book", parent: "Item", attributes: [Self.attribute("title", 700)]),
            ],
            configurations: [:], versionIdentifiers: [])
        let layout = try CoreDataLayout(model: model)
        let table = try #require(layout.table(forEntity: "Book"))
        #expect(table.columns.map(\.name) == ["Z_PK", "Z_ENT", "Z_OPT", "ZTITLE", "ZTITLE1"])
        #expect(layout.column(entity: "Book", property: "title")?.name == "ZTITLE")
        #expect(layout.column(entity: "Movie", property: "title")?.name == "ZTITLE1")
        #expect(layout.indexes.map(\.name) == ["ZITEM_Z_ENT_INDEX"])
    }

    /// The plain name goes to the property declared highest in the tree even when a sub-entity's column comes
    /// first, and the `coredata` reader maps every property to the column the layout gave it.
    @Test func collisionCountersAgreeWithTheReader() throws {
        let model = CoreDataModel(
            entities: [
                Self.entity("Item", attributes: [Self.attribute("title", 1000)]),
                Self.entity("Movie", parent: "Item", attributes: [Self.attribute("title", 100)]),
                Self.entity("Book", parent: "Item", attributes: [Self.attribute("title", 700)]),
                Self.entity("Comic", parent: "Book", attributes: [Self.attribute("title", 900)]),
            ],
            configurations: [:], versionIdentifiers: [])
        let layout = try CoreDataLayout(model: model)
        let table = try #require(layout.table(forEntity: "Item"))
        #expect(table.columns.map { "\($0.name) \($0.type)" } == [
            "Z_PK INTEGER", "Z_ENT INTEGER", "Z_OPT INTEGER", "ZTITLE2 INTEGER", "ZTITLE3 TIMESTAMP",
            "ZTITLE1 VARCHAR", "ZTITLE BLOB",
        ])
        let hierarchy = layout.entities.map(\.name)
        let read = CoreDataColumnNames.columns(
            model: model, hierarchy: hierarchy, existing: Set(table.columns.map(\.name)))
        for e in model.entities {
            for a in e.attributes {
                #expect(read[e.name]?[a.name] == layout.column(entity: e.name, property: a.name)?.name, "\(e.name).\(a.name)")
            }
        }
    }

    /// Column order on a model with every type: what the corpus checks (groups INTEGER, reals, DECIMAL, VARCHAR,
    /// BLOB; root before sub-entity; attributes before foreign keys; UUID before transformable) and what
    /// `CoreDataLayoutGuesses` decides (Double and Date sort together by name; Binary before UUID), pinned so that a
    /// change to a guess is deliberate.
    @Test func columnOrderFollowsTheGroupsAndTheGuesses() throws {
        let types: [(String, Int)] = [
            ("b", 100), ("a", 800), ("d", 900), ("c", 500), ("p", 400), ("s", 700), ("u", 1200), ("t", 1800),
            ("x", 1100), ("y", 1000),
        ]
        let model = CoreDataModel(
            entities: [
                Self.entity(
                    "Item", attributes: types.map { Self.attribute($0.0, $0.1) },
                    relationships: [Self.relationship("owner", to: "Person", inverse: nil, toMany: false)]),
                Self.entity("Person"),
                Self.entity("Sub", parent: "Item", attributes: [Self.attribute("z", 200)]),
            ],
            configurations: [:], versionIdentifiers: [])
        let table = try #require(try CoreDataLayout(model: model).table(forEntity: "Sub"))
        #expect(table.columns.map(\.name) == [
            "Z_PK", "Z_ENT", "Z_OPT", "ZA", "ZB", "ZOWNER", "ZZ", "ZC", "ZD", "ZP", "ZS", "ZU", "ZY", "ZX", "ZT",
        ])
        #expect(table.columns.map(\.type) == [
            "INTEGER", "INTEGER", "INTEGER", "INTEGER", "INTEGER", "INTEGER", "INTEGER", "FLOAT", "TIMESTAMP", "DECIMAL",
            "VARCHAR", "VARCHAR", "BLOB", "BLOB", "BLOB",
        ])
    }

    /// A self-referential many-to-many uses the `REFLEXIVE` column; a to-many without an inverse a hidden foreign
    /// key in the destination's table.
    @Test func reflexiveAndInverselessRelationships() throws {
        let model = CoreDataModel(
            entities: [
                Self.entity("Person", relationships: [
                    Self.relationship("friends", to: "Person", inverse: "friends", toMany: true),
                    Self.relationship("notes", to: "Note", inverse: nil, toMany: true),
                ]),
                Self.entity("Note", attributes: [Self.attribute("text", 700)]),
            ],
            configurations: [:], versionIdentifiers: [])
        let layout = try CoreDataLayout(model: model)
        let statements = layout.statements(includingBookkeeping: false)
        #expect(statements.contains("CREATE TABLE Z_2FRIENDS ( Z_2FRIENDS INTEGER, REFLEXIVE INTEGER, PRIMARY KEY (Z_2FRIENDS, REFLEXIVE) )"))
        #expect(statements.contains("CREATE TABLE ZNOTE ( Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, Z2NOTES INTEGER, ZTEXT VARCHAR )"))
        #expect(statements.contains("CREATE INDEX ZNOTE_Z2NOTES_INDEX ON ZNOTE (Z2NOTES)"))
        #expect(statements.contains("CREATE INDEX Z_2FRIENDS_REFLEXIVE_INDEX ON Z_2FRIENDS (REFLEXIVE, Z_2FRIENDS)"))
    }

    /// A relationship to an entity the model lacks is an error naming it, not a crash.
    @Test func danglingDestinationIsAnError() {
        let model = CoreDataModel(
            entities: [Self.entity("A", relationships: [Self.relationship("b", to: "B", inverse: nil, toMany: false)])],
            configurations: [:], versionIdentifiers: [])
        #expect(throws: CoreDataFormatError.self) { try CoreDataLayout(model: model) }
    }
}
