import Foundation
@_spi(BackendKit) import StoreAPI
import StoreTestSupport
import Testing

/// Upgrading a store to the next version of its schema, on every store type: what is carried, what is refused
/// (before anything is written), and the coordinator's load path.
@Suite struct SchemaUpgradeTests {
    static let types = ["sqlite", "lmdb", "xml", "memory"]
    static let operations = StoreOperations(registry: Backends.registry)

    /// Fixed identities, so the upgraded records can be found and compared.
    static let ids = (0..<6).map { UUID(uuidString: String(format: "00000000-0000-0000-0000-%012d", $0 + 1)) ?? UUID() }
    static let storeUUID = UUID(uuidString: "11111111-2222-3333-4444-555555555555") ?? UUID()

    /// A v1 store of `type` with two authors, three books (one without a title), a note, custom metadata and (where
    /// the type keeps it) one history transaction.
    static func makeV1Store(_ type: String, at url: URL, authors: [String] = ["Le Guin", "Butler"]) throws {
        let v1 = try EvolutionSchemas.v1()
        var metadata = StoreMetadata(storeType: type, storeUUID: storeUUID, schema: v1, custom: ["app": .string("library")])
        metadata.syncOptions = nil
        let store = try Backends.registry.backend(for: type).open(at: url, options: StoreOptions(historyTracking: true),
                                                                  creating: metadata)
        defer { try? store.close() }
        let records = [
            v1.record("Author", 1, ["name": .string(authors[0]), "age": .integer16(88), "rating": .float(4.5), "code": .integer32(-7)],
                      ["books": .toMany([1, 2])], globalID: ids[0]),
            v1.record("Author", 2, ["name": .string(authors[1]), "rating": .float(0.1)], ["books": .toMany([3])], globalID: ids[1]),
            v1.record("Book", 1, ["title": .string("The Dispossessed"), "pages": .integer16(387), "isbn": .string("978-0061054884")],
                      ["author": .toOne(1)], globalID: ids[2]),
            v1.record("Book", 2, ["pages": .integer16(300)], ["author": .toOne(1)], globalID: ids[3]),
            v1.record("Book", 3, ["title": .string("Kindred"), "pages": .integer16(-1)], ["author": .toOne(2)], globalID: ids[4]),
            v1.record("Note", 1, ["text": .string("dropped in v2")], globalID: ids[5]),
        ]
        _ = try store.allocatePrimaryKeys(root: "Author", count: 2)
        _ = try store.allocatePrimaryKeys(root: "Book", count: 3)
        _ = try store.allocatePrimaryKeys(root: "Note", count: 1)
        let history = HistoryTransaction(token: HistoryTransaction.assignToken, timestamp: Date(timeIntervalSinceReferenceDate: 1000),
                                         author: "test", changes: [
                                             HistoryChange(kind: .insert, entity: "Book", primaryKey: 1, globalID: ids[2]),
                                             HistoryChange(kind: .update, entity: "Author", primaryKey: 1, globalID: ids[0],
                                                           changedKeys: ["name"]),
                                         ])
        try store.save(StoreChanges(inserted: records, history: [history]))
    }

    static func url(_ type: String, in dir: TemporaryDirectory) -> URL { dir.path("library.\(type)") }

