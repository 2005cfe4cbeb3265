@_spi(BackendKit) @testable import CoreDataBackend
import Foundation
import SQLiteBackend
@_spi(BackendKit) import StoreAPI
import StoreTestSupport
import Testing

/// The `coredata` store type on every corpus store: opened read-only, record counts equal to the `.info.json` row
/// counts, relationships that resolve and agree, stable global identifiers, files never changed, and storectl's
/// export and info (convert and diff: CoreDataCorpusRoundTripTests). Expectations come from each store's
/// `.info.json`, never from this code.
@Suite struct CoreDataStoreBackendTests {
    typealias Store = CoreDataCorpusTests.Store

    static func stores() -> [Store] { CoreDataCorpusTests.stores() }

    static func hasModelCache(_ store: Store) -> Bool {
        CoreDataCorpusTests.json(store, "Z_MODELCACHE") is [String: Any]
    }

    static func tableCounts(_ store: Store) -> [String: Int] {
        (CoreDataCorpusTests.json(store, "tables") as? [String: Any])?.compactMapValues { $0 as? Int } ?? [:]
    }

    static func open(_ url: URL) throws -> any PersistentStore {
        try CoreDataStoreBackend().open(at: url, options: StoreOptions(isReadOnly: true, createIfMissing: false), creating: nil)
    }

    /// Every record of the store, by exact entity, through `scan` in pages.
    static func allRecords(_ store: any PersistentStore) throws -> [String: [Record]] {
        var out: [String: [Record]] = [:]
        for e in store.metadata.schema.entities {
            var after: Int64?
            var page: [Record]
            repeat {
                page = try store.scan(entity: e.name, after: after, limit: 3)
                out[e.name, default: []] += page
                after = page.last?.primaryKey
            } while !page.isEmpty
        }
        return out
    }

    /// Hashes of the store's files (main and sidecars) and the listing of its folder.
    static func fingerprint(_ url: URL) throws -> ([String: String], [String]) {
        let dir = url.deletingLastPathComponent()
        let names = try FileManager.default.contentsOfDirectory(atPath: dir.path).sorted()
        var hashes: [String: String] = [:]
        for n in names where n.hasPrefix(url.lastPathComponent) {
            hashes[n] = CoreDataCorpusTests.sha256(dir.appendingPathComponent(n).path)
        }
        return (hashes, names)
    }

    @Test func corpusIsPresent() {
        if Self.stores().isEmpty {
            withKnownIssue("the shared corpus (../shared/corpus/stores) is absent; coredata store tests skipped") {
                Issue.record("corpus absent")
            }
        }
    }

    // MARK: Sniffing and detection

    @Test(arguments: stores())
    func sniffedAsCoreDataAndForeignToSQLite(_ store: Store) throws {
        #expect(CoreDataStoreBackend().sniff(store.url) == .store)
        guard case .foreign = SQLiteStoreBackend().sniff(store.url) else {
            Issue.record("the sqlite backend does not call \(store.name) foreign")
            return
        }
        let registry = BackendRegistry(backends: [SQLiteStoreBackend(), CoreDataStoreBackend()])
        #expect(try registry.detectBackend(at: store.url).typeIdentifier == "coredata")
        // A new .sqlite path stays the sqlite backend's.
        #expect(registry.backend(forExtensionOf: URL(fileURLWithPath: "/tmp/new.sqlite"))?.typeIdentifier == "sqlite")
    }

    @Test func otherFilesAreNotCoreDataStores() throws {
        let dir = try TemporaryDirectory("coredata-sniff")
        defer { dir.remove() }
        let backend = CoreDataStoreBackend()
        #expect(backend.sniff(dir.path("missing.sqlite")) == .none)
        #expect(backend.sniff(dir.url) == .none)
        #expect(backend.sniff(try dir.write("", to: "empty.sqlite")) == .none)
        #expect(backend.sniff(try dir.write("not a database at all, just text", to: "text.sqlite")) == .none)
        // The framework's own SQLite store is foreign here, and sqlite's.
        guard let source = Self.stores().first(where: Self.hasModelCache) else { return }
        let schema = try backend.readMetadata(at: source.url).schema
        let own = dir.path("own.sqlite")
        let created = try SQLiteStoreBackend().open(
            at: own, options: StoreOptions(), creating: StoreMetadata(storeType: "sqlite", schema: schema))
        try created.close()
        guard case .foreign = backend.sniff(own) else {
            Issue.record("a framework SQLite store is not foreign to coredata: \(backend.sniff(own))")
            return
        }
        let registry = BackendRegistry(backends: [CoreDataStoreBackend(), SQLiteStoreBackend()])
        #expect(try registry.detectBackend(at: own).typeIdentifier == "sqlite")
    }

    // MARK: Reading

