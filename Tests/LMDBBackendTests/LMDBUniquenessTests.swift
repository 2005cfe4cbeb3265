import Foundation
@testable import LMDBBackend
import StoreAPI
import StoreTestSupport
import Testing

/// The store enforces uniqueness constraints itself, through its index databases, and answers equality fetches
/// on unique attributes from them.
@Suite struct LMDBUniquenessTests {
    @Test func duplicatesAreRefusedAndNothingIsWritten() throws {
        let dir = try TemporaryDirectory("lmdb-tests")
        let schema = try LMDBFixture.schema()
        let f = LMDBFixture.self
        let store = try f.create(dir.path("unique.lmdb"), schema: schema)
        defer { try? store.close() }
        try store.save(StoreChanges(inserted: [
            schema.record("Tag", 1, ["name": "red"]),
            schema.record("Tag", 2, ["name": .null]),
            schema.record("Tag", 3, ["name": .null]),
            schema.record("Author", 1, ["name": "Ada", "country": "UK"]),
            schema.record("Author", 2, ["name": "Ada", "country": "FR"]),
            schema.record("Author", 3, ["name": "Ada", "country": .null]),
            schema.record("Author", 4, ["name": "Ada", "country": .null]),
            schema.record("Book", 10, ["title": "t", "isbn": "x-1"]),
        ]))

        // A single-attribute duplicate, with the existing record named.
        let dup = schema.record("Tag", 4, ["name": "red"])
        let other = schema.record("Tag", 5, ["name": "fresh"])
        let error = storeError { try store.save(StoreChanges(inserted: [other, dup])) }
        guard case .uniquenessViolation(let entity, let attributes, let values, let existing)? = error else {
            Issue.record("expected a uniqueness violation, got \(String(describing: error))")
            return
        }
        #expect(entity == "Tag" && attributes == ["name"] && values == ["red"])
        #expect(existing?.primaryKey == 1 && existing?.entity == "Tag" && existing?.storeUUID == store.metadata.storeUUID)
        #expect(try store.count(FetchRequest(entity: "Tag")) == 3, "the failed save stored nothing, not even the valid record")

        // Compound constraint; a constraint spanning sub-entities (isbn is declared on Work).
        let compound = schema.record("Author", 5, ["name": "Ada", "country": "FR"])
        #expect(storeError { try store.save(StoreChanges(inserted: [compound])) }?.caseName == "uniquenessViolation")
        let article = schema.record("Article", 11, ["title": "a", "isbn": "x-1"])
        guard case .uniquenessViolation(let owner, _, _, let holder)? = storeError({ try store.save(StoreChanges(inserted: [article])) }) else {
            Issue.record("an Article may not reuse a Book's isbn")
            return
        }
        #expect(owner == "Work" && holder?.entity == "Book")

        // Updating into a used value is refused; the record keeps its old value.
        var tag3 = try #require(try store.records(withKeys: [3], root: "Tag").first)
        tag3.attributes[0] = "red"
        #expect(storeError { try store.save(StoreChanges(updated: [tag3])) }?.caseName == "uniquenessViolation")
        #expect(try store.records(withKeys: [3], root: "Tag").first?.attributes[0] == .null)
    }

    @Test func valuesMayMoveWithinOneSave() throws {
        let dir = try TemporaryDirectory("lmdb-tests")
        let schema = try LMDBFixture.schema()
        let f = LMDBFixture.self
        let store = try f.create(dir.path("swap.lmdb"), schema: schema)
        defer { try? store.close() }
        var a = schema.record("Tag", 1, ["name": "a"])
        var b = schema.record("Tag", 2, ["name": "b"])
        let c = schema.record("Tag", 3, ["name": "c"])
        try store.save(StoreChanges(inserted: [a, b, c]))
        // Swap a and b; delete c and give its name to a new record.
        a.attributes[0] = "b"
        b.attributes[0] = "a"
        let d = schema.record("Tag", 4, ["name": "c"])
        try store.save(StoreChanges(inserted: [d], updated: [a, b], deleted: [c.key]))
        let byName = { (name: String) throws -> [Int64] in
            try store.fetch(FetchRequest(entity: "Tag", predicate: .comparison(.keyPath(["name"]), .equal, .constant(.string(name)), []))).map(\.primaryKey)
        }
        #expect(try byName("a") == [2])
        #expect(try byName("b") == [1])
        #expect(try byName("c") == [4])
        #expect(try LMDBFixture.backend.checkIntegrity(at: dir.path("swap.lmdb")).isEmpty)
    }

    @Test func equalityOnUniqueAttributesIsPlannedOnTheIndex() throws {
        let schema = try LMDBFixture.schema()
        let layout = try LMDBLayout(metadata: LMDBFixture.metadata(schema), existingIDs: [:])
        let work = try schema.requireEntity("Work")
        let novel = try schema.requireEntity("Novel")
        let author = try schema.requireEntity("Author")
        let plan = { (p: String, e: Entity) throws -> IndexPlanner.Plan? in
            IndexPlanner.plan(try FetchPredicate(p), entity: e, layout: layout)
        }
        #expect(try plan("isbn == 'a'", work)?.index.owner == "Work")
        #expect(try plan("pages > 3 AND isbn == 'a'", novel)?.keys.count == 1, "a sub-entity uses its ancestor's index")
        #expect(try plan("isbn IN {'a', 'b', 'a'}", work)?.keys.count == 2)
        #expect(try plan("name == 'x' AND country == 'y'", author) != nil)
        #expect(try plan("name == 'x'", author) == nil, "a compound index needs every attribute")
        #expect(try plan("isbn ==[c] 'a'", work) == nil, "folded comparisons are not identity")
        #expect(try plan("isbn == 'a' OR pages == 1", work) == nil)
        #expect(try plan("rating == 1", work) == nil)
        #expect(try plan("isbn == nil", work) == nil)
        // Constants listed exactly: an integer for an integer attribute; values that cannot be stored match nothing.
        #expect(IndexPlanner.storedValues(equalTo: .double(3), type: .integer16) == [.integer16(3)])
        #expect(IndexPlanner.storedValues(equalTo: .double(3.5), type: .integer32) == [])
        #expect(IndexPlanner.storedValues(equalTo: .integer64(70_000), type: .integer16) == [])
        #expect(IndexPlanner.storedValues(equalTo: .integer64(1), type: .boolean) == [.boolean(true)])
        #expect(IndexPlanner.storedValues(equalTo: .double(1e300), type: .integer64) == nil)
        #expect(IndexPlanner.storedValues(equalTo: .string("x"), type: .uuid) == nil)
    }

    @Test func longUniqueValuesAreIndexedByDigest() throws {
        let dir = try TemporaryDirectory("lmdb-tests")
        let schema = try LMDBFixture.schema()
        let f = LMDBFixture.self
        let store = try f.create(dir.path("long.lmdb"), schema: schema)
        defer { try? store.close() }
        let long = String(repeating: "x", count: 5000)
        try store.save(StoreChanges(inserted: [
            schema.record("Tag", 1, ["name": .string(long)]),
            schema.record("Tag", 2, ["name": .string(long + "y")]),
        ]))
        #expect(storeError { try store.save(StoreChanges(inserted: [schema.record("Tag", 3, ["name": .string(long)])])) }?.caseName == "uniquenessViolation")
        let found = try store.fetch(FetchRequest(entity: "Tag", predicate: .comparison(.keyPath(["name"]), .equal, .constant(.string(long + "y")), [])))
        #expect(found.map(\.primaryKey) == [2])
    }
}
