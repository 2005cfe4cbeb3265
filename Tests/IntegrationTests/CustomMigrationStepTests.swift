import Foundation
import StoreAPI
import StoreTestSupport
import Testing

/// Custom migration steps: user code per record converts what the inferred plan cannot, on every store type.
@Suite struct CustomMigrationStepTests {
    static let types = ["sqlite", "lmdb", "xml", "memory"]

    /// v1 with Book.isbn an Integer 64 (digits of the old text) and Book.title required without a default.
    static func isbnAsNumber() throws -> Schema {
        try EvolutionSchemas.v1(changing: "Book") { b in
            b.attributes[2].type = .integer64
            b.attributes[0].isOptional = false
        }
    }

    /// Parses the ISBN's digits and gives untitled books a title made from their key.
    static let step: RecordMigrationStep = { migration in
        guard migration.entity.name == "Book" else { return }
        if case .string(let text)? = migration.sourceValue("isbn") {
            try migration.set("isbn", Int64(text.filter(\.isNumber)).map { .integer64($0) } ?? .null)
        }
        if migration.value("title")?.isNull ?? true {
            try migration.set("title", .string("Untitled #\(migration.record.primaryKey)"))
        }
    }

    @Test("a custom step converts a type and fills a newly required value", arguments: types)
    func customStepConverts(_ type: String) throws {
        let dir = try TemporaryDirectory("custom-step")
        let url = SchemaUpgradeTests.url(type, in: dir)
        defer { SchemaUpgradeTests.cleanUp(type, url) }
        try SchemaUpgradeTests.makeV1Store(type, at: url)
        let to = try Self.isbnAsNumber()

        // Without the step: the type change is refused, and the title would be missing.
        #expect(throws: StoreError.self) { try SchemaUpgradeTests.operations.upgradeStore(at: url, to: to) }

        let plan = try SchemaUpgradeTests.operations.upgradeStore(at: url, to: to, options: .init(customStep: Self.step))
        #expect(plan.entities.first { $0.name == "Book" }?.attributes.first { $0.name == "isbn" }?.change == .custom)
        let store = try Backends.open(url, readOnly: true)
        defer { try? store.close() }
        #expect(store.metadata.versionHashes == to.versionHashes)
        let records = try Backends.records(of: store)
        #expect(records[SchemaUpgradeTests.ids[2]]?.attributes == [.string("The Dispossessed"), .integer16(387), .integer64(9780061054884)])
        #expect(records[SchemaUpgradeTests.ids[3]]?.attributes == [.string("Untitled #2"), .integer16(300), .null])
        #expect(records[SchemaUpgradeTests.ids[2]]?.relationships == [.toOne(1)], "links are the plan's")
    }

    @Test("a step that leaves a value of the old type stops the upgrade before anything is written", arguments: types)
    func wrongTypeIsRefused(_ type: String) throws {
        let dir = try TemporaryDirectory("custom-step-bad")
        let url = SchemaUpgradeTests.url(type, in: dir)
        defer { SchemaUpgradeTests.cleanUp(type, url) }
        try SchemaUpgradeTests.makeV1Store(type, at: url)
        let before = try SchemaUpgradeTests.snapshot(type, url)
        let lazy: RecordMigrationStep = { _ in }
        do {
            try SchemaUpgradeTests.operations.upgradeStore(at: url, to: Self.isbnAsNumber(), options: .init(customStep: lazy))
            Issue.record("expected a type mismatch")
        } catch StoreError.typeMismatch(let entity, let property, let expected, _) {
            #expect(entity == "Book" && property == "isbn" && expected == .integer64)
        }
        #expect(try SchemaUpgradeTests.snapshot(type, url) == before)
    }

    @Test("a chain runs a version's custom step on the step into it")
    func chainRunsCustomStep() throws {
        let dir = try TemporaryDirectory("custom-step-chain")
        let url = SchemaUpgradeTests.url("sqlite", in: dir)
        try SchemaUpgradeTests.makeV1Store("sqlite", at: url)
        let chain = SchemaVersionChain(versions: [("v1", try EvolutionSchemas.v1()), ("v2", try Self.isbnAsNumber())],
                                       customSteps: ["v2": Self.step])
        let steps = try SchemaUpgradeTests.operations.upgradeStore(at: url, through: chain)
        #expect(steps.map(\.to) == ["v2"])
        let store = try Backends.open(url, readOnly: true)
        defer { try? store.close() }
        #expect(try Backends.records(of: store)[SchemaUpgradeTests.ids[2]]?.attributes[2] == .integer64(9780061054884))
    }
}

