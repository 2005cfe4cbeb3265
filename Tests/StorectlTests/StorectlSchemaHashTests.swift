import Foundation
import StoreAPI
import StoreTestSupport
import Testing

/// `storectl schema` shows each entity's version hash as Core Data's metadata holds it, with the digest and
/// checksum: through the real binary, against the hashes real Core Data wrote (`VERSION_HASHES.json`).
@Suite struct StorectlSchemaHashTests {
    static let truthFile = PackagePaths.corpus("VERSION_HASHES.json")
    static var corpusIsPresent: Bool { truthFile != nil && PackagePaths.corpus("models") != nil }
    static let absent: Comment = "corpus not found at ../shared/corpus; skipped"

    static func truth() throws -> [String: Any] {
        let file = try #require(truthFile)
        return try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: file)) as? [String: Any])
    }

    /// CoreDataPlus's SampleModel2_V2 store (its model exists only in its app's code) and its entry in the truth file.
    static func sampleModel2Store() throws -> (store: URL, entry: [String: Any]) {
        let name = "stores/alemar11__CoreDataPlus/SampleModel2_V2.sqlite"
        let store = try #require(PackagePaths.corpus(name))
        return (store, try #require((try truth()["stores"] as? [String: [String: Any]])?[name]))
    }

    /// The bytes of a SQLite store's main file, `-wal` and `-shm` (`nil` for one that is absent).
    static func contents(of store: URL) -> [Data?] {
        [store.path, store.path + "-wal", store.path + "-shm"].map { FileManager.default.contents(atPath: $0) }
    }

    /// Runs `storectl schema <path> --json` and returns the printed object.
    static func schemaJSON(_ path: URL, in dir: TemporaryDirectory) throws -> [String: Any] {
        let run = try Storectl.run(["schema", path.path, "--json"], in: dir)
        #expect(run.status == 0, "\(run.stderr)")
        return try #require(try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any])
    }

    @Test("a Core Data store: its entities' hashes, digest and checksum as its metadata holds them",
          .enabled(if: StorectlSchemaHashTests.corpusIsPresent, StorectlSchemaHashTests.absent))
    func coreDataStore() throws {
        let dir = try TemporaryDirectory("storectl-tests")
        defer { dir.remove() }
        // A store whose model exists only in its app's code: the schema comes from the store's model cache.
        let (store, entry) = try Self.sampleModel2Store()
        let before = Self.contents(of: store)
        let printed = try Self.schemaJSON(store, in: dir)
        let expected = try #require(entry["entityHashes"] as? [String: String])
        #expect(expected.count == 6)
        #expect(printed["versionHashes"] as? [String: String] == expected)
        #expect(printed["versionHashesDigest"] as? String == (try #require(entry["NSStoreModelVersionHashesDigest"] as? String)))
        #expect(printed["versionChecksum"] as? String == (try #require(entry["NSStoreModelVersionChecksumKey"] as? String)))
        #expect(Self.contents(of: store) == before, "reading changed the store's files")
    }

    @Test("create --model with a Core Data store: a new store with Core Data's hashes; the source is untouched",
          .enabled(if: StorectlSchemaHashTests.corpusIsPresent, StorectlSchemaHashTests.absent))
    func createFromCoreDataStore() throws {
        let dir = try TemporaryDirectory("storectl-tests")
        defer { dir.remove() }
        let (store, entry) = try Self.sampleModel2Store()
        let before = Self.contents(of: store)
        for (new, type) in [("new.sqlite", "coredata"), ("new.lmdb", "lmdb")] {
            let create = try Storectl.run(["create", new, "--type", type, "--model", store.path], in: dir)
            #expect(create.status == 0, "\(create.stderr)")
            #expect(try Self.schemaJSON(dir.path(new), in: dir)["versionHashes"] as? [String: String]
                    == (try #require(entry["entityHashes"] as? [String: String])), "\(new)")
        }
        #expect(Self.contents(of: store) == before, "reading changed the store's files")
    }

    @Test("an Xcode model version: its entities' hashes as the compiled model records them",
          .enabled(if: StorectlSchemaHashTests.corpusIsPresent, StorectlSchemaHashTests.absent))
    func xcodeModel() throws {
        let dir = try TemporaryDirectory("storectl-tests")
        defer { dir.remove() }
        let compiled = try #require(try Self.truth()["compiled_models"] as? [String: [String: Any]])
        let versions = try #require(compiled["models/alemar11__CoreDataPlus__SampleModel.momd/VersionInfo.plist"]?["versions"]
                                    as? [String: [String: String]])
        let model = try #require(PackagePaths.corpus("models/alemar11__CoreDataPlus__SampleModel.xcdatamodeld/SampleModel3.xcdatamodel"))
        let expected = try #require(versions["SampleModel3"])
        let printed = try Self.schemaJSON(model, in: dir)
        #expect(printed["versionHashes"] as? [String: String] == expected)
        #expect(expected.count == 5)

        // The text form shows the same hashes, one per entity.
        let text = try Storectl.run(["schema", model.path], in: dir)
        #expect(text.status == 0)
        for (entity, hash) in expected { #expect(text.stdout.contains("version hash \(hash)"), "\(entity)") }
        #expect(text.stdout.contains("Version hashes digest: "))
    }

    /// The sample model, which every checkout has: the printed hashes are the schema's, the digest and checksum
    /// Core Data's, and the output still reads back as the schema (the extra keys are ignored).
    @Test func sampleModelHashesAndRoundTrip() throws {
        let dir = try TemporaryDirectory("storectl-tests")
        defer { dir.remove() }
        let schema = try Schema(xcodeModelAt: PackagePaths.libraryModel)
        let run = try Storectl.run(["schema", PackagePaths.libraryModel.path, "--json"], in: dir)
        #expect(run.status == 0, "\(run.stderr)")
        let printed = try #require(try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any])
        #expect(printed["versionHashes"] as? [String: String] == schema.versionHashes)
        #expect(printed["versionHashesDigest"] as? String == schema.coreDataVersionHashes.digest)
        #expect(printed["versionChecksum"] as? String == schema.coreDataVersionHashes.checksum)
        #expect(try Schema(jsonData: Data(run.stdout.utf8)) == schema)
        #expect(try JSONDecoder().decode(Schema.self, from: Data(run.stdout.utf8)) == schema)
    }
}
