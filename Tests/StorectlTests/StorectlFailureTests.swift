import Foundation
import StoreAPI
import StoreTestSupport
import Testing

/// Bad input and refused operations: a clear message on standard error, exit code 2 (64 for usage), and nothing
/// written.
@Suite("storectl failures")
struct StorectlFailureTests {
    /// A small store made with the library (fast), of the sample schema.
    func smallStore(_ name: String, type: String, in dir: TemporaryDirectory) throws -> StoreMetadata {
        let schema = try Schema(xcodeModelAt: PackagePaths.libraryModel)
        let store = try Backends.create(type, at: dir.path(name), schema: schema)
        let lines = (0..<5).map { "{\"entity\":\"Tag\",\"attributes\":{\"name\":\"tag \($0)\"}}" }
        try NDJSONImporter().importRecords(from: Data(lines.joined(separator: "\n").utf8), into: store)
        let metadata = store.metadata
        try store.close()
        return metadata
    }

    func expectFailure(_ r: Child, _ fragment: String, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(r.status == 2, "exit status \(r.status); stderr: \(r.stderr)", sourceLocation: sourceLocation)
        #expect(r.stderr.contains("error:"), sourceLocation: sourceLocation)
        #expect(r.stderr.contains(fragment), "stderr: \(r.stderr)", sourceLocation: sourceLocation)
    }

    /// A source whose two sides of a many-to-many relationship disagree (damaged, or written by another tool):
    /// converting it into SQLite, which keeps both sides in one table, fails naming the relationship — the links
    /// are not merged — and leaves no destination.
    @Test func disagreeingSidesOfAManyToManyAreRefused() throws {
        let dir = try TemporaryDirectory("storectl-tests")
        defer { dir.remove() }
        let schema = try Schema(entities: [
            EntityDescription(name: "Book", attributes: [AttributeDescription(name: "title", type: .string)],
                              relationships: [RelationshipDescription(name: "tags", destination: "Tag", inverse: "books", isToMany: true)]),
            EntityDescription(name: "Tag", attributes: [AttributeDescription(name: "name", type: .string)],
                              relationships: [RelationshipDescription(name: "books", destination: "Book", inverse: "tags", isToMany: true)]),
        ])
        let store = try Backends.create("lmdb", at: dir.path("bad.lmdb"), schema: schema)
        let book = try schema.requireEntity("Book"), tag = try schema.requireEntity("Tag")
        var records: [Record] = []
        for pk in Int64(1)...3 {
            var b = book.newRecord(primaryKey: pk)
            b.relationships[0] = .toMany(pk == 3 ? [] : [1])  // book 3 does not list tag 1
            records.append(b)
        }
        var t = tag.newRecord(primaryKey: 1)
        t.relationships[0] = .toMany([1, 2, 3])
        records.append(t)
        try store.save(StoreChanges(inserted: records))
        try store.close()

        expectFailure(try Storectl.run(["convert", "bad.lmdb", "out.sqlite"], in: dir), "disagree")
        #expect(dir.entries() == ["bad.lmdb"])
    }

    @Test func missingFile() throws {
        let dir = try TemporaryDirectory("storectl-tests")
        defer { dir.remove() }
        for verb in [["info", "nope.sqlite"], ["verify", "nope.sqlite"], ["export", "nope.sqlite"], ["convert", "nope.sqlite", "x.lmdb"],
                     ["copy", "nope.sqlite", "x.sqlite"], ["destroy", "nope.sqlite"], ["replace", "x.sqlite", "--with", "nope.sqlite"],
                     ["diff", "nope.sqlite", "nope.lmdb"], ["relocate", "nope.sqlite", "x.sqlite"]] {
            expectFailure(try Storectl.run(verb, in: dir), "no store there")
        }
        _ = try smallStore("s.sqlite", type: "sqlite", in: dir)
        expectFailure(try Storectl.run(["import", "s.sqlite", "nope.ndjson"], in: dir), "nope.ndjson: no such file")
        expectFailure(try Storectl.run(["create", "n.sqlite", "--model", "nope.xcdatamodeld"], in: dir), "no such file or directory")
        #expect(dir.entries() == ["s.sqlite"])
    }

    @Test func garbageFile() throws {
        let dir = try TemporaryDirectory("storectl-tests")
        defer { dir.remove() }
        let garbage = Data((0..<4096).map { UInt8(truncatingIfNeeded: $0 &* 7919 &+ 13) })
        for name in ["garbage.sqlite", "garbage.xml", "garbage.bin"] { try garbage.write(to: dir.path(name)) }
        for name in ["garbage.sqlite", "garbage.xml", "garbage.bin"] {
            expectFailure(try Storectl.run(["info", name], in: dir), "not a store")
            expectFailure(try Storectl.run(["convert", name, "out.lmdb"], in: dir), "not a store")
            expectFailure(try Storectl.run(["destroy", name], in: dir), "not a store")
        }
        // A garbage model and a garbage NDJSON file.
        expectFailure(try Storectl.run(["create", "x.sqlite", "--model", "garbage.bin"], in: dir), "not a schema")
        _ = try smallStore("s.lmdb", type: "lmdb", in: dir)
        expectFailure(try Storectl.run(["import", "s.lmdb", "garbage.bin"], in: dir), "garbage.bin:1: malformed JSON")
        #expect(dir.entries() == ["garbage.bin", "garbage.sqlite", "garbage.xml", "s.lmdb"], "nothing was created or removed")
        #expect(try Data(contentsOf: dir.path("garbage.sqlite")) == garbage)
    }