    @Test(arguments: stores())
    func recordCountsEqualInfoRowCounts(_ store: Store) throws {
        let (before, listing) = try Self.fingerprint(store.url)
        let opened = try Self.open(store.url)
        defer { try? opened.close() }
        let schema = opened.metadata.schema
        let counts = Self.tableCounts(store)
        let records = try Self.allRecords(opened)
        for root in schema.rootEntities {
            let table = "Z" + root.name.uppercased()
            let scanned = root.hierarchyNames.reduce(0) { $0 + (records[$1]?.count ?? 0) }
            #expect(scanned == (counts[table] ?? 0), "\(store.name): \(table)")
            let counted = try opened.count(FetchRequest(entity: root.name))
            #expect(counted == (counts[table] ?? 0), "\(store.name): count(\(root.name))")
        }
        // Scans come in increasing key order, of exactly the entity asked for.
        for (name, list) in records {
            #expect(list.map(\.primaryKey) == list.map(\.primaryKey).sorted(), "\(store.name): \(name) order")
            #expect(list.allSatisfy { $0.entity == name })
        }
        // Each to-many pair of a many-to-many is one row of a join table; both sides list it.
        var pairs = 0
        for e in schema.entities {
            for (i, r) in e.relationships.enumerated() where r.isToMany {
                guard let inv = r.inverse, schema.entity(named: r.destination)?.relationship(inv)?.isToMany == true else { continue }
                pairs += (records[e.name] ?? []).reduce(0) { $0 + $1.relationships[i].keys.count }
            }
        }
        let joinRows = counts.filter { $0.key.hasPrefix("Z_") && $0.key.dropFirst(2).first?.isNumber == true }.values.reduce(0, +)
        #expect(pairs == 2 * joinRows, "\(store.name): many-to-many pairs")
        // Reading changed no file, and created or removed none.
        let (after, listingAfter) = try Self.fingerprint(store.url)
        #expect(after == before, "\(store.name): files changed")
        #expect(listingAfter == listing, "\(store.name): files appeared or vanished")
    }

    @Test(arguments: stores())
    func entitiesSplitByComputedEntityNumbers(_ store: Store) throws {
        let file = try CoreDataStoreFile.read(at: store.url)
        // The cache's model, or for a store without one the model inferred from its tables.
        let model = try CoreDataStoreBackend.metadata(of: file, appModel: nil).model
        let numbers = model.entityNumbers()
        let db = try ReadOnlyDatabase.open(store.url)
        let opened = try Self.open(store.url)
        defer { try? opened.close() }
        let records = try Self.allRecords(opened)
        for root in opened.metadata.schema.rootEntities where file.tableNames.contains("Z" + root.name.uppercased()) {
            let rows = try db.rows("SELECT Z_ENT, count(*) FROM Z\(root.name.uppercased()) GROUP BY Z_ENT")
            var byEnt: [Int64: Int64] = [:]
            for r in rows { if let e = r[0].int, let n = r[1].int { byEnt[e] = n } }
            for name in root.hierarchyNames {
                let n = Int64(try #require(numbers[name]))
                #expect(Int64(records[name]?.count ?? 0) == (byEnt[n] ?? 0), "\(store.name): \(name) (Z_ENT \(n))")
            }
        }
    }

    @Test(arguments: stores())
    func relationshipsResolveAndInversesAgree(_ store: Store) throws {
        let opened = try Self.open(store.url)
        defer { try? opened.close() }
        let schema = opened.metadata.schema
        let records = try Self.allRecords(opened)
        var byRoot: [String: [Int64: Record]] = [:]
        for list in records.values {
            for r in list { byRoot[try schema.requireEntity(r.entity).rootName, default: [:]][r.primaryKey] = r }
        }
        for list in records.values {
            for record in list {
                let entity = try schema.requireEntity(record.entity)
                for (i, rel) in entity.relationships.enumerated() {
                    let dest = try schema.requireEntity(rel.destination)
                    for key in record.relationships[i].keys {
                        let target = try #require(byRoot[dest.rootName]?[key], "\(store.name): \(record.key).\(rel.name) → p\(key) is missing")
                        #expect(try schema.requireEntity(target.entity).isKind(of: dest.name))
                        guard let inverse = rel.inverse, let j = try schema.requireEntity(target.entity).relationshipIndex(inverse) else { continue }
                        #expect(target.relationships[j].keys.contains(record.primaryKey),
                                "\(store.name): \(record.key).\(rel.name) and \(target.key).\(inverse) disagree")
                    }
                }
            }
        }
    }

    @Test(arguments: stores())
    func historyTablesBecomeTheStoresHistory(_ store: Store) throws {
        let opened = try Self.open(store.url)
        defer { try? opened.close() }
        let history = try opened.history(after: nil)
        let counts = Self.tableCounts(store)
        #expect(history.count == counts["ATRANSACTION"] ?? 0, "\(store.name): transactions")
        #expect(history.reduce(0) { $0 + $1.changes.count } == counts["ACHANGE"] ?? 0, "\(store.name): changes")
        #expect(history.map(\.token) == history.map(\.token).sorted())
        #expect(try opened.history(after: history.first?.token).count == max(0, history.count - 1))
        // Every change names an entity of the schema and carries the global ID its record has (or had).
        let schema = opened.metadata.schema
        for change in history.flatMap(\.changes) {
            let entity = try schema.requireEntity(change.entity)
            if let record = try opened.records(withKeys: [change.primaryKey], root: entity.rootName).first {
                #expect(record.globalID == change.globalID, "\(store.name): \(change.entity)/p\(change.primaryKey)")
            }
        }
    }

