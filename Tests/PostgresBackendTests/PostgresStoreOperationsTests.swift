import Foundation
import LMDBBackend
@testable import PostgresBackend
@_spi(BackendKit) import StoreAPI
import StoreConformance
import StoreTestSupport
import Testing

/// Store operations between stores on the server: a copy in the same database is made inside PostgreSQL (rows never
/// leave the server), a copy or relocation to another database is streamed, and each gives the same store.
@Suite(.enabled(if: PostgresTestServer.isAvailable, PostgresTestServer.skipReason))
struct PostgresStoreOperationsTests {
    static let registry = BackendRegistry(backends: [PostgresStoreBackend(), LMDBStoreBackend()])
    static let operations = StoreOperations(registry: registry)

    static func open(_ url: URL) throws -> any PersistentStore {
        try registry.detectBackend(at: url).open(at: url, options: StoreOptions(isReadOnly: true, createIfMissing: false), creating: nil)
    }

    static func expectIdentical(_ a: URL, _ b: URL, _ what: String) throws {
        let x = try open(a)
        defer { try? x.close() }
        let y = try open(b)
        defer { try? y.close() }
        let differences = try StoreComparison().compare(x, y)
        #expect(differences.isIdentical, "\(what): \(differences)")
        #expect(try StoreVerifier().verify(y).isEmpty, "\(what): the copy verifies")
    }

    /// The same database: the backend's in-server copy (checked directly, and refused for another database so that
    /// the operation streams instead), through ``StoreOperations/copyStore(from:sourceType:to:type:options:)`` —
    /// also of a store whose tables an in-place upgrade grew, so their columns are in another order than a new
    /// store's.
    @Test func copyInsideTheServer() throws {
        let server = try PostgresTestServer.shared()
        let source = server.storeURL("copysrc")
        let direct = server.storeURL("copydirect")
        let copied = server.storeURL("copyop")
        defer { for u in [source, direct, copied] { try? PostgresStoreBackend().destroyStore(at: u) } }
        try PostgresInPlaceUpgradeTests.populate(source)
        var defs = try ConformanceSchema.make().definitions
        for v in InPlaceUpgradeVariants.variants.prefix(5) { v.change(&defs) }
        try Self.operations.upgradeStore(at: source, to: try Schema(entities: defs))

        try PostgresStoreBackend().copyStore(from: source, to: direct)
        try Self.expectIdentical(source, direct, "the in-server copy")
        let other = try #require(URL(string: source.absoluteString.replacingOccurrences(of: "/postgres?", with: "/template1?")))
        #expect(throws: StoreError.self, "another database is not copied inside the server") {
            try PostgresStoreBackend().copyStore(from: source, to: PostgresLocation(other).withSchema("x"))
        }

        try Self.operations.copyStore(from: source, to: copied)
        try Self.expectIdentical(source, copied, "the copy operation")
        // The copy is a store of its own: a save to it leaves the source as it was.
        let c = StoreCoordinator(schema: try Schema(entities: defs), registry: Self.registry)
        try c.addStore(StoreDescription(url: copied, type: PostgresStoreBackend.typeIdentifier))
        let ctx = c.newContext()
        try ctx.insert("Tag", ["name": "only in the copy"])
        try ctx.save()
        for s in c.stores { try c.removeStore(s) }
        let a = try Self.open(source)
        defer { try? a.close() }
        #expect(try a.count(FetchRequest(entity: "Tag")) == 4)
    }

    /// A store relocated to another database of the server: streamed there, identical to the original, gone from
    /// where it was.
    @Test func relocateToAnotherDatabase() throws {
        let server = try PostgresTestServer.shared()
        let source = server.storeURL("relocsrc")
        let reference = server.storeURL("relocref")
        defer { for u in [source, reference] { try? PostgresStoreBackend().destroyStore(at: u) } }
        let database = "reloc_\(UUID().uuidString.prefix(8).lowercased())"
        let admin = try PostgresConnection(PostgresLocation(source), connectTimeout: 5)
        defer { admin.close() }
        try admin.execute("CREATE DATABASE \(database)")
        defer { _ = try? admin.execute("DROP DATABASE \(database) WITH (FORCE)") }
        let target = try #require(URL(string: source.absoluteString.replacingOccurrences(of: "/postgres?", with: "/\(database)?")))
        try PostgresInPlaceUpgradeTests.populate(source)
        try Self.operations.copyStore(from: source, to: reference)

        #expect(try Self.operations.relocateStore(from: source, to: target) == .moved)
        #expect(PostgresStoreBackend().sniff(source) == .none, "the old store is gone")
        try Self.expectIdentical(reference, target, "the relocated store")
        try PostgresStoreBackend().destroyStore(at: target)
    }

    /// An upgrade through several versions runs in a staging schema: refused at its last step (for records the
    /// plan cannot see), the store is as it was, not at the version between; otherwise it is upgraded whole.
    @Test func chainUpgradeIsAllOrNothing() throws {
        let server = try PostgresTestServer.shared()
        let url = server.storeURL("chain")
        let reference = server.storeURL("chainref")
        defer { for u in [url, reference] { try? PostgresStoreBackend().destroyStore(at: u) } }
        let v1 = try EvolutionSchemas.v1()
        let coordinator = StoreCoordinator(schema: v1, registry: Self.registry)
        try coordinator.addStore(StoreDescription(url: url, type: PostgresStoreBackend.typeIdentifier))
        let ctx = coordinator.newContext()
        let author = try ctx.insert("Author", ["name": .string("Le Guin"), "age": .integer16(88)])
        for (title, isbn) in [("The Dispossessed", StoreValue.string("978-0061054884")), ("Untitled", .null)] {
            let book = try ctx.insert("Book", ["title": .string(title), "isbn": isbn])
            try book.setObject(author, forKey: "author")
        }
        try ctx.save()
        for store in coordinator.stores { try coordinator.removeStore(store) }
        try Self.operations.copyStore(from: url, to: reference)

        let middle = try EvolutionSchemas.v1WiderAge()
        let isbnRequired = try EvolutionSchemas.requiringISBN(after: middle)
        do {
            try Self.operations.upgradeStore(at: url, through: SchemaVersionChain(versions: [("v1", v1), ("v1.5", middle), ("v1.6", isbnRequired)]))
            Issue.record("expected a refusal at v1.5 → v1.6: a book has no isbn")
        } catch StoreError.migrationRefused(let at, let problems) {
            #expect(at == url)
            #expect(problems.count == 1 && problems.allSatisfy { if case .missingValues("Book", "isbn", _, 1) = $0 { true } else { false } }, "\(problems)")
        }
        #expect(try PostgresStoreBackend().readMetadata(at: url).versionHashes == v1.versionHashes, "not left at v1.5")
        try Self.expectIdentical(reference, url, "the store after a refused chain")

        let v2 = try EvolutionSchemas.v2()
        let steps = try Self.operations.upgradeStore(at: url, through: SchemaVersionChain(versions: [("v1", v1), ("v1.5", middle), ("v2", v2)]))
        #expect(steps.map(\.to) == ["v1.5", "v2"])
        let upgraded = try Self.open(url)
        defer { try? upgraded.close() }
        #expect(upgraded.metadata.versionHashes == v2.versionHashes)
        let titles = try upgraded.fetch(FetchRequest(entity: "Title"))
        #expect(Set(titles.map { $0.attributes[0] }) == [.string("The Dispossessed"), .string("Untitled")])
    }
}