    /// Every file of the store at `url`, by name, with its bytes (a memory store: its records).
    static func snapshot(_ type: String, _ url: URL) throws -> [String: Data] {
        let backend = try Backends.registry.backend(for: type)
        guard backend.capabilities.contains(.persistent) else {
            let store = try Backends.open(url, readOnly: true)
            defer { try? store.close() }
            return ["records": try ndjson(store)]
        }
        var out: [String: Data] = [:]
        for f in backend.ownedFiles(ofStoreAt: url) {
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: f.path, isDirectory: &isDirectory) else { continue }
            if isDirectory.boolValue {
                for name in try FileManager.default.contentsOfDirectory(atPath: f.path) where !name.hasSuffix("lock.mdb") {
                    out[f.lastPathComponent + "/" + name] = try Data(contentsOf: f.appendingPathComponent(name))
                }
            } else {
                out[f.lastPathComponent] = try Data(contentsOf: f)
            }
        }
        return out
    }

    static func cleanUp(_ type: String, _ url: URL) {
        if type == "memory" { try? InMemoryBackend().destroyStore(at: url) }
    }

    @Test("v1 → v2 carries every kept record and value, identities, metadata and history", arguments: types)
    func upgradeCarriesEverything(_ type: String) throws {
        let dir = try TemporaryDirectory("upgrade")
        let url = Self.url(type, in: dir)
        defer { Self.cleanUp(type, url) }
        try Self.makeV1Store(type, at: url)
        let v2 = try EvolutionSchemas.v2()

        let plan = try Self.operations.upgradeStore(at: url, to: v2)
        #expect(plan.removedEntities == ["Note"])

        let store = try Backends.open(url, readOnly: true)
        defer { try? store.close() }
        let m = store.metadata
        #expect(m.storeUUID == Self.storeUUID)
        #expect(m.storeType == type)
        #expect(m.custom == ["app": .string("library")])
        #expect(m.versionHashes == v2.versionHashes)
        #expect(m.formatVersion == StoreMetadata.currentFormatVersion)
        #expect(m.schema == v2)

        let records = try Backends.records(of: store)
        #expect(records.count == 5, "the note is dropped with its entity")
        let leGuin = try #require(records[Self.ids[0]])
        #expect(leGuin.entity == "Author" && leGuin.primaryKey == 1)
        #expect(leGuin.attributes == [.string("Le Guin"), .integer64(88), .double(Double(Float(4.5))), .string("-7"), .string("unknown")])
        #expect(Set(leGuin.relationships[0].keys) == [1, 2])
        let butler = try #require(records[Self.ids[1]])
        #expect(butler.attributes == [.string("Butler"), .null, .double(Double(Float(0.1))), .null, .string("unknown")])
        let dispossessed = try #require(records[Self.ids[2]])
        #expect(dispossessed.entity == "Title" && dispossessed.primaryKey == 1)
        #expect(dispossessed.attributes == [.string("The Dispossessed"), .integer32(387), .string("978-0061054884")])
        #expect(dispossessed.relationships == [.toMany([1])])
        let untitled = try #require(records[Self.ids[3]])
        #expect(untitled.attributes == [.string("untitled"), .integer32(300), .null], "the new default fills the gap")
        let kindred = try #require(records[Self.ids[4]])
        #expect(kindred.attributes == [.string("Kindred"), .integer32(-1), .null])
        #expect(kindred.relationships == [.toMany([2])])
        #expect(records[Self.ids[5]] == nil)

        if try Backends.registry.backend(for: type).capabilities.contains(.history) {
            let history = try store.history(after: nil)
            #expect(history.count == 1)
            #expect(history.first?.author == "test")
            #expect(history.first?.changes.map(\.entity) == ["Title", "Author"])
            #expect(history.first?.changes.last?.changedKeys == ["fullName"])
        }
        #expect(!dir.listing().contains { $0.hasPrefix(AtomicFile.stagingPrefix) }, "no staging left: \(dir.listing())")
    }

    @Test("the upgraded store opens in a coordinator with v2 and takes new records", arguments: types)
    func upgradedStoreIsUsable(_ type: String) throws {
        let dir = try TemporaryDirectory("upgrade-use")
        let url = Self.url(type, in: dir)
        defer { Self.cleanUp(type, url) }
        try Self.makeV1Store(type, at: url)
        let coordinator = StoreCoordinator(schema: try EvolutionSchemas.v2(), registry: Backends.registry)
        var description = StoreDescription(url: url, type: type, options: StoreOptions(createIfMissing: false))

        // Without the option: refused, naming the entities and saying how to upgrade.
        do {
            try coordinator.addStore(description)
            Issue.record("a v1 store must not load with v2 unless asked to upgrade")
        } catch StoreError.incompatibleSchema(_, let entities) {
            #expect(Set(entities).isSuperset(of: ["Author", "Title"]))
            let message = StoreError.incompatibleSchema(url, entities: entities).description
            #expect(message.contains("storectl upgrade") && message.contains("migratesSchemaAutomatically"))
        }

        description.options.migratesSchemaAutomatically = true
        try coordinator.addStore(description)
        let context = coordinator.newContext()
        let titles = try context.fetch("Title", sortedBy: [SortKey("title")])
        #expect(titles.count == 3)
        let publisher = try context.insert("Publisher", ["name": "Harper"])
        let author = try context.insert("Author", ["fullName": "Jemisin"])
        _ = (publisher, author)
        try context.save()
        // A new key does not reuse an old one.
        let authors = try context.fetch("Author")
        #expect(Set(authors.map(\.objectID.primaryKey)).count == 3)
    }

    @Test("the coordinator upgrades a store at a path to its schema, then loads it", arguments: types)
    func coordinatorUpgradesThenLoads(_ type: String) throws {
        let dir = try TemporaryDirectory("upgrade-coordinator")
        let url = Self.url(type, in: dir)
        defer { Self.cleanUp(type, url) }
        try Self.makeV1Store(type, at: url)
        let coordinator = StoreCoordinator(schema: try EvolutionSchemas.v2(), registry: Backends.registry)
        let plan = try coordinator.upgradeStore(at: url)
        #expect(plan.changedEntities.contains("Title"))
        let loaded = try coordinator.addStore(StoreDescription(url: url, type: type, options: StoreOptions(createIfMissing: false)))
        #expect(loaded.identifier == Self.storeUUID)
        // Loaded, it matches: upgrading again reloads it and changes nothing.
        #expect(try coordinator.upgradeStore(at: url).isEmpty)
        #expect(try coordinator.newContext().fetch("Author").count == 2)
    }

    @Test("records without a value for a newly required attribute: refused, listed, store untouched", arguments: types)
    func missingRequiredValuesAreRefused(_ type: String) throws {
        let dir = try TemporaryDirectory("upgrade-missing")
        let url = Self.url(type, in: dir)
        defer { Self.cleanUp(type, url) }
        try Self.makeV1Store(type, at: url)
        let before = try Self.snapshot(type, url)
        let to = try EvolutionSchemas.v1(changing: "Book") { b in b.attributes[2].isOptional = false }
        do {
            try Self.operations.upgradeStore(at: url, to: to)
            Issue.record("expected a refusal")
        } catch StoreError.migrationRefused(let at, let problems) {
            #expect(at == url)
            #expect(problems == [.missingValues(entity: "Book", property: "isbn",
                                                records: [RecordKey(entity: "Book", primaryKey: 2), RecordKey(entity: "Book", primaryKey: 3)],
                                                count: 2)])
        }
        #expect(try Self.snapshot(type, url) == before)
        #expect(try Backends.registry.backend(for: type).readMetadata(at: url).schema == EvolutionSchemas.v1())
    }

    @Test("duplicates under a new uniqueness constraint: refused, listed, store untouched", arguments: types)
    func duplicatesAreRefused(_ type: String) throws {
        let dir = try TemporaryDirectory("upgrade-unique")
        let url = Self.url(type, in: dir)
        defer { Self.cleanUp(type, url) }
        try Self.makeV1Store(type, at: url, authors: ["Same", "Same"])
        let before = try Self.snapshot(type, url)
        let to = try EvolutionSchemas.v1(changing: "Author") { a in a.uniquenessConstraints = [["name"]] }
        do {
            try Self.operations.upgradeStore(at: url, to: to)
            Issue.record("expected a refusal")
        } catch StoreError.migrationRefused(_, let problems) {
            #expect(problems == [.duplicateValues(entity: "Author", attributes: ["name"], values: [StoreValue.string("Same").description],
                                                  records: [RecordKey(entity: "Author", primaryKey: 1), RecordKey(entity: "Author", primaryKey: 2)])])
        }
        #expect(try Self.snapshot(type, url) == before)

        // Distinct values pass the same check.
        let other = try TemporaryDirectory("upgrade-unique-ok")
        let ok = Self.url(type, in: other)
        defer { Self.cleanUp(type, ok) }
        try Self.makeV1Store(type, at: ok)
        try Self.operations.upgradeStore(at: ok, to: to)
        #expect(try Backends.registry.backend(for: type).readMetadata(at: ok).versionHashes == to.versionHashes)
    }

    @Test("a change that cannot be inferred is refused before the store is opened", arguments: types)
    func nonInferableChangeIsRefused(_ type: String) throws {
        let dir = try TemporaryDirectory("upgrade-refused")
        let url = Self.url(type, in: dir)
        defer { Self.cleanUp(type, url) }
        try Self.makeV1Store(type, at: url)
        let before = try Self.snapshot(type, url)
        let to = try EvolutionSchemas.v1(changing: "Book") { b in b.attributes[0].type = .integer64 }
        #expect(throws: StoreError.self) { try Self.operations.upgradeStore(at: url, to: to) }
        do { try Self.operations.upgradeStore(at: url, to: to) } catch {
            #expect("\(error)".contains("Book.title: type changes from string to integer64"))
            #expect("\(error)".hasPrefix(url.path))
        }
        #expect(try Self.snapshot(type, url) == before)
    }

    @Test("a store already at the schema is left alone", arguments: types)
    func upToDateStoreIsNotRewritten(_ type: String) throws {
        let dir = try TemporaryDirectory("upgrade-noop")
        let url = Self.url(type, in: dir)
        defer { Self.cleanUp(type, url) }
        try Self.makeV1Store(type, at: url)
        let before = try Self.snapshot(type, url)
        let plan = try Self.operations.upgradeStore(at: url, to: EvolutionSchemas.v1())
        #expect(plan.isEmpty)
        #expect(try Self.snapshot(type, url) == before)
    }

    @Test("an optional attribute given a default keeps the empty values it had", arguments: types)
    func optionalAttributeKeepsItsNil(_ type: String) throws {
        let dir = try TemporaryDirectory("upgrade-keeps-nil")
        let url = Self.url(type, in: dir)
        defer { Self.cleanUp(type, url) }
        try Self.makeV1Store(type, at: url)
        // The default alone leaves the version hash as it was, so the widening makes the upgrade happen.
        let v2 = try EvolutionSchemas.v1(changing: "Book") { book in
            for i in book.attributes.indices where book.attributes[i].name == "isbn" { book.attributes[i].defaultValue = "none" }
            for i in book.attributes.indices where book.attributes[i].name == "pages" { book.attributes[i].type = .integer32 }
        }
        let plan = try Self.operations.upgradeStore(at: url, to: v2)
        #expect(!plan.isEmpty)
        let store = try Backends.open(url, readOnly: true)
        defer { try? store.close() }
        let records = try Backends.records(of: store)
        #expect(records[Self.ids[2]]?.attributes == [.string("The Dispossessed"), .integer32(387), .string("978-0061054884")])
        #expect(records[Self.ids[3]]?.attributes == [.null, .integer32(300), .null], "a nil the store had is not a missing value")
    }

    @Test("a required relationship with a record that has no link is refused", arguments: ["sqlite", "lmdb"])
    func missingRequiredLinkIsRefused(_ type: String) throws {
        let dir = try TemporaryDirectory("upgrade-link")
        let url = Self.url(type, in: dir)
        try Self.makeV1Store(type, at: url)
        let to = try EvolutionSchemas.v1(changing: "Author") { a in a.relationships[0].isOptional = false; a.relationships[0].minCount = 2 }
        do {
            try Self.operations.upgradeStore(at: url, to: to)
            Issue.record("expected a refusal")
        } catch StoreError.migrationRefused(_, let problems) {
            #expect(problems == [.missingValues(entity: "Author", property: "books", records: [RecordKey(entity: "Author", primaryKey: 2)], count: 1)])
        }
    }

    @Test("entities in another order: every record still carried (an atomic file is then read entity by entity)",
          arguments: types)
    func reorderedEntities(_ type: String) throws {
        let dir = try TemporaryDirectory("upgrade-order")
        let url = Self.url(type, in: dir)
        defer { Self.cleanUp(type, url) }
        try Self.makeV1Store(type, at: url)
        let base = try EvolutionSchemas.v1(changing: "Note") { n in n.attributes.append(AttributeDescription(name: "mood", type: .string)) }
        let reordered = try Schema(entities: base.definitions.reversed())
        try Self.operations.upgradeStore(at: url, to: reordered)
        let store = try Backends.open(url, readOnly: true)
        defer { try? store.close() }
        let records = try Backends.records(of: store)
        #expect(records.count == 6)
        #expect(records[Self.ids[0]]?.attributes[0] == .string("Le Guin"))
        #expect(records[Self.ids[5]]?.attributes == [.string("dropped in v2"), .null])
        #expect(store.metadata.versionHashes == reordered.versionHashes)
    }

    @Test("a lower maximum count: records with more links are refused", arguments: types)
    func tooManyLinksAreRefused(_ type: String) throws {
        let dir = try TemporaryDirectory("upgrade-max")
        let url = Self.url(type, in: dir)
        defer { Self.cleanUp(type, url) }
        try Self.makeV1Store(type, at: url)
        let before = try Self.snapshot(type, url)
        let to = try EvolutionSchemas.v1(changing: "Author") { a in a.relationships[0].maxCount = 1 }
        do {
            try Self.operations.upgradeStore(at: url, to: to)
            Issue.record("expected a refusal")
        } catch StoreError.migrationRefused(_, let problems) {
            #expect(problems == [.tooManyLinks(entity: "Author", relationship: "books", maximum: 1,
                                               records: [RecordKey(entity: "Author", primaryKey: 1)], count: 1)])
        }
        #expect(try Self.snapshot(type, url) == before)
        // Two links are allowed by a maximum of two.
        try Self.operations.upgradeStore(at: url, to: EvolutionSchemas.v1(changing: "Author") { a in a.relationships[0].maxCount = 2 })
    }

    @Test("an upgrade cancelled by its progress handler leaves the store as it was", arguments: ["sqlite", "lmdb", "xml"])
    func cancelledUpgradeLeavesStore(_ type: String) throws {
        let dir = try TemporaryDirectory("upgrade-cancel")
        let url = Self.url(type, in: dir)
        try Self.makeV1Store(type, at: url)
        let before = try Self.snapshot(type, url)
        struct Stop: Error {}
        #expect(throws: StoreError.self) {
            try Self.operations.upgradeStore(at: url, to: EvolutionSchemas.v2(),
                                             options: .init(batchSize: 1, progress: { _ in throw Stop() }))
        }
        #expect(try Self.snapshot(type, url) == before)
        #expect(!dir.listing().contains { $0.hasPrefix(AtomicFile.stagingPrefix) }, "\(dir.listing())")
        // Run again: it finishes.
        try Self.operations.upgradeStore(at: url, to: EvolutionSchemas.v2())
        #expect(try Backends.registry.backend(for: type).readMetadata(at: url).versionHashes == EvolutionSchemas.v2().versionHashes)
    }

    @Test("a chain refused for its data at a later step leaves the store at the version it had", arguments: types)
    func chainRefusedLaterLeavesStore(_ type: String) throws {
        let dir = try TemporaryDirectory("upgrade-chain-refused")
        let url = Self.url(type, in: dir)
        defer { Self.cleanUp(type, url) }
        try Self.makeV1Store(type, at: url)
        let before = try Self.snapshot(type, url)
        let v1 = try EvolutionSchemas.v1()
        let middle = try EvolutionSchemas.v1WiderAge()
        // The plan infers this step; only the records show two books without an isbn.
        let last = try EvolutionSchemas.requiringISBN(after: middle)
        let chain = SchemaVersionChain(versions: [("v1", v1), ("v1.5", middle), ("v1.6", last)])
        do {
            try Self.operations.upgradeStore(at: url, through: chain)
            Issue.record("expected a refusal at v1.5 → v1.6")
        } catch StoreError.migrationRefused(let at, let problems) {
            #expect(at == url)
            #expect(problems == [.missingValues(entity: "Book", property: "isbn",
                                                records: [RecordKey(entity: "Book", primaryKey: 2), RecordKey(entity: "Book", primaryKey: 3)],
                                                count: 2)])
        }
        #expect(try Self.snapshot(type, url) == before, "not left at v1.5")
        #expect(try Backends.registry.backend(for: type).readMetadata(at: url).versionHashes == v1.versionHashes)
        #expect(!dir.listing().contains { $0.hasPrefix(AtomicFile.stagingPrefix) }, "\(dir.listing())")
    }

    @Test("a rehearsal meets the refusals the upgrade would and changes nothing; the upgrade then does what it said",
          arguments: types)
    func rehearsalChangesNothing(_ type: String) throws {
        let dir = try TemporaryDirectory("upgrade-rehearsal")
        let url = Self.url(type, in: dir)
        defer { Self.cleanUp(type, url) }
        try Self.makeV1Store(type, at: url)
        let before = try Self.snapshot(type, url)
        let v1 = try EvolutionSchemas.v1()
        let middle = try EvolutionSchemas.v1WiderAge()
        let isbnRequired = try EvolutionSchemas.requiringISBN(after: middle)
        for chain in [SchemaVersionChain(versions: [("v1", v1), ("v1.6", isbnRequired)]),
                      SchemaVersionChain(versions: [("v1", v1), ("v1.5", middle), ("v1.6", isbnRequired)])] {
            do {
                try Self.operations.rehearseUpgrade(ofStoreAt: url, through: chain)
                Issue.record("expected a refusal through \(chain.versions.map(\.name))")
            } catch StoreError.migrationRefused(let at, let problems) {
                #expect(at == url)
                #expect(problems.map { if case .missingValues(let e, let p, _, let n) = $0 { "\(e).\(p) \(n)" } else { "\($0)" } } == ["Book.isbn 2"])
            }
        }
        let chain = SchemaVersionChain(versions: [("v1", v1), ("v1.5", middle), ("v2", try EvolutionSchemas.v2())])
        let rehearsed = try Self.operations.rehearseUpgrade(ofStoreAt: url, through: chain)
        #expect(rehearsed.map(\.to) == ["v1.5", "v2"])
        #expect(try Self.snapshot(type, url) == before, "a rehearsal changes nothing")
        #expect(!dir.listing().contains { $0.hasPrefix(AtomicFile.stagingPrefix) }, "\(dir.listing())")
        let done = try Self.operations.upgradeStore(at: url, through: chain)
        #expect(done.map(\.to) == rehearsed.map(\.to) && done.map(\.plan) == rehearsed.map(\.plan))
        #expect(try Self.operations.rehearseUpgrade(ofStoreAt: url, through: chain).isEmpty, "nothing left to do")
    }

    @Test("a chain of several steps carries records, identities, metadata and history to the last version", arguments: types)
    func chainOfStepsCarriesEverything(_ type: String) throws {
        let dir = try TemporaryDirectory("upgrade-chain-whole")
        let url = Self.url(type, in: dir)
        defer { Self.cleanUp(type, url) }
        try Self.makeV1Store(type, at: url)
        let middle = try EvolutionSchemas.v1WiderAge()
        let chain = SchemaVersionChain(versions: [("v1", try EvolutionSchemas.v1()), ("v1.5", middle), ("v2", try EvolutionSchemas.v2())])
        let steps = try Self.operations.upgradeStore(at: url, through: chain)
        #expect(steps.map(\.to) == ["v1.5", "v2"])
        #expect(!dir.listing().contains { $0.hasPrefix(AtomicFile.stagingPrefix) }, "\(dir.listing())")
        let store = try Backends.open(url, readOnly: true)
        defer { try? store.close() }
        #expect(store.metadata.versionHashes == (try EvolutionSchemas.v2()).versionHashes)
        #expect(store.metadata.storeUUID == Self.storeUUID)
        #expect(store.metadata.custom["app"] == .string("library"))
        let records = try Backends.records(of: store)
        #expect(Set(records.keys) == Set(Self.ids.prefix(5)), "the note's entity is gone in v2; everything else kept its global ID")
        #expect(records[Self.ids[0]]?.attributes == [.string("Le Guin"), .integer64(88), .double(Double(Float(4.5))), .string("-7"), .string("unknown")])
        #expect(records[Self.ids[3]]?.attributes == [.string("untitled"), .integer32(300), .null])
        #expect(records[Self.ids[4]]?.relationships == [.toMany([2])])
        if try Backends.registry.backend(for: type).capabilities.contains(.history) {
            let history = try store.history(after: nil)
            #expect(history.map(\.author) == ["test"])
            #expect(history.first?.changes.map(\.entity) == ["Title", "Author"])
            #expect(history.first?.changes.last?.changedKeys == ["fullName"])
        }
    }

    @Test("a version chain is walked one step at a time, and resumes from the version a store reached")
    func chainStepsThroughVersions() throws {
        let dir = try TemporaryDirectory("upgrade-chain")
        let url = Self.url("lmdb", in: dir)
        try Self.makeV1Store("lmdb", at: url)
        let v1 = try EvolutionSchemas.v1()
        let middle = try EvolutionSchemas.v1WiderAge()
        let v2 = try EvolutionSchemas.v2()
        let chain = SchemaVersionChain(versions: [("v1", v1), ("v1.5", middle), ("v2", v2)])
        #expect(chain.position(of: try Backends.registry.backend(for: "lmdb").readMetadata(at: url)) == 0)

        // Stop after the first step by upgrading to the middle version only, then resume through the chain.
        try Self.operations.upgradeStore(at: url, to: middle)
        let steps = try Self.operations.upgradeStore(at: url, through: chain)
        #expect(steps.map(\.from) == ["v1.5"])
        #expect(steps.map(\.to) == ["v2"])
        let store = try Backends.open(url, readOnly: true)
        defer { try? store.close() }
        #expect(store.metadata.versionHashes == v2.versionHashes)
        #expect(try Backends.records(of: store)[Self.ids[0]]?.attributes[1] == .integer64(88))
        #expect(try Self.operations.upgradeStore(at: url, through: chain).isEmpty)
    }
}
