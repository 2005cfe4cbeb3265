import Foundation
import StoreTestSupport
import Testing
@_spi(BackendKit) @testable import StoreAPI

/// Core Data's version hashes, computed from Xcode models loaded by the framework's own loader and compared with
/// the hashes real Core Data wrote: `../shared/corpus/VERSION_HASHES.json` (read from the stores' metadata and the
/// compiled models' `VersionInfo.plist`), and the checksums in those `VersionInfo.plist` files.
struct CoreDataVersionHashTests {
    static let groundTruthFile = PackagePaths.corpus("VERSION_HASHES.json")
    static let models = PackagePaths.corpus("models")
    static var corpusIsPresent: Bool { groundTruthFile != nil && models != nil }
    static let absent: Comment = "corpus not found at ../shared/corpus (relative to the package root); skipped"

    /// The model version each corpus store was written with, as a path under models/ (see
    /// ``CoreDataCorpusModels``).
    static let storeModels = CoreDataCorpusModels.storeModels

    /// Stores whose model is not in the corpus, and why; their hashes cannot be reproduced from an Xcode model.
    static let storesWithoutModel = CoreDataCorpusModels.storesWithoutModel

    struct Tally {
        var compared = 0
        var reproduced = 0
    }

    /// Compares every entity of `truth` with `computed`, recording mismatches with `label`.
    static func compare(_ label: String, truth: [String: String], computed: CoreDataVersionHashes, into tally: inout Tally) {
        #expect(Set(computed.entityHashes.keys) == Set(truth.keys), "\(label): the model's entities differ from the hashed ones")
        for (entity, expected) in truth.sorted(by: { $0.key < $1.key }) {
            tally.compared += 1
            let got = computed.base64EntityHashes[entity]
            if got == expected { tally.reproduced += 1 }
            #expect(got == expected, "\(label): entity \(entity)")
        }
    }

