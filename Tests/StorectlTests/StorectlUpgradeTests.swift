import Foundation
import StoreAPI
import StoreTestSupport
import Testing

/// `storectl upgrade`: the plan on --dry-run (text and JSON), the upgrade itself, and refusals that change nothing.
@Suite struct StorectlUpgradeTests {
    /// A v1 store of `type` with one author and one book, and v2 as a JSON schema file.
    static func fixture(_ type: String, in dir: TemporaryDirectory, authorName: StoreValue = "Le Guin") throws -> (store: URL, model: URL) {
        let v1 = try EvolutionSchemas.v1()
        let url = dir.path("library.\(type)")
        let store = try Backends.create(type, at: url, schema: v1, custom: ["app": .string("library")])
        try store.save(StoreChanges(inserted: [
            v1.record("Author", 1, ["name": authorName, "age": .integer16(88)], ["books": .toMany([1])]),
            v1.record("Book", 1, ["title": .string("The Dispossessed")], ["author": .toOne(1)]),
        ]))
        try store.close()
        let model = dir.path("v2.json")
        try JSONEncoder().encode(try EvolutionSchemas.v2()).write(to: model)
        return (url, model)
    }

    @Test("--dry-run prints each change and changes nothing", arguments: ["sqlite", "lmdb", "xml"])
    func dryRunPrintsThePlan(_ type: String) throws {
        let dir = try TemporaryDirectory("storectl-upgrade")
        let (url, model) = try Self.fixture(type, in: dir)
        let before = try Backends.registry.backend(for: type).readMetadata(at: url)
        let run = try Storectl.run(["upgrade", url.path, "--model", model.path, "--dry-run"], in: dir)
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stdout.contains("fullName: renamed from name"))
        #expect(run.stdout.contains("Title: renamed from Book"))
        #expect(run.stdout.contains("Note: removed"))
        #expect(try Backends.registry.backend(for: type).readMetadata(at: url) == before)