    @Test func existingDestinationNeedsForce() throws {
        let dir = try TemporaryDirectory("storectl-tests")
        defer { dir.remove() }
        let source = try smallStore("a.sqlite", type: "sqlite", in: dir)
        let existing = try smallStore("b.lmdb", type: "lmdb", in: dir)
        try Data("notes".utf8).write(to: dir.path("notes.xml"))

        expectFailure(try Storectl.run(["convert", "a.sqlite", "b.lmdb"], in: dir), "already exists")
        expectFailure(try Storectl.run(["copy", "a.sqlite", "b.lmdb", "--force"], in: dir), "use 'storectl convert'")
        expectFailure(try Storectl.run(["create", "b.lmdb", "--model", PackagePaths.libraryModel.path], in: dir), "already exists")
        expectFailure(try Storectl.run(["convert", "a.sqlite", "notes.xml", "--force"], in: dir), "is not a store; not replacing it")
        expectFailure(try Storectl.run(["export", "a.sqlite", "-o", "notes.xml"], in: dir), "already exists")
        #expect(try Backends.registry.backend(for: "lmdb").readMetadata(at: dir.path("b.lmdb")).storeUUID == existing.storeUUID)
        #expect(try String(contentsOf: dir.path("notes.xml"), encoding: .utf8) == "notes")

        let forced = try Storectl.run(["convert", "a.sqlite", "b.lmdb", "--force"], in: dir)
        #expect(forced.status == 0, "\(forced.stderr)")
        #expect(try Backends.registry.backend(for: "lmdb").readMetadata(at: dir.path("b.lmdb")).storeUUID == source.storeUUID)
        #expect(dir.entries() == ["a.sqlite", "b.lmdb", "notes.xml"])
    }

    @Test func wrongTypes() throws {
        let dir = try TemporaryDirectory("storectl-tests")
        defer { dir.remove() }
        _ = try smallStore("a.sqlite", type: "sqlite", in: dir)
        expectFailure(try Storectl.run(["convert", "a.sqlite", "b.lmdb", "--from", "xml"], in: dir), "expected a xml store, found a sqlite store")
        expectFailure(try Storectl.run(["convert", "a.sqlite", "b.lmdb", "--from", "cassandra"], in: dir), "unknown store type 'cassandra'")
        expectFailure(try Storectl.run(["convert", "a.sqlite", "b.backup"], in: dir), "no store type uses the extension '.backup'; pass --to")
        expectFailure(try Storectl.run(["create", "c", "--model", PackagePaths.libraryModel.path], in: dir), "pass --type")
        expectFailure(try Storectl.run(["destroy", "a.sqlite", "--type", "lmdb"], in: dir), "expected a lmdb store")
        #expect(dir.entries() == ["a.sqlite"])
        // With the right names it works, whatever the extension.
        #expect(try Storectl.run(["convert", "a.sqlite", "b.backup", "--to", "xml", "--from", "sqlite"], in: dir).status == 0)
        #expect(try Storectl.run(["info", "b.backup"], in: dir).stdout.contains("Type:        xml"))
    }

    @Test func badNDJSONLineLeavesTheStoreUnchanged() throws {
        let dir = try TemporaryDirectory("storectl-tests")
        defer { dir.remove() }
        _ = try smallStore("a.sqlite", type: "sqlite", in: dir)
        let lines = [
            "{\"entity\":\"Tag\",\"attributes\":{\"name\":\"fine\"}}",
            "{\"entity\":\"Author\",\"attributes\":{\"name\":\"Ann\"}}",
            "{\"entity\":\"Book\",\"attributes\":{\"title\":\"T\",\"uid\":\"not-a-uuid\"}}",
            "{\"entity\":\"Tag\",\"attributes\":{\"name\":\"also fine\"}}",
        ]
        try Data(lines.joined(separator: "\n").utf8).write(to: dir.path("bad.ndjson"))
        let before = try Storectl.run(["export", "a.sqlite"], in: dir).stdout
        let r = try Storectl.run(["import", "a.sqlite", "bad.ndjson"], in: dir)
        expectFailure(r, "bad.ndjson:3: attribute 'uid' of Book is a uuid; got the string \"not-a-uuid\"")
        #expect(try Storectl.run(["export", "a.sqlite"], in: dir).stdout == before)
        #expect(before.split(separator: "\n").count == 5)
    }

    /// A file with more problems than are listed says how many it has in all, and how many are left out.
    @Test func manyBadLinesAreCountedInFull() throws {
        let dir = try TemporaryDirectory("storectl-tests")
        defer { dir.remove() }
        _ = try smallStore("a.sqlite", type: "sqlite", in: dir)
        let lines = (0..<250).map { "{\"entity\":\"Nope\",\"attributes\":{\"n\":\($0)}}" }
        try Data(lines.joined(separator: "\n").utf8).write(to: dir.path("bad.ndjson"))
        let r = try Storectl.run(["import", "a.sqlite", "bad.ndjson"], in: dir)
        #expect(r.status != 0)
        let listed = r.stderr.split(separator: "\n").filter { $0.contains("bad.ndjson:") && $0.contains("unknown entity") }
        let header = try #require(r.stderr.split(separator: "\n").first(where: { $0.contains("nothing was imported") }))
        #expect(header.hasSuffix("250 problems, nothing was imported:"), "\(header)")
        #expect(r.stderr.contains("… and \(250 - listed.count) more problems"), "\(listed.count) listed")
    }

    @Test func usageErrors() throws {
        let dir = try TemporaryDirectory("storectl-tests")
        defer { dir.remove() }
        #expect(try Storectl.run(["convert"], in: dir).status == 64)
        #expect(try Storectl.run(["frobnicate"], in: dir).status == 64)
        #expect(try Storectl.run(["export", "a.sqlite", "--batch-size", "0"], in: dir).status == 64)
    }
}
