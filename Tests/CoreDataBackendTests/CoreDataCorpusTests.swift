@_spi(BackendKit) @testable import CoreDataBackend
import Foundation
@_spi(BackendKit) import StoreAPI
import StoreTestSupport
import Testing

/// Every Core Data store in the shared corpus: its metadata, primary-key table and compiled model read as the
/// `.info.json` beside it says (expectations come from those files and `VERSION_HASHES.json`, never from this code),
/// and reading changes none of its files.
@Suite struct CoreDataCorpusTests {
    struct Store: CustomTestStringConvertible, Sendable {
        let url: URL
        let info: [String: any Sendable]
        var name: String { url.lastPathComponent }
        var testDescription: String { name }
    }

    static let root = PackagePaths.corpus("stores")

    /// Every `*.sqlite` with an `.info.json` beside it.
    static func stores() -> [Store] {
        guard let root, let walker = FileManager.default.enumerator(at: root, includingPropertiesForKeys: nil) else {
            return []
        }
        return walker.compactMap { $0 as? URL }.filter { $0.pathExtension == "sqlite" }
            .sorted { $0.path < $1.path }
            .compactMap { url in
                guard let data = FileManager.default.contents(atPath: url.path + ".info.json"),
                      let info = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any]
                else { return nil }
                return Store(url: url, info: info.mapValues { SendableBox($0) })
            }
    }

    /// JSON values carried across the test's argument boundary.
    struct SendableBox: @unchecked Sendable { let value: Any; init(_ v: Any) { value = v } }

    static func json(_ store: Store, _ key: String) -> Any? { (store.info[key] as? SendableBox)?.value }

    static func sha256(_ path: String) -> String? {
        FileManager.default.contents(atPath: path).map { StoreDigest.sha256Hex([UInt8]($0)) }
    }

    @Test func corpusIsPresent() {
        if Self.stores().isEmpty {
            withKnownIssue("the shared corpus (../shared/corpus/stores) is absent; Core Data corpus tests skipped") {
                Issue.record("corpus absent")
            }
        } else {
            #expect(Self.stores().count >= 20)
        }
    }

    // MARK: Z_METADATA

    @Test(arguments: stores())
    func metadataMatchesInfoAndVersionHashes(_ store: Store) throws {
        let file = try CoreDataStoreFile.read(at: store.url)
        let meta = try #require(Self.json(store, "Z_METADATA") as? [String: Any])
        #expect(file.uuid == meta["Z_UUID"] as? String)
        let plist = try #require(meta["plist"] as? [String: Any])
        #expect(file.metadata.storeType == plist["NSStoreType"] as? String)
        #expect(file.metadata.frameworkVersion.map { Int($0) } == plist["NSPersistenceFrameworkVersion"] as? Int)
        #expect(file.metadata.versionHashesVersion.map { Int($0) } == plist["NSStoreModelVersionHashesVersion"] as? Int)
        #expect(file.metadata.versionIdentifiers == plist["NSStoreModelVersionIdentifiers"] as? [String])
        #expect(file.metadata.versionHashesDigest == plist["NSStoreModelVersionHashesDigest"] as? String)
        #expect(file.metadata.versionChecksum == plist["NSStoreModelVersionChecksumKey"] as? String)
        #expect(file.metadata.autoVacuumLevel == plist["_NSAutoVacuumLevel"] as? String)
        let hashes = try #require(plist["NSStoreModelVersionHashes"] as? [String: [String: String]])
        #expect(file.metadata.base64VersionHashes == hashes.compactMapValues { $0["base64"] })
        let known: Set<String> = ["NSStoreType", "NSPersistenceFrameworkVersion", "NSStoreModelVersionHashesVersion",
                                  "NSStoreModelVersionIdentifiers", "NSStoreModelVersionHashesDigest",
                                  "NSStoreModelVersionChecksumKey", "_NSAutoVacuumLevel", "NSStoreModelVersionHashes"]
        #expect(Set(file.metadata.custom.keys) == Set(plist.keys).subtracting(known))

        // VERSION_HASHES.json: the ground truth of every store's hashes.
        let truthURL = try #require(PackagePaths.corpus("VERSION_HASHES.json"))
        let truth = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: truthURL)) as? [String: Any])
        let relative = "stores/" + store.url.path.dropFirst((Self.root?.path.count ?? 0) + 1)
        let entry = try #require((truth["stores"] as? [String: Any])?[relative] as? [String: Any], "\(relative)")
        #expect(file.metadata.base64VersionHashes == entry["entityHashes"] as? [String: String])

        // The plist written back reads as the same metadata.
        let again = try CoreDataMetadata(bytes: BinaryPropertyListWriter.write(file.metadata.propertyList))
        #expect(again == file.metadata)
    }

    // MARK: Z_PRIMARYKEY

    @Test(arguments: stores())
    func primaryKeysMatchInfo(_ store: Store) throws {
        let file = try CoreDataStoreFile.read(at: store.url)
        let rows = try #require(Self.json(store, "Z_PRIMARYKEY") as? [[String: Any]])
        let expected = rows.map {
            CoreDataPrimaryKeyRow(entityNumber: Int64($0["Z_ENT"] as? Int ?? -1), name: $0["Z_NAME"] as? String ?? "",
                                  superNumber: Int64($0["Z_SUPER"] as? Int ?? -1), maxPrimaryKey: Int64($0["Z_MAX"] as? Int ?? -1))
        }
        #expect(file.primaryKeys == expected.sorted { $0.entityNumber < $1.entityNumber })
    }

    // MARK: Z_MODELCACHE

    @Test(arguments: stores())
    func modelCacheDecodesAndMatchesTheTables(_ store: Store) throws {
        let file = try CoreDataStoreFile.read(at: store.url)
        let hasCache = Self.json(store, "Z_MODELCACHE") != nil
        #expect((file.modelCacheBlob != nil) == hasCache)
        guard let model = try file.model() else {
            // Stores before 2012 have no cache: the backend falls back to Z_PRIMARYKEY and the tables.
            #expect(!hasCache, "\(store.name): a Z_MODELCACHE that decoded to nothing")
            return
        }
        let schema = try #require(try file.schema())

        // Core Data's version hashes computed from the decoded schema are the ones the store records: every flag,
        // count, modifier and derivation the hash covers was read right.
        #expect(schema.coreDataVersionHashes.base64EntityHashes == file.metadata.base64VersionHashes,
                "\(store.name): hashes of the decoded model")

        // The model's entities are the ones whose hashes the store records.
        #expect(Set(model.entities.map(\.name)) == Set(file.metadata.versionHashes.keys))
        #expect(Set(schema.entities.map(\.name)) == Set(file.metadata.versionHashes.keys))

        // Z_PRIMARYKEY, by the Z_ENT numbers computed from the model: same names (or the name before a rename)
        // and the same hierarchy.
        let numbers = model.entityNumbers()
        let byNumber = Dictionary(uniqueKeysWithValues: numbers.map { ($0.value, $0.key) })
        let entityRows = file.primaryKeys.filter { $0.entityNumber < 16_000 }
        #expect(entityRows.count == model.entities.count)
        for row in entityRows {
            let name = try #require(byNumber[Int(row.entityNumber)], "Z_ENT \(row.entityNumber) is not in the model")
            let entity = try #require(model.entity(named: name))
            #expect(row.name == name || row.name == entity.renamingIdentifier, "Z_ENT \(row.entityNumber)")
            #expect(Int64(entity.parent.flatMap { numbers[$0] } ?? 0) == row.superNumber, "\(name)'s parent")
        }

        // Each root entity's table has a column for every stored attribute and to-one relationship of its
        // hierarchy, of the type Core Data gives that attribute type, and no other property column.
        let tables = Self.createTables(store)
        for root in schema.rootEntities {
            let table = "Z" + root.name.uppercased()
            let columns = try #require(tables[table], "\(store.name): no table \(table) for \(root.name)")
            var expected: [String: AttributeType?] = [:]
            for member in root.hierarchyNames.compactMap(schema.entity(named:)) {
                for a in member.attributes where !a.isTransient { expected["Z" + a.name.uppercased()] = a.type }
                for a in member.definition.derivedAttributes where !a.isTransient {
                    expected["Z" + a.name.uppercased()] = a.type
                }
                for r in member.relationships where !r.isTransient && !r.isToMany {
                    expected["Z" + r.name.uppercased()] = .some(nil)
                }
            }
            var found: Set<String> = []
            for (column, sqlType) in columns {
                if ["Z_PK", "Z_ENT", "Z_OPT"].contains(column) || column.hasPrefix("Z_FOK_")
                    || column.range(of: #"^Z[0-9]+"#, options: .regularExpression) != nil
                { continue }
                // A name clash within a hierarchy gets a counter (ZTITLE1).
                let base = expected[column] != nil
                    ? column : column.replacingOccurrences(of: #"[0-9]+$"#, with: "", options: .regularExpression)
                guard let type = expected[base] else {
                    Issue.record("\(store.name): column \(table).\(column) matches no stored property")
                    continue
                }
                found.insert(base)
                if base == column, let type {
                    #expect(sqlType == Self.columnType[type], "\(table).\(column) is \(sqlType), the model says \(type)")
                } else if base == column {
                    #expect(sqlType == "INTEGER", "\(table).\(column) is a to-one foreign key")
                }
            }
            #expect(found == Set(expected.keys), "\(store.name): \(table) lacks \(Set(expected.keys).subtracting(found))")
        }
    }

    /// Relationship order, many-to-many join tables and uniqueness constraints leave traces in the schema SQL: an
    /// ordered one-to-many a `Z_FOK_<INVERSE>` column on the to-one side, a many-to-many a join table with a column
    /// per side (and `Z_FOK_` when ordered), a constraint a `Z_<Entity>_UNIQUE_<a>_<b>` index.
    @Test(arguments: stores().filter { json($0, "Z_MODELCACHE") != nil })
    func orderManyToManyAndConstraintsMatchTheSQL(_ store: Store) throws {
        let schema = try #require(try CoreDataStoreFile.read(at: store.url).schema())
        let tables = Self.createTables(store)
        let allColumns = Set(tables.values.flatMap { $0.map(\.0) })
        let sql = Self.json(store, "schema") as? [String] ?? []
        for entity in schema.entities {
            for r in entity.definition.relationships where r.isToMany && !r.isTransient {
                let inverse = schema.inverse(of: r)
                if let inverse, inverse.isToMany {
                    // Many-to-many: one join table holds both sides; only one side names it.
                    let mine = "\(r.name.uppercased())", theirs = "\(inverse.name.uppercased())"
                    let join = tables.filter { name, cols in
                        name.hasPrefix("Z_") && cols.contains { $0.0.hasSuffix(mine) } && cols.contains { $0.0.hasSuffix(theirs) }
                    }
                    #expect(!join.isEmpty, "\(store.name): no join table for \(entity.name).\(r.name)")
                    if r.isOrdered || inverse.isOrdered {
                        #expect(join.values.contains { $0.contains { $0.0.hasPrefix("Z_FOK_") } },
                                "\(store.name): \(entity.name).\(r.name) is ordered but its join table has no Z_FOK_")
                    }
                } else if r.isOrdered, let inverse {
                    #expect(allColumns.contains("Z_FOK_" + inverse.name.uppercased()),
                            "\(store.name): ordered \(entity.name).\(r.name) without Z_FOK_\(inverse.name.uppercased())")
                } else if let inverse {
                    #expect(!allColumns.contains("Z_FOK_" + inverse.name.uppercased()) || schema.entities.contains {
                        $0.definition.relationships.contains { $0.isOrdered && $0.inverse == inverse.name }
                    }, "\(store.name): \(entity.name).\(r.name) is unordered but has a Z_FOK_ column")
                }
            }
            let prefix = "CREATE UNIQUE INDEX Z_\(entity.name)_UNIQUE_"
            let fromSQL = Set(sql.filter { $0.hasPrefix(prefix) }.map { line in
                String(line.dropFirst(prefix.count).prefix { $0 != " " })
            })
            let fromModel = Set(entity.definition.uniquenessConstraints.map { $0.joined(separator: "_") })
            #expect(fromModel == fromSQL, "\(store.name): \(entity.name)'s uniqueness constraints")
        }
    }

    static let columnType: [AttributeType: String] = [
        .integer16: "INTEGER", .integer32: "INTEGER", .integer64: "INTEGER", .boolean: "INTEGER", .decimal: "DECIMAL",
        .double: "FLOAT", .float: "FLOAT", .string: "VARCHAR", .uri: "VARCHAR", .date: "TIMESTAMP", .binary: "BLOB",
        .uuid: "BLOB", .transformable: "BLOB",
    ]

    /// Table → [(column, declared type)] from the `.info.json`'s schema SQL.
    static func createTables(_ store: Store) -> [String: [(String, String)]] {
        var out: [String: [(String, String)]] = [:]
        for sql in json(store, "schema") as? [String] ?? [] where sql.hasPrefix("CREATE TABLE ") {
            guard let open = sql.firstIndex(of: "("), let close = sql.lastIndex(of: ")") else { continue }
            let name = sql.dropFirst("CREATE TABLE ".count)[..<open].trimmingCharacters(in: .whitespaces)
            let body = sql[sql.index(after: open)..<close]
            out[name] = body.split(separator: ",").compactMap { part in
                let words = part.split(separator: " ")
                guard words.count >= 2, words[0] != "PRIMARY" else { return nil }
                return (String(words[0]), String(words[1]))
            }
        }
        return out
    }

    @Test func eighteenOrMoreCachesDecode() throws {
        let stores = Self.stores()
        guard !stores.isEmpty else { return }
        var decoded = 0, without: [String] = []
        for store in stores {
            if try CoreDataStoreFile.read(at: store.url).model() != nil { decoded += 1 } else { without.append(store.name) }
        }
        let withCache = stores.filter { Self.json($0, "Z_MODELCACHE") != nil }.count
        #expect(decoded == withCache)
        #expect(decoded >= 18)
        // Reported, not failed: the stores that predate the cache.
        print("Core Data corpus: \(decoded) model caches decoded; no cache in \(without.joined(separator: ", "))")
    }

    // MARK: Reading changes nothing

    @Test(arguments: stores())
    func readingChangesNoFile(_ store: Store) throws {
        let wal = store.url.path + "-wal"
        let walBefore = Self.sha256(wal)
        #expect(Self.sha256(store.url.path) == Self.json(store, "sha256") as? String)
        let file = try CoreDataStoreFile.read(at: store.url)
        _ = try file.schema()
        #expect(Self.sha256(store.url.path) == Self.json(store, "sha256") as? String)
        #expect(Self.sha256(wal) == walBefore)
    }

    /// The WAL-only stores in a writable directory, with and without their `-shm`: nothing changes (not even the
    /// `-shm`'s date), no file appears,
    /// and every table reads whole (the main file alone has 0 rows).
    @Test(arguments: stores().filter { FileManager.default.fileExists(atPath: $0.url.path + "-wal") })
    func walStoresReadWholeWithoutChangingFiles(_ store: Store) throws {
        for keepShm in [true, false] {
            let dir = try TemporaryDirectory("coredata-wal")
            let copy = dir.path(store.name)
            let fm = FileManager.default
            try fm.copyItem(at: store.url, to: copy)
            try fm.copyItem(atPath: store.url.path + "-wal", toPath: copy.path + "-wal")
            if keepShm { try fm.copyItem(atPath: store.url.path + "-shm", toPath: copy.path + "-shm") }
            for path in [copy.path, copy.path + "-wal", copy.path + "-shm"] where fm.fileExists(atPath: path) {
                try fm.setAttributes([.posixPermissions: 0o644], ofItemAtPath: path)
            }
            let before = dir.listing()
            // The -shm too: a reader that wrote its read marks there would change its bytes or at least its date.
            let files = [copy.path, copy.path + "-wal"] + (keepShm ? [copy.path + "-shm"] : [])
            let hashes = files.map(Self.sha256)
            let dates = try files.map { try fm.attributesOfItem(atPath: $0)[.modificationDate] as? Date }

            let file = try CoreDataStoreFile.read(at: copy)
            #expect(file.uuid == (Self.json(store, "Z_METADATA") as? [String: Any])?["Z_UUID"] as? String)
            let db = try ReadOnlyDatabase.open(copy)
            for (table, count) in Self.json(store, "tables") as? [String: Int] ?? [:] {
                let rows = try db.rows("SELECT count(*) FROM \"\(table)\"")
                #expect(rows.first?.first?.int == Int64(count), "\(table) with\(keepShm ? "" : "out") -shm")
            }
            withExtendedLifetime(db) {}

            #expect(files.map(Self.sha256) == hashes, "with\(keepShm ? "" : "out") -shm")
            #expect(try files.map { try fm.attributesOfItem(atPath: $0)[.modificationDate] as? Date } == dates,
                    "a file's modification date changed, with\(keepShm ? "" : "out") -shm")
            #expect(dir.listing() == before, "files appeared or vanished, with\(keepShm ? "" : "out") -shm")
        }
    }

    /// Stores without sidecars, WAL-mode ones among them, copied alone into a writable directory: reading them
    /// (sniffing, metadata, the whole store through the backend) creates no `-wal` or `-shm` beside them and changes
    /// no byte. A plain read-only SQLite open of a WAL-mode file would create both.
    @Test(arguments: stores().filter { store in
        ["-wal", "-shm", "-journal"].allSatisfy { !FileManager.default.fileExists(atPath: store.url.path + $0) }
    })
    func storesWithoutSidecarsGainNone(_ store: Store) throws {
        let dir = try TemporaryDirectory("coredata-nosidecar")
        let copy = dir.path(store.name)
        try FileManager.default.copyItem(at: store.url, to: copy)
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: copy.path)
        let before = dir.listing()
        let hash = Self.sha256(copy.path)

        let backend = CoreDataStoreBackend()
        #expect(backend.sniff(copy) == .store)
        let file = try CoreDataStoreFile.read(at: copy)
        if file.modelCacheBlob != nil {
            let metadata = try backend.readMetadata(at: copy)
            let opened = try backend.open(at: copy, options: StoreOptions(isReadOnly: true, createIfMissing: false), creating: nil)
            for entity in metadata.schema.entities where !entity.isAbstract {
                _ = try opened.count(FetchRequest(entity: entity.name))
            }
            try opened.close()
        }

        #expect(Self.sha256(copy.path) == hash)
        #expect(dir.listing() == before, "files appeared beside \(store.name)")
    }

    @Test func aSQLiteFileWithoutCoreDataTablesIsNotAStore() throws {
        let dir = try TemporaryDirectory("coredata-not")
        let url = dir.path("plain.sqlite")
        // An empty file is a valid, empty SQLite database.
        _ = FileManager.default.createFile(atPath: url.path, contents: Data())
        #expect(throws: StoreError.self) { try CoreDataStoreFile.read(at: url) }
        #expect(throws: StoreError.self) { try CoreDataStoreFile.read(at: dir.path("missing.sqlite")) }
    }
}