/// A custom step that splits records: values of one entity become records of another (wibosco's Post → Section in
/// the corpus), inserted with keys above every record their hierarchy had and identities derived from their creators.
@Suite struct SplittingMigrationStepTests {
    /// v1 plus Chapter (title, number, book ↔ Book.chapters, ordered) and Note.author ↔ Author.notes.
    static func withChapters() throws -> Schema {
        var defs = try EvolutionSchemas.v1().definitions
        defs.append(EntityDescription(name: "Chapter", attributes: [
            AttributeDescription(name: "title", type: .string, isOptional: false),
            AttributeDescription(name: "number", type: .integer16),
        ], relationships: [RelationshipDescription(name: "book", destination: "Book", inverse: "chapters")]))
        for i in defs.indices {
            if defs[i].name == "Book" {
                defs[i].relationships.append(RelationshipDescription(name: "chapters", destination: "Chapter", inverse: "book",
                                                                     isToMany: true, isOrdered: true))
            }
            if defs[i].name == "Author" {
                defs[i].relationships.append(RelationshipDescription(name: "notes", destination: "Note", inverse: "author", isToMany: true))
            }
            if defs[i].name == "Note" {
                defs[i].relationships.append(RelationshipDescription(name: "author", destination: "Author", inverse: "notes"))
            }
        }
        return try Schema(entities: defs)
    }

    /// A book becomes one chapter per 150 pages; an author gets a note about them.
    static let split: RecordMigrationStep = { m in
        switch m.entity.name {
        case "Book":
            guard case .integer16(let pages)? = m.sourceValue("pages"), pages > 0 else { return }
            for n in 0..<Int(pages) / 150 {
                try m.insert("Chapter", values: ["title": .string("part \(n + 1)"), "number": .integer16(Int16(n + 1))], linkedBy: "book")
            }
        case "Author":
            if case .string(let name)? = m.sourceValue("name") {
                try m.insert("Note", values: ["text": .string("about \(name)")], linkedBy: "author")
            }
        default: break
        }
    }

    @Test("a step inserts linked records, page by page, on every store type",
          arguments: CustomMigrationStepTests.types, [1, 2, 5_000])
    func splitInsertsLinkedRecords(_ type: String, batchSize: Int) throws {
        let dir = try TemporaryDirectory("split")
        let url = SchemaUpgradeTests.url(type, in: dir)
        defer { SchemaUpgradeTests.cleanUp(type, url) }
        try SchemaUpgradeTests.makeV1Store(type, at: url)
        let to = try Self.withChapters()
        try SchemaUpgradeTests.operations.upgradeStore(at: url, to: to, options: .init(batchSize: batchSize, customStep: Self.split))

        let store = try Backends.open(url, readOnly: true)
        defer { try? store.close() }
        #expect(try StoreVerifier().verify(store).isEmpty, "the split store verifies (every link resolves both ways)")
        let chapters = try store.fetch(FetchRequest(entity: "Chapter", sortDescriptors: [SortKey("title"), SortKey("book.pages")]))
        #expect(chapters.count == 4, "387 and 300 pages make two chapters each; a book with -1 pages none")
        let books = Dictionary(try store.fetch(FetchRequest(entity: "Book")).map { ($0.primaryKey, $0) }, uniquingKeysWith: { a, _ in a })
        let chaptersIndex = try #require(to.entity(named: "Book")?.relationshipIndex("chapters"))
        for c in chapters {
            guard case .toOne(let bookKey?)? = c.relationships.first, let book = books[bookKey] else {
                Issue.record("chapter \(c.key) is not linked to a book")
                continue
            }
            #expect(book.relationships[chaptersIndex].keys.contains(c.primaryKey), "\(book.key) lists \(c.key)")
        }
        let firstBook = try #require(books[1])
        let parts = try store.records(withKeys: firstBook.relationships[chaptersIndex].keys, root: "Chapter")
        #expect(Dictionary(parts.map { ($0.primaryKey, $0.attributes[0]) }, uniquingKeysWith: { a, _ in a }).values.sorted { "\($0)" < "\($1)" }
                == [.string("part 1"), .string("part 2")])
        let notes = try store.fetch(FetchRequest(entity: "Note"))
        #expect(notes.count == 3, "the note the store had, and one per author")
        #expect(Set(notes.map(\.primaryKey)).count == 3 && notes.allSatisfy { $0.primaryKey >= 1 })
        #expect(notes.filter { $0.primaryKey > 1 }.count == 2, "inserted notes get keys above the note the store had")
        #expect(Set(notes.map(\.globalID)).count == 3)
    }

    @Test("the same step over the same store inserts the same records with the same identities")
    func splitIsRepeatable() throws {
        let dir = try TemporaryDirectory("split-again")
        var results: [[String]] = []
        for (n, type) in ["sqlite", "xml", "lmdb"].enumerated() {
            let url = dir.path("copy\(n).\(type)")
            try SchemaUpgradeTests.makeV1Store(type, at: url)
            try SchemaUpgradeTests.operations.upgradeStore(at: url, to: try Self.withChapters(), options: .init(customStep: Self.split))
            let store = try Backends.open(url, readOnly: true)
            defer { try? store.close() }
            results.append(try allRecords(of: store).filter { $0.entity == "Chapter" || $0.entity == "Note" }
                .map { "\($0.entity) \($0.primaryKey) \($0.globalID) \($0.attributes)" }.sorted())
        }
        #expect(results[0].count == 7)
        #expect(results[0] == results[1] && results[1] == results[2])
    }

    @Test("an inserted record without a required value stops the upgrade before anything is written",
          arguments: CustomMigrationStepTests.types)
    func missingRequiredValueIsRefused(_ type: String) throws {
        let dir = try TemporaryDirectory("split-bad")
        let url = SchemaUpgradeTests.url(type, in: dir)
        defer { SchemaUpgradeTests.cleanUp(type, url) }
        try SchemaUpgradeTests.makeV1Store(type, at: url)
        let before = try SchemaUpgradeTests.snapshot(type, url)
        let untitled: RecordMigrationStep = { m in
            if m.entity.name == "Book" { try m.insert("Chapter", values: ["number": .integer16(1)], linkedBy: "book") }
        }
        #expect(throws: StoreError.self) {
            try SchemaUpgradeTests.operations.upgradeStore(at: url, to: try Self.withChapters(), options: .init(customStep: untitled))
        }
        #expect(try SchemaUpgradeTests.snapshot(type, url) == before, "the store is untouched")
    }
}

