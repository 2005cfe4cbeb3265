import CoreDataBackend
import Foundation
import LMDBBackend
import SQLiteBackend
import StoreAPI
import StoreTestSupport
import Testing
import XMLBackend

/// Where the corpus parts the upgrade tests read are, when it is there.
enum UpgradeCorpus {
    static let stores = PackagePaths.corpus("stores")
    static let models = PackagePaths.corpus("models")
    static let truthFile = PackagePaths.corpus("VERSION_HASHES.json")
    static var isPresent: Bool { stores != nil && models != nil && truthFile != nil }
}

/// Real stores of consecutive model versions: each v(N) Core Data store is converted (in a temporary folder; the
/// corpus is only read) to every store type, upgraded with the v(N+1) model, and must carry every record and value
/// the new model keeps, with the next model's version hashes — Core Data's own, where its v(N+1) store exists.
@Suite(.enabled(if: UpgradeCorpus.isPresent, "the shared corpus (../shared/corpus) is absent"))
struct CoreDataCorpusUpgradeTests {
    static let stores = UpgradeCorpus.stores
    static let models = UpgradeCorpus.models
    static let truthFile = UpgradeCorpus.truthFile

    static let registry = BackendRegistry(backends: [
        CoreDataStoreBackend(), SQLiteStoreBackend(), LMDBStoreBackend(), XMLStoreBackend(), InMemoryBackend(),
    ])
    static let operations = StoreOperations(registry: registry)

    /// One upgrade step of a corpus chain.
    struct Step: CustomTestStringConvertible, Sendable {
        /// The v(N) store, under `stores/`.
        let store: String
        /// The v(N+1) model version, under `models/`.
        let nextModel: String
        /// Core Data's own v(N+1) store, under `stores/`, when the corpus has it.
        let nextStore: String?
        var testDescription: String { "\(store) → \(nextModel.split(separator: "/").last ?? "")" }
    }

    static let wibosco = "wibosco__CoreDataMigrationRevised-Example"
    static let wiboscoModel = "wibosco__CoreDataMigrationRevised-Example__CoreDataMigration_Example.xcdatamodeld"
    static let jeff = "jeffreybergier__CoreDataMigrationTests"
    static let jeffModel = "jeffreybergier__CoreDataMigrationTests__Model.xcdatamodeld"
    static let ddg = "duckduckgo__BrowserServicesKit"
    static let ddgModel = "duckduckgo__BrowserServicesKit__BookmarksModel.xcdatamodeld"

    static let steps: [Step] = {
        var steps = [
            Step(store: "\(wibosco)/CoreDataMigration_Example_1.sqlite",
                 nextModel: "\(wiboscoModel)/CoreDataMigration_Example 2.xcdatamodel",
                 nextStore: "\(wibosco)/CoreDataMigration_Example_2.sqlite"),
            Step(store: "alemar11__CoreDataPlus/SampleModel_V1.sqlite",
                 nextModel: "alemar11__CoreDataPlus__SampleModel.xcdatamodeld/SampleModel2.xcdatamodel",
                 nextStore: "alemar11__CoreDataPlus/SampleModel_V2.sqlite"),
        ]
        let jeffVersions = ["1.0.0", "1.1.0", "1.1.2", "1.2.0", "2.0.0"]
        for (a, b) in zip(jeffVersions, jeffVersions.dropFirst()) {
            steps.append(Step(store: "\(jeff)/Example_v\(a).sqlite", nextModel: "\(jeffModel)/v\(b).xcdatamodel",
                              nextStore: "\(jeff)/Example_v\(b).sqlite"))
        }
        for n in 1...5 {
            steps.append(Step(store: "\(ddg)/Bookmarks_V\(n).sqlite", nextModel: "\(ddgModel)/BookmarksModel \(n + 1).xcdatamodel",
                              nextStore: n < 5 ? "\(ddg)/Bookmarks_V\(n + 1).sqlite" : nil))
        }
        return steps
    }()