    @Test(arguments: stores())
    func globalIDsAreStableAndUnique(_ store: Store) throws {
        func ids() throws -> [RecordKey: UUID] {
            let opened = try Self.open(store.url)
            defer { try? opened.close() }
            var out: [RecordKey: UUID] = [:]
            for list in try Self.allRecords(opened).values { for r in list { out[r.key] = r.globalID } }
            return out
        }
        let first = try ids()
        #expect(try ids() == first)
        #expect(Set(first.values).count == first.count)
    }

    @Test(arguments: stores())
    func metadataIsCoreDataStores(_ store: Store) throws {
        let metadata = try CoreDataStoreBackend().readMetadata(at: store.url)
        let meta = try #require(CoreDataCorpusTests.json(store, "Z_METADATA") as? [String: Any])
        #expect(metadata.storeType == "coredata")
        #expect(metadata.storeUUID.uuidString == meta["Z_UUID"] as? String)
        let plist = try #require(meta["plist"] as? [String: Any])
        let known: Set<String> = ["NSStoreType", "NSPersistenceFrameworkVersion", "NSStoreModelVersionHashesVersion",
                                  "NSStoreModelVersionIdentifiers", "NSStoreModelVersionHashesDigest",
                                  "NSStoreModelVersionChecksumKey", "_NSAutoVacuumLevel", "NSStoreModelVersionHashes"]
        #expect(Set(metadata.custom.keys) == Set(plist.keys).subtracting(known))
        #expect(Set(metadata.schema.entities.map(\.name)).isSuperset(of: try #require(
            plist["NSStoreModelVersionHashes"] as? [String: Any]).keys))
    }

    @Test(arguments: stores().filter(hasModelCache).prefix(1))
    func readOnlyOpenRefusesWrites(_ store: Store) throws {
        let opened = try Self.open(store.url)
        defer { try? opened.close() }
        #expect { try opened.save(StoreChanges()) } throws: { error in
            guard case StoreError.readOnly = error else { return false }
            return true
        }
        #expect(throws: StoreError.self) { try opened.allocatePrimaryKeys(root: opened.metadata.schema.rootEntities[0].name, count: 1) }
    }

    // MARK: Files

    @Test(arguments: stores().filter { $0.name.hasPrefix("Bookmarks_V4") })
    func destroyRemovesExactlyTheOwnedFiles(_ store: Store) throws {
        let dir = try TemporaryDirectory("coredata-destroy")
        defer { dir.remove() }
        let copy = dir.path(store.name)
        for suffix in ["", "-wal", "-shm"] where FileManager.default.fileExists(atPath: store.url.path + suffix) {
            try FileManager.default.copyItem(atPath: store.url.path + suffix, toPath: copy.path + suffix)
        }
        let support = try dir.directory(".Bookmarks_V4_SUPPORT")
        _ = try dir.write("x", to: ".Bookmarks_V4_SUPPORT/blob")
        let assets = try dir.directory("ckAssetFiles")  // no ANSCK tables: not the store's
        _ = try dir.write("keep", to: "Bookmarks_V4.sqlite.txt")
        let backend = CoreDataStoreBackend()
        let owned = backend.ownedFiles(ofStoreAt: copy).map(\.lastPathComponent)
        #expect(owned.first == store.name)
        #expect(Set(owned) == [store.name, store.name + "-wal", store.name + "-shm", support.lastPathComponent])
        let before = try Self.open(copy)
        let count = try before.count(FetchRequest(entity: "BookmarkEntity"))
        try before.close()
        #expect(count == Self.tableCounts(store)["ZBOOKMARKENTITY"])
        try backend.destroyStore(at: copy)
        #expect(Set(dir.listing()) == [assets.lastPathComponent, "Bookmarks_V4.sqlite.txt"])
        #expect(throws: StoreError.self) { try backend.destroyStore(at: copy) }
    }

    // MARK: storectl

    @Test(arguments: stores())
    func storectlExportsAndReportsInfo(_ store: Store) throws {
        let dir = try TemporaryDirectory("coredata-storectl")
        defer { dir.remove() }
        let total = Self.tableCounts(store).filter { $0.key.hasPrefix("Z") && !$0.key.hasPrefix("Z_") }.values.reduce(0, +)
        let export = try Child.storectl(["export", store.url.path, "--output", dir.path("out.ndjson").path])
        #expect(export.status == 0, "\(store.name) export: \(export.stderr)")
        let text = (try? String(contentsOf: dir.path("out.ndjson"), encoding: .utf8)) ?? ""
        let lines = text.split(separator: "\n").filter { $0.contains("\"entity\"") && $0.contains("\"id\"") }
        #expect(lines.count == total, "\(store.name): exported records")
        let info = try Child.storectl(["info", "--json", store.url.path])
        #expect(info.status == 0 && info.stdout.contains("coredata"), "\(store.name) info: \(info.stderr)")
    }
}