        let json = try Storectl.run(["upgrade", url.path, "--model", model.path, "--dry-run", "--json"], in: dir)
        #expect(json.status == 0, "\(json.stderr)")
        let object = try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any]
        #expect(object?["dryRun"] as? Bool == true)
        let steps = object?["steps"] as? [[String: Any]]
        let plan = try JSONSerialization.data(withJSONObject: try #require(steps?.first?["plan"]))
        let decoded = try JSONDecoder().decode(SchemaMigrationPlan.self, from: plan)
        #expect(decoded == (try SchemaMigrationPlan(from: EvolutionSchemas.v1(), to: EvolutionSchemas.v2())))
    }

    @Test("--check runs the upgrade on a copy: what only the records show is refused, and nothing changes",
          arguments: ["sqlite", "lmdb", "xml"])
    func checkRehearsesOnACopy(_ type: String) throws {
        let dir = try TemporaryDirectory("storectl-upgrade-check")
        let (url, model) = try Self.fixture(type, in: dir)
        func files() throws -> [String: Data] {
            var out: [String: Data] = [:]
            for f in try Backends.registry.backend(for: type).ownedFiles(ofStoreAt: url) {
                var isDirectory: ObjCBool = false
                _ = FileManager.default.fileExists(atPath: f.path, isDirectory: &isDirectory)
                let names = isDirectory.boolValue ? try FileManager.default.contentsOfDirectory(atPath: f.path).filter { !$0.hasSuffix("lock.mdb") }.map { "/" + $0 } : [""]
                for n in names { out[f.lastPathComponent + n] = try Data(contentsOf: URL(fileURLWithPath: f.path + n)) }
            }
            return out
        }
        let before = try files()
        // The book has no isbn: a plan from the schemas alone cannot tell that this model refuses it.
        let isbnRequired = dir.path("isbn-required.json")
        try JSONEncoder().encode(try EvolutionSchemas.v1(changing: "Book") { b in b.attributes[2].isOptional = false }).write(to: isbnRequired)
        let dryRun = try Storectl.run(["upgrade", url.path, "--model", isbnRequired.path, "--dry-run"], in: dir)
        #expect(dryRun.status == 0, "\(dryRun.stderr)")
        let refused = try Storectl.run(["upgrade", url.path, "--model", isbnRequired.path, "--check"], in: dir)
        #expect(refused.status == 2)
        #expect(refused.stderr.contains("Book.isbn is required") && refused.stderr.contains(url.lastPathComponent), "\(refused.stderr)")

        let passes = try Storectl.run(["upgrade", url.path, "--model", model.path, "--check"], in: dir)
        #expect(passes.status == 0, "\(passes.stderr)")
        #expect(passes.stdout.contains("Title: renamed from Book"))
        #expect(passes.stderr.contains("the upgrade succeeds on a copy"), "\(passes.stderr)")
        let json = try Storectl.run(["upgrade", url.path, "--model", model.path, "--check", "--json"], in: dir)
        let object = try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any]
        #expect(object?["checked"] as? Bool == true && object?["upgraded"] as? Bool == false)
        #expect(try files() == before, "the store's files are as they were")
        #expect(!dir.listing().contains { $0.hasPrefix(".storeapi-staging-") }, "no staging left: \(dir.listing())")
        #expect(try Backends.registry.backend(for: type).readMetadata(at: url).versionHashes == (try EvolutionSchemas.v1()).versionHashes)
    }

    @Test("upgrade rewrites the store for the new model, keeping its identity", arguments: ["sqlite", "lmdb", "xml"])
    func upgradeRewritesTheStore(_ type: String) throws {
        let dir = try TemporaryDirectory("storectl-upgrade-run")
        let (url, model) = try Self.fixture(type, in: dir)
        let uuid = try Backends.registry.backend(for: type).readMetadata(at: url).storeUUID
        let run = try Storectl.run(["upgrade", url.path, "--model", model.path, "--quiet"], in: dir)
        #expect(run.status == 0, "\(run.stderr)")
        let store = try Backends.open(url, readOnly: true)
        defer { try? store.close() }
        #expect(store.metadata.storeUUID == uuid)
        #expect(store.metadata.versionHashes == (try EvolutionSchemas.v2()).versionHashes)
        #expect(store.metadata.custom == ["app": .string("library")])
        let authors = try store.fetch(FetchRequest(entity: "Author"))
        #expect(authors.map { $0.attributes[0] } == [.string("Le Guin")])
        #expect(authors.first?.attributes[1] == .integer64(88))
        #expect(try store.count(FetchRequest(entity: "Title")) == 1)

        let again = try Storectl.run(["upgrade", url.path, "--model", model.path], in: dir)
        #expect(again.status == 0)
        #expect(again.stderr.contains("nothing to do"), "\(again.stderr)")
    }

    @Test("a refused upgrade exits 2, lists every problem and leaves the store as it was")
    func refusalListsProblems() throws {
        let dir = try TemporaryDirectory("storectl-upgrade-refused")
        let (url, _) = try Self.fixture("sqlite", in: dir)
        let bytes = try Data(contentsOf: url)
        let lossy = try EvolutionSchemas.v1(changing: "Author") { a in
            a.attributes[0].type = .integer64
            a.relationships[0].isToMany = false
        }
        let model = dir.path("lossy.json")
        try JSONEncoder().encode(lossy).write(to: model)
        for extra in [[], ["--dry-run"]] {
            let run = try Storectl.run(["upgrade", url.path, "--model", model.path] + extra, in: dir)
            #expect(run.status == 2)
            #expect(run.stderr.contains("2 problems"), "\(run.stderr)")
            #expect(run.stderr.contains("Author.name: type changes from string to integer64"))
            #expect(run.stderr.contains("Author.books: to-many becomes to-one"))
        }
        #expect(try Data(contentsOf: url) == bytes)
    }
}