/// A custom step that merges entities: a related record's values fold into the record being migrated, and the entity
/// they came from is dropped.
@Suite struct MergingMigrationStepTests {
    static func v1() throws -> Schema {
        try Schema(entities: [
            EntityDescription(name: "Person", attributes: [AttributeDescription(name: "name", type: .string)], relationships: [
                RelationshipDescription(name: "profile", destination: "Profile", inverse: "person"),
            ]),
            EntityDescription(name: "Profile", attributes: [
                AttributeDescription(name: "bio", type: .string), AttributeDescription(name: "age", type: .integer16),
            ], relationships: [RelationshipDescription(name: "person", destination: "Person", inverse: "profile")]),
        ])
    }

    static func v2() throws -> Schema {
        try Schema(entities: [
            EntityDescription(name: "Person", attributes: [
                AttributeDescription(name: "name", type: .string), AttributeDescription(name: "bio", type: .string),
                AttributeDescription(name: "age", type: .integer16),
            ]),
        ])
    }

    static let merge: RecordMigrationStep = { m in
        guard m.entity.name == "Person", let profile = try m.sourceRelated("profile").first else { return }
        try m.set("bio", profile.attributes[0])
        try m.set("age", profile.attributes[1])
    }

    @Test("a step folds a related record's values into this one; the merged entity is dropped", arguments: CustomMigrationStepTests.types)
    func mergeFoldsRelatedValues(_ type: String) throws {
        let dir = try TemporaryDirectory("merge")
        let url = SchemaUpgradeTests.url(type, in: dir)
        defer { SchemaUpgradeTests.cleanUp(type, url) }
        let v1 = try Self.v1()
        let store = try Backends.registry.backend(for: type).open(at: url, options: StoreOptions(), creating: StoreMetadata(storeType: type, schema: v1))
        _ = try store.allocatePrimaryKeys(root: "Person", count: 3)
        _ = try store.allocatePrimaryKeys(root: "Profile", count: 2)
        try store.save(StoreChanges(inserted: [
            v1.record("Person", 1, ["name": "Ada"], ["profile": .toOne(2)]),
            v1.record("Person", 2, ["name": "Grace"], ["profile": .toOne(1)]),
            v1.record("Person", 3, ["name": "Alan"]),
            v1.record("Profile", 1, ["bio": "admiral", "age": .integer16(85)], ["person": .toOne(2)]),
            v1.record("Profile", 2, ["bio": "countess", "age": .integer16(36)], ["person": .toOne(1)]),
        ]))
        try store.close()

        try SchemaUpgradeTests.operations.upgradeStore(at: url, to: try Self.v2(), options: .init(batchSize: 1, customStep: Self.merge))
        let after = try Backends.open(url, readOnly: true)
        defer { try? after.close() }
        let people = try after.fetch(FetchRequest(entity: "Person", sortDescriptors: [SortKey("name")]))
        #expect(people.map(\.attributes) == [
            [.string("Ada"), .string("countess"), .integer16(36)],
            [.string("Alan"), .null, .null],
            [.string("Grace"), .string("admiral"), .integer16(85)],
        ])
        #expect(after.metadata.schema.entity(named: "Profile") == nil)
    }
}
