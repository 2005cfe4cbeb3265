import Foundation
import LMDBBackend
@testable import PostgresBackend
@_spi(BackendKit) import StoreAPI
import StoreConformance
import StoreTestSupport
import Testing

/// PostgreSQL's in-place upgrade (`ALTER TABLE` in one transaction, no record rewritten) against the streaming
/// upgrade: the same store upgraded both ways, in place on the server and as an LMDB copy streamed through the plan,
/// must hold the same records, metadata and history — and the store's schema must be the same PostgreSQL schema
/// (same OID: not a staged copy renamed into place) exactly when the change only adds.
@Suite(.enabled(if: PostgresTestServer.isAvailable, PostgresTestServer.skipReason))
struct PostgresInPlaceUpgradeTests {
    static let registry = BackendRegistry(backends: [PostgresStoreBackend(), LMDBStoreBackend()])
    static let operations = StoreOperations(registry: registry)

    /// Samples of every attribute type, a hierarchy, every relationship kind, with history.
    static func populate(_ url: URL) throws {
        let coordinator = StoreCoordinator(schema: try ConformanceSchema.make(), registry: registry)
        var description = StoreDescription(url: url, type: PostgresStoreBackend.typeIdentifier)
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
            try ctx.insert("Sample", ["i16": .integer16(Int16(i)), "dbl": .double(-0.0), "str": i == 0 ? .null : .string("s\(i)"),
                                      "when": .date(InPlaceUpgradeVariants.date)])
        }
        try ctx.save()
        for store in coordinator.stores { try coordinator.removeStore(store) }
    }

    /// The OID of the store's PostgreSQL schema: a streamed upgrade puts a new schema in its place.
    static func schemaOID(_ url: URL) throws -> String? {
        let c = try PostgresConnection(PostgresLocation(url), connectTimeout: 5)
        defer { c.close() }
        return try c.execute("SELECT oid::text FROM pg_catalog.pg_namespace WHERE nspname = $1", [PostgresLocation(url).schema]).text(0, 0)
    }

    @Test("PostgreSQL upgrades in place exactly when the change only adds; both ways give the same store",
          arguments: InPlaceUpgradeVariants.variants)
    func inPlaceMatchesStreaming(_ variant: InPlaceUpgradeVariants.Variant) throws {
        let url = try PostgresTestServer.shared().storeURL("inplace")
        defer { try? PostgresStoreBackend().destroyStore(at: url) }
        let dir = try TemporaryDirectory("pg-inplace")
        let lmdb = dir.path("store.lmdb")
        try Self.populate(url)
        try Self.operations.copyStore(from: url, to: lmdb, type: "lmdb")
        var defs = try ConformanceSchema.make().definitions
        variant.change(&defs)
        let next = try Schema(entities: defs)

        let before = try Self.schemaOID(url)
        try Self.operations.upgradeStore(at: url, to: next)
        try Self.operations.upgradeStore(at: lmdb, to: next)
        #expect((try Self.schemaOID(url) == before) == variant.inPlace, "\(variant.name): in place must be \(variant.inPlace)")

        let a = try PostgresStoreBackend().open(at: url, options: StoreOptions(isReadOnly: true, createIfMissing: false), creating: nil)
        defer { try? a.close() }
        let b = try LMDBStoreBackend().open(at: lmdb, options: StoreOptions(isReadOnly: true, createIfMissing: false), creating: nil)
        defer { try? b.close() }
        #expect(a.metadata.versionHashes == next.versionHashes)
        let differences = try StoreComparison().compare(a, b)
        #expect(differences.isIdentical, "\(variant.name): the in-place and streamed upgrades differ:\n\(differences)")
        #expect(try StoreVerifier().verify(a).isEmpty, "\(variant.name): the upgraded store verifies")
    }

    @Test("a store upgraded in place takes records in its new attributes, entities and relationships")
    func upgradedStoreIsUsable() throws {
        let url = try PostgresTestServer.shared().storeURL("inplaceuse")
        defer { try? PostgresStoreBackend().destroyStore(at: url) }
        try Self.populate(url)
        var defs = try ConformanceSchema.make().definitions
        for v in InPlaceUpgradeVariants.variants.prefix(5) { v.change(&defs) }
        let next = try Schema(entities: defs)
        let before = try Self.schemaOID(url)
        try Self.operations.upgradeStore(at: url, to: next)
        #expect(try Self.schemaOID(url) == before, "five additive changes at once are made in place")

        let coordinator = StoreCoordinator(schema: next, registry: Self.registry)
        try coordinator.addStore(StoreDescription(url: url, type: PostgresStoreBackend.typeIdentifier))
        let ctx = coordinator.newContext()
        let author = try #require(try ctx.fetch(FetchRequest(entity: "Author", predicate: try FetchPredicate("name == 'author 1'"))).first)
        let shelf = try ctx.insert("Shelf", ["label": "top"])
        try shelf.setObject(author, forKey: "owner")
        let poem = try ctx.insert("Poem", ["title": "Ode", "meter": "iambic", "language": "la"])
        try poem.setObject(author, forKey: "author")
        try author.setValue("a@example.com", forKey: "email")
        let sample = try #require(try ctx.fetch(FetchRequest(entity: "Sample")).first)
        #expect(try sample.value(forKey: "s") == .string("it's \"ü\""), "an existing record reads the added attribute's default")
        #expect(try sample.value(forKey: "b") == .binary(Data([0, 1, 0xFF])))
        #expect(try sample.value(forKey: "f") == .float(1.1))
        #expect(try sample.value(forKey: "d") == .double(0.1))
        try sample.setValue(.integer64(5), forKey: "n64")
        try ctx.save()
        for store in coordinator.stores { try coordinator.removeStore(store) }

        let reopened = StoreCoordinator(schema: next, registry: Self.registry)
        try reopened.addStore(StoreDescription(url: url, type: PostgresStoreBackend.typeIdentifier))
        let r = reopened.newContext()
        let shelves = try r.fetch(FetchRequest(entity: "Shelf"))
        #expect(shelves.count == 1)
        #expect(try shelves.first?.object(forKey: "owner")?.value(forKey: "name") == "author 1")
        #expect(try r.count(FetchRequest(entity: "Poem")) == 1)
        #expect(try r.count(FetchRequest(entity: "Work", predicate: try FetchPredicate("language == 'en'"))) == 15)
        #expect(try r.count(FetchRequest(entity: "Sample", predicate: try FetchPredicate("n64 == 5"))) == 1)
        for store in reopened.stores { try reopened.removeStore(store) }
    }
}