    /// The entity hashes of the corpus store `store` (under `stores/`), from `VERSION_HASHES.json`.
    static func coreDataHashes(of store: String) throws -> [String: String]? {
        guard let truthFile else { return nil }
        let json = try JSONSerialization.jsonObject(with: Data(contentsOf: truthFile)) as? [String: Any]
        let stores = json?["stores"] as? [String: Any]
        let entry = stores?["stores/" + store] as? [String: Any]
        return entry?["entityHashes"] as? [String: String]
    }

    @Test("v(N) store → v(N+1) model on every store type", arguments: steps, ["sqlite", "lmdb", "xml"])
    func upgradeCarriesEveryKeptValue(_ step: Step, _ type: String) throws {
        let stores = try #require(Self.stores), models = try #require(Self.models)
        let next = try Schema(xcodeModelAt: models.appendingPathComponent(step.nextModel))
        let dir = try TemporaryDirectory("corpus-upgrade")
        let url = dir.path("store.\(type)")
        try Self.operations.copyStore(from: stores.appendingPathComponent(step.store), sourceType: "coredata", to: url, type: type)

        let before = try Self.registry.backend(for: type).open(at: url, options: StoreOptions(isReadOnly: true, createIfMissing: false), creating: nil)
        let sourceSchema = before.metadata.schema
        let sourceRecords = try allRecords(of: before)
        try before.close()
        let plan = try SchemaMigrationPlan(from: sourceSchema, to: next)

        let done = try Self.operations.upgradeStore(at: url, to: next)
        #expect(done == plan)
        let after = try Self.registry.backend(for: type).open(at: url, options: StoreOptions(isReadOnly: true, createIfMissing: false), creating: nil)
        defer { try? after.close() }
        #expect(after.metadata.versionHashes == next.versionHashes)
        if let nextStore = step.nextStore, let truth = try Self.coreDataHashes(of: nextStore) {
            #expect(after.metadata.versionHashes == truth, "Core Data's own \(nextStore)")
        }
        let upgraded = Dictionary(try allRecords(of: after).map { ($0.globalID, $0) }, uniquingKeysWith: { a, _ in a })
        var kept = 0
        for record in sourceRecords {
            guard let migration = plan.entities.first(where: { $0.source == record.entity }),
                  let sourceEntity = sourceSchema.entity(named: record.entity),
                  let entity = next.entity(named: migration.name) else {
                #expect(upgraded[record.globalID] == nil, "\(record.key) of a removed entity")
                continue
            }
            kept += 1
            guard let new = upgraded[record.globalID] else {
                Issue.record("\(record.key) was not carried")
                continue
            }
            #expect(new.entity == migration.name && new.primaryKey == record.primaryKey)
            for (a, m) in zip(entity.attributes, migration.attributes) {
                let value = new.attributes[entity.attributeIndex(a.name) ?? 0]
                guard let sourceName = m.source, let i = sourceEntity.attributeIndex(sourceName) else {
                    #expect(value == (a.defaultValue ?? .null), "\(record.key) new \(a.name)")
                    continue
                }
                let old = record.attributes[i]
                if old.isNull {
                    #expect(value == (a.defaultValue ?? .null), "\(record.key).\(a.name)")
                } else if old.type == a.type || (old.type == .binary && a.type == .transformable) {
                    #expect(value == old, "\(record.key).\(a.name)")
                } else {
                    #expect(value.type == a.type, "\(record.key).\(a.name) converted")
                }
            }
            for (r, m) in zip(entity.relationships, migration.relationships) {
                let keys = new.relationships[entity.relationshipIndex(r.name) ?? 0].keys
                guard let sourceName = m.source, let i = sourceEntity.relationshipIndex(sourceName) else {
                    #expect(keys.isEmpty, "\(record.key) new \(r.name)")
                    continue
                }
                let old = record.relationships[i].keys
                if r.isOrdered && (sourceEntity.relationships[i].isOrdered) {
                    #expect(keys == old, "\(record.key).\(r.name) in order")
                } else {
                    #expect(Set(keys) == Set(old) && keys.count == old.count, "\(record.key).\(r.name)")
                }
            }
        }
        #expect(upgraded.count == kept)
        #expect(kept > 0 || sourceRecords.isEmpty)
        #expect(try Self.registry.backend(for: type).checkIntegrity(at: url).isEmpty)
    }