    static func groundTruth() throws -> [String: Any] {
        let file = try #require(groundTruthFile)
        return try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: file)) as? [String: Any])
    }

    static func load(_ modelPath: String) throws -> Schema {
        try Schema(xcodeModelAt: try #require(models).appendingPathComponent(modelPath))
    }

    @Test("compiled .momd models: every version's entity hashes and VersionInfo.plist checksums", .enabled(if: CoreDataVersionHashTests.corpusIsPresent, CoreDataVersionHashTests.absent))
    func compiledModels() throws {
        let compiled = try #require(try Self.groundTruth()["compiled_models"] as? [String: Any])
        var tally = Tally()
        var checksums = Tally()
        for (plistPath, entry) in compiled.sorted(by: { $0.key < $1.key }) {
            // models/X.momd/VersionInfo.plist was compiled from models/X.xcdatamodeld, one .mom per version.
            let momd = URL(fileURLWithPath: plistPath).deletingLastPathComponent()
            let bundle = momd.deletingPathExtension().lastPathComponent + ".xcdatamodeld"
            let versions = try #require((entry as? [String: Any])?["versions"] as? [String: [String: String]])
            let plist = try PropertyListSerialization.propertyList(
                from: Data(contentsOf: try #require(PackagePaths.corpus(plistPath))), options: [], format: nil) as? [String: Any]
            let plistChecksums = plist?["NSManagedObjectModel_VersionChecksums"] as? [String: String] ?? [:]
            for (version, truth) in versions.sorted(by: { $0.key < $1.key }) {
                let computed = try Self.load("\(bundle)/\(version).xcdatamodel").coreDataVersionHashes
                Self.compare("\(bundle)/\(version)", truth: truth, computed: computed, into: &tally)
                if let expected = plistChecksums[version] {
                    checksums.compared += 1
                    if computed.checksum == expected { checksums.reproduced += 1 }
                    #expect(computed.checksum == expected, "\(bundle)/\(version): checksum")
                }
            }
        }
        print("Core Data version hashes, compiled models: \(tally.reproduced) of \(tally.compared) entity hashes, \(checksums.reproduced) of \(checksums.compared) VersionInfo.plist checksums reproduced")
        #expect(tally.compared > 0)
        #expect(tally.reproduced == tally.compared)
        #expect(checksums.reproduced == checksums.compared)
    }

    @Test("stores: entity hashes, digest and checksum from the model each was written with", .enabled(if: CoreDataVersionHashTests.corpusIsPresent, CoreDataVersionHashTests.absent))
    func stores() throws {
        let stores = try #require(try Self.groundTruth()["stores"] as? [String: [String: Any]])
        var hashes = Tally()
        var digests = Tally()
        var checksums = Tally()
        var withoutModel = 0
        for (store, entry) in stores.sorted(by: { $0.key < $1.key }) {
            let truth = try #require(entry["entityHashes"] as? [String: String], "\(store): no entityHashes")
            guard let model = Self.storeModels[store] else {
                #expect(Self.storesWithoutModel[store] != nil, "\(store) is neither mapped to a model nor listed as having none")
                withoutModel += truth.count
                continue
            }
            let computed = try Self.load(model).coreDataVersionHashes
            Self.compare("\(store) (\(model))", truth: truth, computed: computed, into: &hashes)
            if let expected = entry["NSStoreModelVersionHashesDigest"] as? String {
                digests.compared += 1
                if computed.digest == expected { digests.reproduced += 1 }
                #expect(computed.digest == expected, "\(store): NSStoreModelVersionHashesDigest")
            }
            if let expected = entry["NSStoreModelVersionChecksumKey"] as? String {
                checksums.compared += 1
                if computed.checksum == expected { checksums.reproduced += 1 }
                #expect(computed.checksum == expected, "\(store): NSStoreModelVersionChecksumKey")
            }
        }
        // Every mapping and every exclusion names a store the ground truth has.
        for store in Array(Self.storeModels.keys) + Array(Self.storesWithoutModel.keys) {
            #expect(stores[store] != nil, "\(store) is not in VERSION_HASHES.json")
        }
        print("Core Data version hashes, stores: \(hashes.reproduced) of \(hashes.compared) entity hashes, \(digests.reproduced) of \(digests.compared) digests, \(checksums.reproduced) of \(checksums.compared) checksums reproduced; \(withoutModel) entity hashes belong to stores whose model is not in the corpus")
        #expect(hashes.compared > 0)
        #expect(hashes.reproduced == hashes.compared)
        #expect(digests.reproduced == digests.compared)
        #expect(checksums.reproduced == checksums.compared)
    }

    /// A store's model versions share entities; the hash must tell apart versions that differ and agree on versions
    /// that do not (RestKit's VersionedModel 4 repeats version 2's schema).
    @Test("identical schemas hash alike, changed ones do not", .enabled(if: CoreDataVersionHashTests.corpusIsPresent, CoreDataVersionHashTests.absent))
    func identicalVersionsHashAlike() throws {
        let bundle = "RestKit__RestKit__VersionedModel.xcdatamodeld"
        let v2 = try Self.load("\(bundle)/VersionedModel 2.xcdatamodel").coreDataVersionHashes
        let v3 = try Self.load("\(bundle)/VersionedModel 3.xcdatamodel").coreDataVersionHashes
        let v4 = try Self.load("\(bundle)/VersionedModel 4.xcdatamodel").coreDataVersionHashes
        #expect(v2 == v4)
        #expect(v2.digest != v3.digest)
    }

    @Test("Xcode models: renaming identifiers, external storage, preserve-after-deletion and derived attributes load", .enabled(if: CoreDataVersionHashTests.corpusIsPresent, CoreDataVersionHashTests.absent))
    func xcodeModelFieldsLoad() throws {
        let share = try Self.load("delawaremathguy__CoreDataCloudKitShare__CoreDataCloudKitShare.xcdatamodel")
        let derived = share.definitions.flatMap(\.derivedAttributes)
        #expect(derived.map(\.derivation?.expression) == ["photos.@count"])
        #expect(share.entities.allSatisfy { e in !e.attributes.contains { $0.derivation != nil } }, "derived attributes are never stored")
        #expect(share.definitions.flatMap(\.attributes).filter(\.allowsExternalBinaryDataStorage).map(\.name) == ["data"])

        let sample = try Self.load("alemar11__CoreDataPlus__SampleModel.xcdatamodeld/SampleModel2.xcdatamodel")
        #expect(sample.entity(named: "LuxuryCar")?.definition.renamingIdentifier == "ExpensiveSportCar")
        let sampleV1 = try Self.load("alemar11__CoreDataPlus__SampleModel.xcdatamodeld/SampleModel.xcdatamodel")
        #expect(sampleV1.definitions.flatMap(\.attributes).filter(\.preservesValueInHistoryOnDeletion).map(\.name) == ["id"])

        // Every elementID in every corpus model becomes a renaming identifier.
        let root = try #require(Self.models)
        for relative in SchemaCorpus.modelVersions {
            let text = try String(contentsOf: root.appendingPathComponent(relative).appendingPathComponent("contents"), encoding: .utf8)
            let written = text.components(separatedBy: " elementID=\"").count - 1
            let schema = try Self.load(relative)
            let loaded = schema.definitions.reduce(0) { n, e in
                n + (e.renamingIdentifier == nil ? 0 : 1)
                    + (e.attributes + e.derivedAttributes).filter { $0.renamingIdentifier != nil }.count
                    + e.relationships.filter { $0.renamingIdentifier != nil }.count
            }
            #expect(loaded == written, "\(relative)")
        }
    }

    @Test func derivationExpressionsPrintAsCoreDataDoes() {
        #expect(CoreDataVersionHash.expressionFormat("pages.@count") == "count:(pages)")
        #expect(CoreDataVersionHash.expressionFormat("author.books.@count") == "count:(author.books)")
        #expect(CoreDataVersionHash.expressionFormat("title") == "title")
    }

    @Test func typeCodes() {
        #expect(CoreDataVersionHash.typeCode(.transformable) == 1800)
        #expect(AttributeType.allCases.map(CoreDataVersionHash.typeCode).count == Set(AttributeType.allCases.map(CoreDataVersionHash.typeCode)).count)
    }

    /// The framework's version hash is Core Data's, so it moves when a field Core Data hashes is set (modifiers,
    /// external storage, preserve-after-deletion, derived attributes) and stays when one it does not hash is
    /// (renaming identifiers); the legacy hash, which covers none of them, stays.
    @Test func coreDataFieldsMoveTheFrameworkHash() throws {
        func schema(_ decorated: Bool) throws -> Schema {
            try Schema(entities: [
                EntityDescription(
                    name: "Book",
                    attributes: [AttributeDescription(
                        name: "cover", type: .binary, versionHashModifier: decorated ? "v2" : nil,
                        allowsExternalBinaryDataStorage: decorated, preservesValueInHistoryOnDeletion: decorated,
                        renamingIdentifier: decorated ? "image" : nil)],
                    relationships: [RelationshipDescription(
                        name: "pages", destination: "Page", inverse: "book", isToMany: true,
                        versionHashModifier: decorated ? "m" : nil, renamingIdentifier: decorated ? "leaves" : nil,
                        declaredMaxCount: decorated ? -1 : nil)],
                    derivedAttributes: decorated
                        ? [AttributeDescription(name: "pageCount", type: .integer64, derivation: AttributeDerivation(expression: "pages.@count"))]
                        : [],
                    renamingIdentifier: decorated ? "Volume" : nil),
                EntityDescription(name: "Page", relationships: [RelationshipDescription(name: "book", destination: "Book", inverse: "pages")]),
            ])
        }
        let plain = try schema(false)
        let decorated = try schema(true)
        #expect(plain.versionHashes["Book"] != decorated.versionHashes["Book"])
        #expect(plain.versionHashes == plain.coreDataVersionHashes.base64EntityHashes)
        #expect(decorated.versionHashes == decorated.coreDataVersionHashes.base64EntityHashes)
        #expect(plain.legacyVersionHashes == decorated.legacyVersionHashes)
        #expect(decorated.entity(named: "Book")?.attributes.map(\.name) == ["cover"])
        #expect(plain.coreDataVersionHashes.entityHashes["Book"] != decorated.coreDataVersionHashes.entityHashes["Book"])
        #expect(plain.coreDataVersionHashes.entityHashes["Page"] == decorated.coreDataVersionHashes.entityHashes["Page"])
        #expect(decorated.coreDataVersionHash(ofEntity: "Book") == decorated.coreDataVersionHashes.entityHashes["Book"])
        #expect(decorated.coreDataVersionHash(ofEntity: "Nope") == nil)
    }

    /// The JSON form carries every new field, through both readers, and documents without them still read.
    @Test func jsonFormCarriesTheCoreDataFields() throws {
        let schema = try Schema(entities: [
            EntityDescription(
                name: "Book",
                attributes: [
                    AttributeDescription(
                        name: "cover", type: .binary, versionHashModifier: "v2", isReadOnly: true,
                        allowsExternalBinaryDataStorage: true, preservesValueInHistoryOnDeletion: true,
                        renamingIdentifier: "image"),
                    AttributeDescription(name: "blob", type: .transformable, valueTransformerName: "NSSecureUnarchiveFromData"),
                ],
                relationships: [RelationshipDescription(
                    name: "pages", destination: "Page", inverse: "book", isToMany: true, versionHashModifier: "m",
                    isReadOnly: true, renamingIdentifier: "leaves", declaredMinCount: 0, declaredMaxCount: -1)],
                derivedAttributes: [AttributeDescription(
                    name: "pageCount", type: .integer64,
                    derivation: AttributeDerivation(expression: "pages.@count", filteringPredicate: "number > 0"))],
                renamingIdentifier: "Volume"),
            EntityDescription(name: "Page", relationships: [RelationshipDescription(
                name: "book", destination: "Book", inverse: "pages", declaredMinCount: 1, declaredMaxCount: 1)]),
        ])
        let data = try schema.jsonData()
        #expect(try Schema(jsonData: data) == schema)
        #expect(try JSONDecoder().decode(Schema.self, from: data) == schema)
        #expect(try Schema(jsonData: data).coreDataVersionHashes == schema.coreDataVersionHashes)

        let old = Data(#"{"entities":[{"name":"Book","attributes":[{"name":"title","type":"string"}]}]}"#.utf8)
        for decoded in [try Schema(jsonData: old), try JSONDecoder().decode(Schema.self, from: old)] {
            let book = try #require(decoded.entity(named: "Book")?.definition)
            #expect(book.derivedAttributes.isEmpty && book.renamingIdentifier == nil)
            let title = try #require(book.attributes.first)
            #expect(!title.isReadOnly && !title.allowsExternalBinaryDataStorage && !title.preservesValueInHistoryOnDeletion)
            #expect(title.versionHashModifier == nil && title.renamingIdentifier == nil && title.derivation == nil)
        }
    }

    /// `coreDataVersionHashes` takes each entity's hash from the entity (computed when the schema was validated)
    /// instead of hashing again: the two must be the same hash, for schemas of every shape.
    @Test func schemaHashesAreTheEntitiesOwnForRandomSchemas() throws {
        var g = SeededGenerator(seed: 0x4A5E_0C0D)
        for i in 0..<300 {
            let schema = try JSONDocumentTextTests.randomSchema(&g)
            let hashes = schema.coreDataVersionHashes
            #expect(hashes.entityHashes.count == schema.entities.count, "schema \(i)")
            for entity in schema.entities {
                var hasher = CoreDataVersionHash(schema: schema)
                #expect(hashes.entityHashes[entity.name] == Data(hasher.entityHash(entity.name)), "schema \(i), \(entity.name)")
            }
        }
    }
}
