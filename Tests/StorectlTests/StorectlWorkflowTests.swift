import Foundation
import StoreAPI
import StoreTestSupport
import Testing

/// The built `storectl` binary, end to end, through every verb on the bundled sample.
@Suite("storectl commands")
struct StorectlWorkflowTests {
    /// Creates `name` from the sample model and data with storectl itself.
    func sampleStore(_ name: String, in dir: TemporaryDirectory) throws -> URL {
        let r = try Storectl.run(["create", name, "--model", PackagePaths.libraryModel.path, "--import", PackagePaths.libraryData.path], in: dir)
        #expect(r.status == 0, "create failed: \(r.stderr)")
        #expect(r.stderr.contains("created"))
        return dir.path(name)
    }

    /// `2770` → `2,770`, as storectl prints counts.
    /// A file size as `storectl info` prints it, with Foundation's `String(format:)` as the reference.
    static func printfSize(_ bytes: Int) -> String {
        var value = Double(bytes)
        var unit = 0
        let units = ["bytes", "KB", "MB", "GB", "TB"]
        while value >= 1024 && unit < units.count - 1 {
            value /= 1024
            unit += 1
        }
        return unit == 0 ? "\(bytes) bytes" : String(format: "%.1f %@", value, units[unit])
    }

    static func grouped(_ n: Int) -> String {
        var digits = Array(String(n))
        var i = digits.count - 3
        while i > 0 { digits.insert(",", at: i); i -= 3 }
        return String(digits)
    }

    static var sampleLineCount: Int {
        ((try? String(contentsOf: PackagePaths.libraryData, encoding: .utf8)) ?? "").split(separator: "\n").count
    }

    @Test("create, info, export, convert sqlite → lmdb → xml → sqlite, diff and verify")
    func conversionChain() throws {
        let dir = try TemporaryDirectory("storectl-tests")
        defer { dir.remove() }
        let original = try sampleStore("library.sqlite", in: dir)

        let info = try Storectl.run(["info", "library.sqlite", "--json"], in: dir)
        #expect(info.status == 0, "\(info.stderr)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(info.stdout.utf8)) as? [String: Any])
        #expect(report["type"] as? String == "sqlite")
        #expect(report["records"] as? Int == Self.sampleLineCount)
        let entities = try #require(report["entities"] as? [[String: Any]])
        #expect(entities.first { $0["name"] as? String == "Publication" }?["records"] as? Int == 2_400)
        let files = try #require(report["files"] as? [[String: Any]])
        #expect(files.first?["path"] as? String == original.path)
        #expect((files.first?["size"] as? Int ?? 0) > 0)
        let uuid = try #require(report["storeUUID"] as? String)

        let text = try Storectl.run(["info", "library.sqlite"], in: dir)
        #expect(text.status == 0)
        #expect(text.stdout.contains("Store UUID:  \(uuid)"))
        #expect(text.stdout.contains("Book"))
        // Sizes are printed as printf's %.1f of the largest unit reached (the JSON has the bytes).
        let size = try #require(files.first?["size"] as? Int)
        #expect(text.stdout.contains("\(original.path)  \(Self.printfSize(size))"), "\(text.stdout)")

        for (from, to) in [("library.sqlite", "library.lmdb"), ("library.lmdb", "library.xml"), ("library.xml", "final.sqlite")] {
            let r = try Storectl.run(["convert", from, to], in: dir)
            #expect(r.status == 0, "convert \(from) → \(to): \(r.stderr)")
            #expect(r.stderr.contains("converted"))
            #expect(r.stderr.range(of: #"records in [0-9]+\.[0-9]{2} s\n$"#, options: .regularExpression) != nil, "\(r.stderr)")
        }
        // An LMDB store is a directory and the files in it, all listed; the total counts each byte once.
        let lmdbInfo = try Storectl.run(["info", "library.lmdb", "--json"], in: dir)
        let lmdbReport = try #require(try JSONSerialization.jsonObject(with: Data(lmdbInfo.stdout.utf8)) as? [String: Any])
        let lmdbFiles = try #require(lmdbReport["files"] as? [[String: Any]])
        let plainFiles = lmdbFiles.filter { $0["isDirectory"] as? Bool == false }
        #expect(plainFiles.count == 2 && lmdbFiles.count == 3, "\(lmdbFiles)")
        #expect(lmdbReport["totalSize"] as? Int == plainFiles.reduce(0) { $0 + ($1["size"] as? Int ?? 0) })
        let lmdbText = try Storectl.run(["info", "library.lmdb"], in: dir)
        #expect(!lmdbText.stdout.contains(" 1 relationships") && !lmdbText.stdout.contains(" 1 attributes"), "\(lmdbText.stdout)")

        let diff = try Storectl.run(["diff", "library.sqlite", "final.sqlite"], in: dir)
        #expect(diff.status == 0, "\(diff.stdout)\(diff.stderr)")
        #expect(diff.stderr.contains("identical (\(Self.grouped(Self.sampleLineCount)) records compared)"))
        for store in ["library.sqlite", "library.lmdb", "library.xml", "final.sqlite"] {
            let v = try Storectl.run(["verify", store], in: dir)
            #expect(v.status == 0, "verify \(store): \(v.stdout)\(v.stderr)")
        }
        let finalInfo = try Storectl.run(["info", "final.sqlite", "--json"], in: dir)
        let finalReport = try #require(try JSONSerialization.jsonObject(with: Data(finalInfo.stdout.utf8)) as? [String: Any])
        #expect(finalReport["storeUUID"] as? String == uuid, "convert keeps the store UUID")

        // Exports of the same logical store are byte-identical whatever the type.
        let a = try Storectl.run(["export", "library.sqlite"], in: dir)
        let b = try Storectl.run(["export", "library.xml", "--output", "out.ndjson"], in: dir)
        #expect(a.status == 0 && b.status == 0)
        #expect(a.stdout.split(separator: "\n").count == Self.sampleLineCount)
        #expect(try String(contentsOf: dir.path("out.ndjson"), encoding: .utf8) == a.stdout)
        // No staging leftovers anywhere.
        #expect(dir.entries().allSatisfy { !$0.hasPrefix(".") }, "\(dir.entries())")
    }