    /// jeffreybergier's Core Data kept each entity's class in its stores' model caches: a v(N) store upgraded here
    /// to the v(N+1) model has the very schema Core Data's own v(N+1) store holds, and a comparison of the two finds
    /// nothing but the store UUID apart in their metadata.
    @Test("an upgraded Core Data store has the schema Core Data wrote for the same model",
          arguments: steps.filter { $0.store.hasPrefix(jeff) })
    func upgradedSchemaIsCoreDatas(_ step: Step) throws {
        let stores = try #require(Self.stores), models = try #require(Self.models)
        let nextStore = try #require(step.nextStore)
        let dir = try TemporaryDirectory("corpus-upgrade-schema")
        let url = dir.path("Example.sqlite")
        try Self.operations.copyStore(from: stores.appendingPathComponent(step.store), sourceType: "coredata", to: url, type: "coredata")
        try Self.operations.upgradeStore(at: url, to: try Schema(xcodeModelAt: models.appendingPathComponent(step.nextModel)))
        let backend = try Self.registry.backend(for: "coredata")
        let readOnly = StoreOptions(isReadOnly: true, createIfMissing: false)
        let ours = try backend.open(at: url, options: readOnly, creating: nil)
        defer { try? ours.close() }
        let theirs = try backend.open(at: stores.appendingPathComponent(nextStore), options: readOnly, creating: nil)
        defer { try? theirs.close() }
        #expect(ours.metadata.schema == theirs.metadata.schema)
        let differences = try StoreComparison(comparesHistory: false).compare(ours, theirs)
        #expect(differences.metadata.count == 1 && differences.metadata.allSatisfy { $0.hasPrefix("store UUID: ") },
                "\(differences.metadata)")
    }

    @Test("a Core Data store is upgraded as a Core Data store, through the public backend protocol")
    func coreDataStoreUpgradesInPlace() throws {
        let stores = try #require(Self.stores), models = try #require(Self.models)
        let step = Self.steps[1]
        let dir = try TemporaryDirectory("corpus-upgrade-coredata")
        let url = dir.path("Sample.sqlite")
        try Self.operations.copyStore(from: stores.appendingPathComponent(step.store), sourceType: "coredata", to: url, type: "coredata")
        let uuid = try Self.registry.backend(for: "coredata").readMetadata(at: url).storeUUID
        let next = try Schema(xcodeModelAt: models.appendingPathComponent(step.nextModel))
        let plan = try Self.operations.upgradeStore(at: url, to: next)
        #expect(plan.entities.first { $0.name == "LuxuryCar" }?.source == "ExpensiveSportCar")
        let metadata = try Self.registry.backend(for: "coredata").readMetadata(at: url)
        #expect(metadata.storeType == "coredata")
        #expect(metadata.storeUUID == uuid)
        #expect(metadata.versionHashes == (try Self.coreDataHashes(of: try #require(step.nextStore))))
        let store = try Self.registry.backend(for: "coredata").open(at: url, options: StoreOptions(isReadOnly: true, createIfMissing: false), creating: nil)
        defer { try? store.close() }
        #expect(try store.count(FetchRequest(entity: "LuxuryCar", includesSubentities: false)) == 5)
    }

    @Test("a whole .xcdatamodeld chain, one version at a time")
    func wholeBookmarksChain() throws {
        let stores = try #require(Self.stores), models = try #require(Self.models)
        let dir = try TemporaryDirectory("corpus-upgrade-chain")
        let url = dir.path("bookmarks.lmdb")
        try Self.operations.copyStore(from: stores.appendingPathComponent("\(Self.ddg)/Bookmarks_V1.sqlite"), sourceType: "coredata",
                                      to: url, type: "lmdb")
        let records = try Self.registry.backend(for: "lmdb").open(at: url, options: StoreOptions(isReadOnly: true, createIfMissing: false), creating: nil)
        let count = try allRecords(of: records).count
        try records.close()
        let chain = try SchemaVersionChain(xcodeModelBundleAt: models.appendingPathComponent(Self.ddgModel))
        let steps = try Self.operations.upgradeStore(at: url, through: chain)
        #expect(steps.map(\.to) == ["BookmarksModel 2", "BookmarksModel 3", "BookmarksModel 4", "BookmarksModel 5", "BookmarksModel 6"])
        let after = try Self.registry.backend(for: "lmdb").open(at: url, options: StoreOptions(isReadOnly: true, createIfMissing: false), creating: nil)
        defer { try? after.close() }
        #expect(after.metadata.versionHashes == chain.latest?.versionHashes)
        #expect(try allRecords(of: after).count == count)
    }

    /// wibosco's v3 splits each post's content into sections (the app's own migration policy does it in code): the
    /// custom step that does the same.
    static let contentToSection: RecordMigrationStep = { m in
        guard m.entity.name == "Post", case .string(let content)? = m.sourceValue("content") else { return }
        try m.insert("Section", values: ["title": .string("Section 1"), "body": .string(content), "index": .integer16(0)],
                     linkedBy: "post")
    }

    @Test("wibosco v2 → v3: a custom step splits each post's content into a section", arguments: ["coredata", "sqlite", "lmdb", "xml"])
    func wiboscoSplit(_ type: String) throws {
        let stores = try #require(Self.stores), models = try #require(Self.models)
        let dir = try TemporaryDirectory("corpus-upgrade-split")
        let url = dir.path(type == "coredata" ? "Posts.sqlite" : "posts.\(type)")
        try Self.operations.copyStore(from: stores.appendingPathComponent("\(Self.wibosco)/CoreDataMigration_Example_2.sqlite"),
                                      sourceType: "coredata", to: url, type: type)
        let before = try Self.registry.backend(for: type).open(at: url, options: StoreOptions(isReadOnly: true, createIfMissing: false), creating: nil)
        let posts = try before.fetch(FetchRequest(entity: "Post"))
        let contentIndex = try #require(before.metadata.schema.entity(named: "Post")?.attributeIndex("content"))
        try before.close()
        #expect(posts.count == 10, "the v2 store's .info.json counts 10 posts")

        let v3 = try Schema(xcodeModelAt: models.appendingPathComponent("\(Self.wiboscoModel)/CoreDataMigration_Example 3.xcdatamodel"))
        #expect(throws: StoreError.self, "without the step every post would lack its required sections") {
            try Self.operations.upgradeStore(at: url, to: v3)
        }
        try Self.operations.upgradeStore(at: url, to: v3, options: .init(customStep: Self.contentToSection))
        #expect(try Self.registry.backend(for: type).readMetadata(at: url).versionHashes
                == (try Self.coreDataHashes(of: "\(Self.wibosco)/CoreDataMigration_Example_3.sqlite")), "Core Data's own v3 store")

        let after = try Self.registry.backend(for: type).open(at: url, options: StoreOptions(isReadOnly: true, createIfMissing: false), creating: nil)
        defer { try? after.close() }
        let post = try #require(after.metadata.schema.entity(named: "Post")), section = try #require(after.metadata.schema.entity(named: "Section"))
        let upgradedPosts = Dictionary(try after.fetch(FetchRequest(entity: "Post")).map { ($0.globalID, $0) }, uniquingKeysWith: { a, _ in a })
        let sections = Dictionary(try after.fetch(FetchRequest(entity: "Section")).map { ($0.primaryKey, $0) }, uniquingKeysWith: { a, _ in a })
        #expect(upgradedPosts.count == posts.count)
        #expect(sections.count == posts.filter { !$0.attributes[contentIndex].isNull }.count)
        for old in posts {
            let new = try #require(upgradedPosts[old.globalID])
            let linked = new.relationships[post.relationshipIndex("sections") ?? 0].keys
            guard case .string(let content) = old.attributes[contentIndex] else {
                #expect(linked.isEmpty)
                continue
            }
            #expect(linked.count == 1, "\(new.key) has its section")
            let s = try #require(linked.first.flatMap { sections[$0] })
            #expect(s.attributes[section.attributeIndex("body") ?? 0] == .string(content))
            #expect(s.relationships[section.relationshipIndex("post") ?? 0] == .toOne(new.primaryKey))
        }
        #expect(try Self.registry.backend(for: type).checkIntegrity(at: url).isEmpty)
    }

    @Test("wibosco's chain without its custom step is refused at v2 → v3 and leaves the v1 store as it was")
    func wiboscoChainRefusedLeavesStore() throws {
        let stores = try #require(Self.stores), models = try #require(Self.models)
        let dir = try TemporaryDirectory("corpus-upgrade-wibosco-refused")
        let url = dir.path("Posts.sqlite")
        try Self.operations.copyStore(from: stores.appendingPathComponent("\(Self.wibosco)/CoreDataMigration_Example_1.sqlite"),
                                      sourceType: "coredata", to: url, type: "coredata")
        let before = try dir.listing().reduce(into: [String: Data]()) { $0[$1] = try Data(contentsOf: dir.path($1)) }
        // v2 → v3 adds a required to-many every existing post lacks: only the data shows it, after v1 → v2 is done.
        let chain = try SchemaVersionChain(xcodeModelBundleAt: models.appendingPathComponent(Self.wiboscoModel))
        do {
            try Self.operations.upgradeStore(at: url, through: chain)
            Issue.record("the chain should be refused: v1's posts have no sections")
        } catch StoreError.migrationRefused(let refused, let problems) {
            #expect(refused == url)
            #expect(problems.contains { if case .missingValues("Post", "sections", _, 10) = $0 { true } else { false } }, "\(problems)")
        }
        let after = try dir.listing().reduce(into: [String: Data]()) { $0[$1] = try Data(contentsOf: dir.path($1)) }
        #expect(after == before, "every file as it was, nothing staged left: \(dir.listing())")
        let metadata = try Self.registry.backend(for: "coredata").readMetadata(at: url)
        #expect(chain.position(of: metadata) == 0, "still at the first version")
    }

    @Test("wibosco's whole chain v1 → v4, with the custom step where the model splits an entity")
    func wiboscoChain() throws {
        let stores = try #require(Self.stores), models = try #require(Self.models)
        let dir = try TemporaryDirectory("corpus-upgrade-wibosco-chain")
        let url = dir.path("Posts.sqlite")
        try Self.operations.copyStore(from: stores.appendingPathComponent("\(Self.wibosco)/CoreDataMigration_Example_1.sqlite"),
                                      sourceType: "coredata", to: url, type: "coredata")
        var chain = try SchemaVersionChain(xcodeModelBundleAt: models.appendingPathComponent(Self.wiboscoModel))
        chain.customSteps["CoreDataMigration_Example 3"] = Self.contentToSection
        let steps = try Self.operations.upgradeStore(at: url, through: chain)
        #expect(steps.map(\.to) == ["CoreDataMigration_Example 2", "CoreDataMigration_Example 3", "CoreDataMigration_Example 4"])
        let after = try Self.registry.backend(for: "coredata").open(at: url, options: StoreOptions(isReadOnly: true, createIfMissing: false), creating: nil)
        defer { try? after.close() }
        #expect(after.metadata.versionHashes == chain.latest?.versionHashes)
        let posts = try after.fetch(FetchRequest(entity: "Post"))
        #expect(!posts.isEmpty)
        #expect(try after.count(FetchRequest(entity: "Section")) > 0, "v1's posts had content, and it became sections")
        let softDeleted = try #require(after.metadata.schema.entity(named: "Post")?.attributeIndex("softDeleted"))
        #expect(posts.allSatisfy { $0.attributes[softDeleted] == .boolean(false) }, "v4's required flag gets its default")
    }
}
