import Foundation
import LMDBBackend
import SQLiteBackend
@_spi(BackendKit) import StoreAPI
import StoreConformance
import StoreTestSupport
import Testing

/// SQLite's in-place upgrade (`ALTER TABLE`, no record rewritten) against the streaming upgrade every backend has:
/// the same store upgraded both ways, as SQLite in place and as an LMDB copy streamed through the plan, must hold
/// the same records, metadata and history — and the SQLite file must be the same file (in place) exactly when
/// the change only adds.
@Suite struct InPlaceUpgradeTests {
    static let operations = StoreOperations(registry: Backends.registry)

    typealias Variant = InPlaceUpgradeVariants.Variant
    static let date = InPlaceUpgradeVariants.date
    static let variants = InPlaceUpgradeVariants.variants

    /// The same records in a store of `type`: samples of every attribute type, a hierarchy, every relationship kind.
    static func populate(_ url: URL, type: String) throws {
        let schema = try ConformanceSchema.make()
        let coordinator = StoreCoordinator(schema: schema, registry: Backends.registry)
        var description = StoreDescription(url: url, type: type)
        description.options.historyTracking = true
        try coordinator.addStore(description)
        let ctx = coordinator.newContext()
        let tags = try (0..<4).map { try ctx.insert("Tag", ["name": .string("tag \($0)")]) }
        for a in 0..<5 {
            let author = try ctx.insert("Author", ["name": .string("author \(a)"), "country": a % 2 == 0 ? .string("NZ") : .null, "born": .integer16(Int16(1900 + a))])
            for w in 0..<3 {
                let entity = ["Book", "Novel", "Article"][(a + w) % 3]
                let work = try ctx.insert(entity, ["title": .string("work \(a).\(w)"), "pages": .integer32(Int32(100 * w + a)),
                                                  "rating": w == 1 ? .null : .double(Double(a) / 3)])
                try work.setObject(author, forKey: "author")
                try work.addObject(tags[(a + w) % 4], forKey: "tags")
            }
            try author.addObject(tags[a % 4], forKey: "favorites")
        }
        for i in 0..<3 {
            try ctx.insert("Sample", ["i16": .integer16(Int16(i)), "dbl": .double(-0.0), "str": i == 0 ? .null : .string("s\(i)"), "when": .date(date)])
        }
        try ctx.save()
        for store in coordinator.stores { try coordinator.removeStore(store) }
    }

    static func inode(_ url: URL) -> UInt64 {
        var st = stat()
        return stat(url.path, &st) == 0 ? UInt64(st.st_ino) : 0
    }

    @Test("SQLite upgrades in place exactly when the change only adds; both ways give the same store", arguments: variants)
    func inPlaceMatchesStreaming(_ variant: Variant) throws {
        let dir = try TemporaryDirectory("inplace")
        let sqlite = dir.path("store.sqlite")
        let lmdb = dir.path("store.lmdb")
        try Self.populate(sqlite, type: "sqlite")
        try Self.operations.copyStore(from: sqlite, to: lmdb, type: "lmdb")
        var defs = try ConformanceSchema.make().definitions
        variant.change(&defs)
        let next = try Schema(entities: defs)

        let file = Self.inode(sqlite)
        try Self.operations.upgradeStore(at: sqlite, to: next)
        try Self.operations.upgradeStore(at: lmdb, to: next)
        #expect((Self.inode(sqlite) == file) == variant.inPlace, "\(variant.name): in place must be \(variant.inPlace)")

        let a = try Backends.open(sqlite, readOnly: true)
        defer { try? a.close() }
        let b = try Backends.open(lmdb, readOnly: true)
        defer { try? b.close() }
        #expect(a.metadata.versionHashes == next.versionHashes)
        let differences = try StoreComparison().compare(a, b)
        #expect(differences.isIdentical, "\(variant.name): the in-place and streamed upgrades differ:\n\(differences)")
        #expect(try SQLiteStoreBackend().checkIntegrity(at: sqlite).isEmpty)
        #expect(try StoreVerifier().verify(a).isEmpty, "\(variant.name): the upgraded store verifies")
    }

    @Test("a store upgraded in place takes records in its new attributes, entities and relationships")
    func upgradedStoreIsUsable() throws {
        let dir = try TemporaryDirectory("inplace")
        let url = dir.path("store.sqlite")
        try Self.populate(url, type: "sqlite")
        var defs = try ConformanceSchema.make().definitions
        for v in Self.variants.prefix(5) { v.change(&defs) }
        let next = try Schema(entities: defs)
        let file = Self.inode(url)
        try Self.operations.upgradeStore(at: url, to: next)
        #expect(Self.inode(url) == file, "five additive changes at once are made in place")

        let coordinator = StoreCoordinator(schema: next, registry: Backends.registry)
        try coordinator.addStore(StoreDescription(url: url, type: "sqlite"))
        let ctx = coordinator.newContext()
        let author = try #require(try ctx.fetch(FetchRequest(entity: "Author", predicate: try FetchPredicate("name == 'author 1'"))).first)
        let shelf = try ctx.insert("Shelf", ["label": "top"])
        try shelf.setObject(author, forKey: "owner")
        let poem = try ctx.insert("Poem", ["title": "Ode", "meter": "iambic", "language": "la"])
        try poem.setObject(author, forKey: "author")
        try author.setValue("a@example.com", forKey: "email")
        let sample = try #require(try ctx.fetch(FetchRequest(entity: "Sample")).first)
        #expect(try sample.value(forKey: "s") == .string("it's \"ü\""), "an existing record reads the added attribute's default")
        #expect(try sample.value(forKey: "f") == .float(1.1))
        #expect(try sample.value(forKey: "d") == .double(0.1))
        try sample.setValue(.integer64(5), forKey: "n64")
        try ctx.save()
        for store in coordinator.stores { try coordinator.removeStore(store) }

        let reopened = StoreCoordinator(schema: next, registry: Backends.registry)
        try reopened.addStore(StoreDescription(url: url, type: "sqlite"))
        let r = reopened.newContext()
        let shelves = try r.fetch(FetchRequest(entity: "Shelf"))
        #expect(shelves.count == 1)
        #expect(try shelves.first?.object(forKey: "owner")?.value(forKey: "name") == "author 1")
        #expect(try r.count(FetchRequest(entity: "Poem")) == 1)
        #expect(try r.count(FetchRequest(entity: "Work", predicate: try FetchPredicate("language == 'en'"))) == 15)
        #expect(try r.count(FetchRequest(entity: "Sample", predicate: try FetchPredicate("n64 == 5"))) == 1)
        for store in reopened.stores { try reopened.removeStore(store) }
    }

    @Test("a store someone has open is refused and left as it was, unless forced")
    func storeInUseIsRefused() throws {
        let dir = try TemporaryDirectory("inplace")
        let url = dir.path("store.sqlite")
        try Self.populate(url, type: "sqlite")
        let v1 = try ConformanceSchema.make()
        var defs = v1.definitions
        Self.variants[0].change(&defs)
        let next = try Schema(entities: defs)
        let holder = StoreCoordinator(schema: v1, registry: Backends.registry)
        let held = try holder.addStore(StoreDescription(url: url, type: "sqlite"))
        #expect(throws: StoreError.self) { try Self.operations.upgradeStore(at: url, to: next) }
        #expect(try SQLiteStoreBackend().readMetadata(at: url).versionHashes == v1.versionHashes)
        try holder.removeStore(held)
        try Self.operations.upgradeStore(at: url, to: next)
        #expect(try SQLiteStoreBackend().readMetadata(at: url).versionHashes == next.versionHashes)
    }
}