    @Test("schema prints a summary and the JSON form; a store built from that JSON matches")
    func schemaAndRebuild() throws {
        let dir = try TemporaryDirectory("storectl-tests")
        defer { dir.remove() }
        let summary = try Storectl.run(["schema", PackagePaths.libraryModel.path], in: dir)
        #expect(summary.status == 0)
        #expect(summary.stdout.contains("Book : Publication"))
        #expect(summary.stdout.contains("Publication (abstract)"))
        #expect(summary.stdout.contains("books → [Publication] (ordered, inverse author, delete: cascade)"))
        #expect(summary.stdout.contains("unique (isbn)"))
        let json = try Storectl.run(["schema", PackagePaths.libraryModel.path, "--json"], in: dir)
        #expect(json.status == 0)
        let fromJSON = try Schema(jsonData: Data(json.stdout.utf8))
        #expect(fromJSON == (try Schema(xcodeModelAt: PackagePaths.libraryModel)))
        try Data(json.stdout.utf8).write(to: dir.path("library.json"))

        _ = try sampleStore("a.lmdb", in: dir)
        #expect(try Storectl.run(["export", "a.lmdb", "-o", "a.ndjson"], in: dir).status == 0)
        let create = try Storectl.run(["create", "b.xml", "--model", "library.json", "--metadata", "owner=alice", "--metadata", "n=3"], in: dir)
        #expect(create.status == 0, "\(create.stderr)")
        // Import from standard input.
        let imported = try Storectl.run(["import", "b.xml", "-"], in: dir, stdin: dir.path("a.ndjson"))
        #expect(imported.status == 0, "\(imported.stderr)")
        #expect(imported.stderr.contains("imported \(Self.grouped(Self.sampleLineCount)) records"))
        let recordsOnly = try Storectl.run(["diff", "a.lmdb", "b.xml", "--records-only"], in: dir)
        #expect(recordsOnly.status == 0, "\(recordsOnly.stdout)")
        let full = try Storectl.run(["diff", "a.lmdb", "b.xml"], in: dir)
        #expect(full.status == 1)
        #expect(full.stdout.contains("store UUID:"))
        #expect(full.stdout.contains("custom metadata 'owner': absent in A, \"alice\" in B"))
        #expect(full.stdout.contains("custom metadata 'n': absent in A, 3 in B"))
        let info = try Storectl.run(["info", "b.xml"], in: dir)
        #expect(info.stdout.contains("owner = \"alice\""))
        let schemaOfStore = try Storectl.run(["schema", "b.xml", "--json"], in: dir)
        #expect(schemaOfStore.stdout == json.stdout)
    }

