import Foundation
import StoreAPI
import StoreTestSupport
import Testing

/// Upgrades that move an entity within its inheritance hierarchy, out of it, or into another, on every store type:
/// records keep their primary keys and global IDs; what could break a link or a key is refused before anything is
/// written.
@Suite struct HierarchyMoveUpgradeTests {
    static let types = ["sqlite", "lmdb", "xml", "memory"]
    static let operations = SchemaUpgradeTests.operations

    static func attr(_ name: String, _ type: AttributeType = .string) -> AttributeDescription {
        AttributeDescription(name: name, type: type)
    }

    /// Item(name) ← Book(pages, reviews ↔ Review.book), Item ← Video(minutes); Review(text); Note(text);
    /// with `shelf`, Shelf(items ↔ Item.shelf).
    static func v1(shelf: Bool = false) throws -> Schema {
        var defs = [
            EntityDescription(name: "Item", attributes: [attr("name")],
                              relationships: shelf ? [RelationshipDescription(name: "shelf", destination: "Shelf", inverse: "items")] : []),
            EntityDescription(name: "Book", parent: "Item", attributes: [attr("pages", .integer32)],
                              relationships: [RelationshipDescription(name: "reviews", destination: "Review", inverse: "book", isToMany: true)]),
            EntityDescription(name: "Video", parent: "Item", attributes: [attr("minutes", .integer32)]),
            EntityDescription(name: "Review", attributes: [attr("text")],
                              relationships: [RelationshipDescription(name: "book", destination: "Book", inverse: "reviews")]),
            EntityDescription(name: "Note", attributes: [attr("text")]),
        ]
        if shelf {
            defs.append(EntityDescription(name: "Shelf", attributes: [attr("label")], relationships: [
                RelationshipDescription(name: "items", destination: "Item", inverse: "shelf", isToMany: true),
            ]))
        }
        return try Schema(entities: defs)
    }

    static func edited(_ schema: Schema, _ change: (inout [EntityDescription]) -> Void) throws -> Schema {
        var defs = schema.definitions
        change(&defs)
        return try Schema(entities: defs)
    }

    static func gid(_ n: Int) -> UUID { UUID(uuidString: String(format: "00000000-0000-0000-0000-%012d", n)) ?? UUID() }

    /// Two books (keys 1, 2) with a review each, a video (3), notes with keys `noteKeys`.
    static func makeStore(_ type: String, at url: URL, schema: Schema, noteKeys: [Int64] = [1, 2]) throws {
        let store = try Backends.registry.backend(for: type).open(at: url, options: StoreOptions(),
                                                                 creating: StoreMetadata(storeType: type, schema: schema))
        defer { try? store.close() }
        var records = [
            schema.record("Book", 1, ["name": "Dune", "pages": .integer32(412)], ["reviews": .toMany([1])], globalID: gid(1)),
            schema.record("Book", 2, ["name": "Kindred", "pages": .integer32(264)], ["reviews": .toMany([2])], globalID: gid(2)),
            schema.record("Video", 3, ["name": "Solaris", "minutes": .integer32(167)], globalID: gid(3)),
            schema.record("Review", 1, ["text": "long"], ["book": .toOne(1)], globalID: gid(4)),
            schema.record("Review", 2, ["text": "short"], ["book": .toOne(2)], globalID: gid(5)),
        ]
        for (i, k) in noteKeys.enumerated() {
            records.append(schema.record("Note", k, ["text": .string("note \(k)")], globalID: gid(10 + i)))
        }
        _ = try store.allocatePrimaryKeys(root: "Item", count: 3)
        _ = try store.allocatePrimaryKeys(root: "Review", count: 2)
        _ = try store.allocatePrimaryKeys(root: "Note", count: Int(noteKeys.max() ?? 0))
        try store.save(StoreChanges(inserted: records))
    }

    static func records(_ url: URL) throws -> [UUID: Record] {
        let store = try Backends.open(url, readOnly: true)
        defer { try? store.close() }
        #expect(try StoreVerifier().verify(store).isEmpty, "the upgraded store verifies")
        return try Backends.records(of: store)
    }

    @Test("a new intermediate parent: records stay in their hierarchy with their keys and links", arguments: types)
    func intermediateParent(_ type: String) throws {
        let dir = try TemporaryDirectory("move-within")
        let url = SchemaUpgradeTests.url(type, in: dir)
        defer { SchemaUpgradeTests.cleanUp(type, url) }
        let v1 = try Self.v1()
        try Self.makeStore(type, at: url, schema: v1)
        let v2 = try Self.edited(v1) { defs in
            defs.insert(EntityDescription(name: "Media", parent: "Item", isAbstract: true, attributes: [Self.attr("format")]), at: 1)
            if let i = defs.firstIndex(where: { $0.name == "Video" }) { defs[i].parent = "Media" }
        }
        let plan = try Self.operations.upgradeStore(at: url, to: v2)
        #expect(plan.entities.first { $0.name == "Video" }?.parentChange?.changesHierarchy == false)
        let after = try Self.records(url)
        #expect(after[Self.gid(3)]?.entity == "Video" && after[Self.gid(3)]?.primaryKey == 3)
        #expect(after[Self.gid(3)]?.attributes == [.string("Solaris"), .null, .integer32(167)], "name, the new format, minutes")
        #expect(after[Self.gid(1)]?.relationships == [.toMany([1])])
        let store = try Backends.open(url, readOnly: true)
        defer { try? store.close() }
        #expect(try store.count(FetchRequest(entity: "Item")) == 3)
        #expect(try store.count(FetchRequest(entity: "Media")) == 1)
    }