    @Test("create --model with a store gives the new store that store's schema and leaves it untouched")
    func createFromStore() throws {
        let dir = try TemporaryDirectory("storectl-tests")
        defer { dir.remove() }
        _ = try sampleStore("a.sqlite", in: dir)
        let files = ["a.sqlite", "a.sqlite-wal", "a.sqlite-shm"].map { dir.path($0).path }
        let before = files.map { FileManager.default.contents(atPath: $0) }
        let create = try Storectl.run(["create", "b.xml", "--model", "a.sqlite"], in: dir)
        #expect(create.status == 0, "\(create.stderr)")
        let schemaA = try Storectl.run(["schema", "a.sqlite", "--json"], in: dir)
        let schemaB = try Storectl.run(["schema", "b.xml", "--json"], in: dir)
        #expect(schemaA.status == 0 && !schemaA.stdout.isEmpty && schemaB.stdout == schemaA.stdout)
        #expect(try Storectl.run(["info", "b.xml"], in: dir).stdout.contains("Records:     0"))
        #expect(files.map { FileManager.default.contents(atPath: $0) } == before, "reading changed the store's files")
        // Neither a model nor a store: the error names both.
        try Data("plain text".utf8).write(to: dir.path("notes.txt"))
        let refused = try Storectl.run(["create", "c.xml", "--model", "notes.txt"], in: dir)
        #expect(refused.status != 0 && refused.stderr.contains("not a schema") && refused.stderr.contains("or a store"),
                "\(refused.stderr)")
    }

    @Test("one record is counted in the singular (info: in the plural's column)")
    func infoCountsOneRecordInTheSingular() throws {
        let dir = try TemporaryDirectory("storectl-tests")
        defer { dir.remove() }
        #expect(try Storectl.run(["create", "one.sqlite", "--model", PackagePaths.libraryModel.path], in: dir).status == 0)
        let line = try dir.write(#"{"entity":"Tag","attributes":{"name":"only"}}"#, to: "one.ndjson")
        let imported = try Storectl.run(["import", "one.sqlite", line.path], in: dir)
        #expect(imported.status == 0 && imported.stderr.contains("imported 1 record into"), "\(imported.stderr)")
        let exported = try Storectl.run(["export", "one.sqlite", "--output", "again.ndjson"], in: dir)
        #expect(exported.stderr.contains("exported 1 record from"), "\(exported.stderr)")
        let copied = try Storectl.run(["convert", "one.sqlite", "one.lmdb"], in: dir)
        #expect(copied.status == 0 && copied.stderr.contains(": 1 record in "), "\(copied.stderr)")
        let diff = try Storectl.run(["diff", "one.sqlite", "one.lmdb"], in: dir)
        #expect(diff.stderr.contains("(1 record compared)"), "\(diff.stderr)")
        let text = try Storectl.run(["info", "one.sqlite"], in: dir).stdout
        let tag = try #require(text.split(separator: "\n").first { $0.hasPrefix("  Tag ") }, "\(text)")
        let author = try #require(text.split(separator: "\n").first { $0.hasPrefix("  Author ") }, "\(text)")
        #expect(tag.contains(" 1 record   1 attribute,") && author.contains(" 0 records  5 attributes,"), "\(text)")
        func column(_ line: Substring) -> Int? { line.range(of: "attribute").map { line.distance(from: line.startIndex, to: $0.lowerBound) } }
        #expect(column(tag) != nil && column(tag) == column(author), "\(text)")
    }

    @Test("diff names the records and values that differ")
    func diffReportsDifferences() throws {
        let dir = try TemporaryDirectory("storectl-tests")
        defer { dir.remove() }
        _ = try sampleStore("a.sqlite", in: dir)
        #expect(try Storectl.run(["copy", "a.sqlite", "b.sqlite"], in: dir).status == 0)
        #expect(try Storectl.run(["diff", "a.sqlite", "b.sqlite"], in: dir).status == 0)

        // Change one title and add one tag in B.
        let store = try Backends.open(dir.path("b.sqlite"))
        let bookEntity = try #require(store.metadata.schema.entity(named: "Book"))
        var book = try #require(try store.fetch(FetchRequest(entity: "Book", limit: 1)).first)
        let titleIndex = try #require(bookEntity.attributeIndex("title"))
        let oldTitle = try #require(book.attributes[titleIndex].stringValue)
        book.attributes[titleIndex] = .string("Changed Title")
        let tagEntity = try #require(store.metadata.schema.entity(named: "Tag"))
        let key = try store.allocatePrimaryKeys(root: "Tag", count: 1)
        var tag = tagEntity.newRecord(primaryKey: key)
        tag.attributes[0] = .string("brand-new")
        try store.save(StoreChanges(inserted: [tag], updated: [book]))
        try store.close()

        let diff = try Storectl.run(["diff", "a.sqlite", "b.sqlite"], in: dir)
        #expect(diff.status == 1)
        #expect(diff.stdout.contains("Records only in B: 1"))
        #expect(diff.stdout.contains("Tag \(tag.globalID.uuidString)"))
        #expect(diff.stdout.contains("Records that differ: 1"))
        #expect(diff.stdout.contains("Book \(book.globalID.uuidString)"))
        #expect(diff.stdout.contains("attribute 'title': \(String(reflecting: oldTitle)) in A, \"Changed Title\" in B"))

        let json = try Storectl.run(["diff", "a.sqlite", "b.sqlite", "--json"], in: dir)
        #expect(json.status == 1)
        let parsed = try JSONDecoder().decode(StoreDifferences.self, from: Data(json.stdout.utf8))
        #expect(parsed.onlyInBCount == 1)
        #expect(parsed.differing.first?.record.globalID == book.globalID)
    }

    /// Two schemas with the same version hashes can still differ (a class name, user info): diff names the entities.
    /// (An upgraded Core Data store beside the one Core Data wrote for the same model is such a pair.)
    @Test("diff names the entities whose definitions differ beside equal version hashes")
    func diffNamesEntitiesThatDifferBesideTheirHashes() throws {
        let dir = try TemporaryDirectory("storectl-tests")
        defer { dir.remove() }
        #expect(try Storectl.run(["create", "a.sqlite", "--model", PackagePaths.libraryModel.path], in: dir).status == 0)
        let schema = try Storectl.run(["schema", "a.sqlite", "--json"], in: dir)
        var json = try #require(try JSONSerialization.jsonObject(with: Data(schema.stdout.utf8)) as? [String: Any])
        var entities = try #require(json["entities"] as? [[String: Any]])
        let tag = try #require(entities.firstIndex { $0["name"] as? String == "Tag" })
        entities[tag]["className"] = "LabelObject"
        json["entities"] = entities
        try JSONSerialization.data(withJSONObject: json).write(to: dir.path("renamed-class.json"))
        #expect(try Storectl.run(["create", "b.sqlite", "--model", "renamed-class.json"], in: dir).status == 0)
        let diff = try Storectl.run(["diff", "a.sqlite", "b.sqlite"], in: dir)
        #expect(diff.status == 1)
        #expect(diff.stdout.contains("schema: entities differ in what version hashes leave out: "
                                     + "Tag (class name: Tag in A, LabelObject in B)\n"), "\(diff.stdout)")
    }

    @Test("copy, replace, relocate and destroy move whole stores and nothing else")
    func fileOperations() throws {
        let dir = try TemporaryDirectory("storectl-tests")
        defer { dir.remove() }
        _ = try sampleStore("a.lmdb", in: dir)
        try Data("keep me".utf8).write(to: dir.path("unrelated.txt"))

        #expect(try Storectl.run(["copy", "a.lmdb", "backup.lmdb"], in: dir).status == 0)
        #expect(try Storectl.run(["diff", "a.lmdb", "backup.lmdb"], in: dir).status == 0)

        // Replace a different store with the backup.
        let other = try Storectl.run(["create", "c.lmdb", "--model", PackagePaths.libraryModel.path], in: dir)
        #expect(other.status == 0)
        #expect(try Storectl.run(["diff", "a.lmdb", "c.lmdb"], in: dir).status == 1)
        let replace = try Storectl.run(["replace", "c.lmdb", "--with", "backup.lmdb"], in: dir)
        #expect(replace.status == 0, "\(replace.stderr)")
        #expect(try Storectl.run(["diff", "a.lmdb", "c.lmdb"], in: dir).status == 0)

        try FileManager.default.createDirectory(at: dir.path("moved"), withIntermediateDirectories: false)
        let relocate = try Storectl.run(["relocate", "c.lmdb", "moved/c.lmdb"], in: dir)
        #expect(relocate.status == 0, "\(relocate.stderr)")
        #expect(!FileManager.default.fileExists(atPath: dir.path("c.lmdb").path))
        #expect(try Storectl.run(["diff", "a.lmdb", "moved/c.lmdb"], in: dir).status == 0)
        let again = try Storectl.run(["relocate", "c.lmdb", "moved/c.lmdb"], in: dir)
        #expect(again.status == 0)
        #expect(again.stderr.contains("nothing to do"))

        let destroy = try Storectl.run(["destroy", "moved/c.lmdb"], in: dir)
        #expect(destroy.status == 0, "\(destroy.stderr)")
        #expect(!FileManager.default.fileExists(atPath: dir.path("moved/c.lmdb").path))
        #expect(dir.entries() == ["a.lmdb", "backup.lmdb", "moved", "unrelated.txt"])
        #expect(try String(contentsOf: dir.path("unrelated.txt"), encoding: .utf8) == "keep me")
    }

    @Test("export --entity writes only that hierarchy")
    func exportSubset() throws {
        let dir = try TemporaryDirectory("storectl-tests")
        defer { dir.remove() }
        _ = try sampleStore("a.sqlite", in: dir)
        let r = try Storectl.run(["export", "a.sqlite", "--entity", "Publication", "--quiet"], in: dir)
        #expect(r.status == 0)
        #expect(r.stderr.isEmpty, "--quiet prints nothing: \(r.stderr)")
        let lines = r.stdout.split(separator: "\n")
        #expect(lines.count == 2_400)
        #expect(lines.allSatisfy { $0.hasPrefix("{\"entity\":\"Book\"") || $0.hasPrefix("{\"entity\":\"Magazine\"") })
    }

    @Test("verify lists a relationship to a missing record and exits with 1")
    func verifyFindsProblems() throws {
        let dir = try TemporaryDirectory("storectl-tests")
        defer { dir.remove() }
        let schema = try Schema(xcodeModelAt: PackagePaths.libraryModel)
        let store = try Backends.create("sqlite", at: dir.path("broken.sqlite"), schema: schema)
        let book = try #require(schema.entity(named: "Book"))
        var b = book.newRecord(primaryKey: 1)
        b.attributes[try #require(book.attributeIndex("title"))] = "T"
        b.attributes[try #require(book.attributeIndex("uid"))] = .uuid(UUID())
        b.relationships[try #require(book.relationshipIndex("publisher"))] = .toOne(42) // no such publisher
        try store.save(StoreChanges(inserted: [b]))
        try store.close()

        let r = try Storectl.run(["verify", "broken.sqlite"], in: dir)
        #expect(r.status == 1)
        #expect(r.stdout.contains("1 problem:"))
        #expect(r.stdout.contains("Book/p1 (id \(b.globalID.uuidString)): relationship 'publisher' points to Publisher/p42, which does not exist"))
        let json = try Storectl.run(["verify", "broken.sqlite", "--json"], in: dir)
        #expect(json.status == 1)
        let parsed = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
        #expect(parsed["ok"] as? Bool == false)
        #expect((parsed["problems"] as? [String])?.count == 1)
    }

    @Test("help for every verb has examples; completion scripts are generated")
    func help() throws {
        let dir = try TemporaryDirectory("storectl-tests")
        defer { dir.remove() }
        let top = try Storectl.run(["--help"], in: dir)
        #expect(top.status == 0)
        #expect(top.stdout.contains("Exit codes"))
        #expect(top.stdout.contains("--generate-completion-script"))
        for verb in ["create", "import", "export", "info", "convert", "copy", "replace", "destroy", "verify", "diff", "relocate", "schema"] {
            let r = try Storectl.run([verb, "--help"], in: dir)
            #expect(r.status == 0, "\(verb) --help")
            #expect(r.stdout.contains("Examples:"), "\(verb) --help has examples")
            #expect(top.stdout.contains(verb))
        }
        let bash = try Storectl.run(["--generate-completion-script", "bash"], in: dir)
        #expect(bash.status == 0)
        #expect(bash.stdout.contains("convert"))
    }
}