    @Test("a sub-entity becomes a root of its own: keys, values and links to it are kept", arguments: types)
    func subEntityBecomesRoot(_ type: String) throws {
        let dir = try TemporaryDirectory("move-out")
        let url = SchemaUpgradeTests.url(type, in: dir)
        defer { SchemaUpgradeTests.cleanUp(type, url) }
        let v1 = try Self.v1()
        try Self.makeStore(type, at: url, schema: v1)
        let v2 = try Self.edited(v1) { defs in
            if let i = defs.firstIndex(where: { $0.name == "Book" }) {
                defs[i].parent = nil
                defs[i].attributes.insert(Self.attr("name"), at: 0)
            }
        }
        let plan = try Self.operations.upgradeStore(at: url, to: v2)
        #expect(plan.entities.first { $0.name == "Book" }?.parentChange?.changesHierarchy == true)
        let after = try Self.records(url)
        #expect(after[Self.gid(1)]?.entity == "Book" && after[Self.gid(1)]?.primaryKey == 1)
        #expect(after[Self.gid(1)]?.attributes == [.string("Dune"), .integer32(412)], "the inherited name is the book's own now")
        #expect(after[Self.gid(4)]?.relationships == [.toOne(1)], "the review still finds its book")
        let store = try Backends.open(url, readOnly: true)
        defer { try? store.close() }
        #expect(try store.count(FetchRequest(entity: "Item")) == 1, "only the video is an item now")
        #expect(try store.count(FetchRequest(entity: "Book")) == 2)
    }

    @Test("leaving a hierarchy that a relationship may link into is refused before anything is written", arguments: types)
    func leavingLinkedHierarchyIsRefused(_ type: String) throws {
        let dir = try TemporaryDirectory("move-out-linked")
        let url = SchemaUpgradeTests.url(type, in: dir)
        defer { SchemaUpgradeTests.cleanUp(type, url) }
        let v1 = try Self.v1(shelf: true)
        try Self.makeStore(type, at: url, schema: v1)
        let before = try SchemaUpgradeTests.snapshot(type, url)
        let v2 = try Self.edited(v1) { defs in
            if let i = defs.firstIndex(where: { $0.name == "Video" }) {
                defs[i].parent = nil
                defs[i].attributes.insert(Self.attr("name"), at: 0)
            }
        }
        do {
            try Self.operations.upgradeStore(at: url, to: v2)
            Issue.record("the upgrade must be refused: Shelf.items may link videos")
        } catch StoreError.migrationRefused(_, let problems) {
            #expect(problems.contains { "\($0)".contains("Shelf.items") }, "\(problems)")
        }
        #expect(try SchemaUpgradeTests.snapshot(type, url) == before)
    }

    @Test("a root joins another hierarchy when no keys collide, and is refused when they do", arguments: types)
    func rootJoinsHierarchy(_ type: String) throws {
        let dir = try TemporaryDirectory("move-in")
        let v1 = try Self.v1()
        let v2 = try Self.edited(v1) { defs in
            if let i = defs.firstIndex(where: { $0.name == "Note" }) {
                defs[i].parent = "Item"
                defs[i].attributes.removeAll()
                defs[i].attributes = [Self.attr("text")]
            }
        }
        // Keys 1 and 2 are books' keys too.
        let colliding = dir.path("colliding.\(type)")
        defer { SchemaUpgradeTests.cleanUp(type, colliding) }
        try Self.makeStore(type, at: colliding, schema: v1)
        let before = try SchemaUpgradeTests.snapshot(type, colliding)
        do {
            try Self.operations.upgradeStore(at: colliding, to: v2)
            Issue.record("notes 1 and 2 would share keys with books 1 and 2")
        } catch StoreError.migrationRefused(_, let problems) {
            guard case .sharedPrimaryKeys(let root, let groups, let count)? = problems.first else {
                Issue.record("expected shared keys, got \(problems)")
                return
            }
            #expect(root == "Item" && count == 2)
            #expect(groups.first?.map(\.primaryKey) == [1, 1], "\(groups)")
        }
        #expect(try SchemaUpgradeTests.snapshot(type, colliding) == before)

        let apart = dir.path("apart.\(type)")
        defer { SchemaUpgradeTests.cleanUp(type, apart) }
        try Self.makeStore(type, at: apart, schema: v1, noteKeys: [10, 11])
        try Self.operations.upgradeStore(at: apart, to: v2)
        let after = try Self.records(apart)
        #expect(after[Self.gid(10)]?.entity == "Note" && after[Self.gid(10)]?.primaryKey == 10)
        #expect(after[Self.gid(10)]?.attributes == [.null, .string("note 10")], "name (new, inherited), text")
        let store = try Backends.open(apart, readOnly: true)
        defer { try? store.close() }
        #expect(try store.count(FetchRequest(entity: "Item")) == 5, "two books, a video and two notes")
    }
}
