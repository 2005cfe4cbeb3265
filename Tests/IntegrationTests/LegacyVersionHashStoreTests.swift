import Foundation
import StoreAPI
import StoreTestSupport
import Testing

/// Stores written before version hashes became Core Data's hold the legacy hash (metadata format 1). Every store
/// type keeps opening them with the schema they were written with, refuses them with a changed one, and saves to
/// them without rewriting their hashes; new stores of every type carry Core Data's hashes (format 2).
@Suite struct LegacyVersionHashStoreTests {
    static let types = ["sqlite", "lmdb", "xml", "memory"]

    static func schema(bookAttributes: [String] = ["title"]) throws -> Schema {
        try Schema(entities: [
            EntityDescription(name: "Item", isAbstract: true, attributes: [AttributeDescription(name: "created", type: .date)]),
            EntityDescription(
                name: "Book", parent: "Item",
                attributes: bookAttributes.map { AttributeDescription(name: $0, type: .string) },
                relationships: [RelationshipDescription(name: "shelf", destination: "Shelf", inverse: "books")]),
            EntityDescription(
                name: "Shelf", attributes: [AttributeDescription(name: "label", type: .string)],
                relationships: [RelationshipDescription(name: "books", destination: "Book", inverse: "shelf", isToMany: true, isOrdered: true)]),
        ])
    }

    /// A URL for a store of `type` in `dir` (a named in-memory store for `memory`, which writes no file there).
    static func url(_ type: String, in dir: TemporaryDirectory, _ name: String = "old") -> URL {
        dir.path("\(name).\(type)")
    }

    static func description(_ url: URL, _ type: String) -> StoreDescription {
        StoreDescription(url: url, type: type, options: StoreOptions(createIfMissing: false))
    }

    @Test("a legacy store opens with its schema, saves, and is refused with a changed one", arguments: types)
    func legacyStoreOpensAndIsChecked(_ type: String) throws {
        let dir = try TemporaryDirectory("legacy-hash")
        defer { dir.remove() }
        let url = Self.url(type, in: dir)
        defer { if type == "memory" { try? InMemoryBackend().destroyStore(at: url) } }
        let schema = try Self.schema()
        let backend = try Backends.registry.backend(for: type)
        try backend.open(at: url, options: StoreOptions(),
                         creating: .writtenWithLegacyVersionHashes(storeType: type, schema: schema)).close()

        // The store really holds the legacy hashes, which are not the schema's current ones: opening below must take
        // the legacy path.
        let stored = try backend.readMetadata(at: url)
        #expect(stored.formatVersion == 1 && stored.hasLegacyVersionHashes)
        #expect(stored.versionHashes.keys.sorted() == ["Book", "Item", "Shelf"])
        #expect(stored.versionHashes.allSatisfy { schema.versionHashes[$0.key] != $0.value })

        let coordinator = StoreCoordinator(schema: schema, registry: Backends.registry)
        let loaded = try coordinator.addStore(Self.description(url, type))
        let context = coordinator.newContext()
        let shelf = try context.insert("Shelf", ["label": "A"])
        let book = try context.insert("Book", ["title": "The Dispossessed"])
        try book.setObject(shelf, forKey: "shelf")
        try context.save()
        try coordinator.removeStore(loaded)

        // A save keeps the store's format: its hashes still say what they are.
        let after = try backend.readMetadata(at: url)
        #expect(after.formatVersion == 1 && after.versionHashes == stored.versionHashes)

        let again = StoreCoordinator(schema: schema, registry: Backends.registry)
        let reopened = try again.addStore(Self.description(url, type))
        let reading = again.newContext()
        #expect(try reading.fetch("Book").map { try $0.value(forKey: "title") } == [.string("The Dispossessed")])
        try again.removeStore(reopened)

        let changed = StoreCoordinator(schema: try Self.schema(bookAttributes: ["title", "isbn"]), registry: Backends.registry)
        let error = try #require(throws: StoreError.self) { try changed.addStore(Self.description(url, type)) }
        guard case .incompatibleSchema(_, let entities) = error else { Issue.record("\(error)"); return }
        #expect(entities == ["Book"])
    }

    @Test("a new store records Core Data's hashes in format 2", arguments: types)
    func newStoresCarryCoreDataHashes(_ type: String) throws {
        let dir = try TemporaryDirectory("legacy-hash")
        defer { dir.remove() }
        let url = Self.url(type, in: dir, "new")
        defer { if type == "memory" { try? InMemoryBackend().destroyStore(at: url) } }
        let schema = try Self.schema()
        let coordinator = StoreCoordinator(schema: schema, registry: Backends.registry)
        try coordinator.removeStore(try coordinator.addStore(StoreDescription(url: url, type: type)))

        let stored = try Backends.registry.backend(for: type).readMetadata(at: url)
        #expect(stored.formatVersion == StoreMetadata.currentFormatVersion && !stored.hasLegacyVersionHashes)
        #expect(stored.versionHashes == schema.coreDataVersionHashes.base64EntityHashes)

        let changed = StoreCoordinator(schema: try Self.schema(bookAttributes: ["title", "isbn"]), registry: Backends.registry)
        let error = try #require(throws: StoreError.self) { try changed.addStore(Self.description(url, type)) }
        guard case .incompatibleSchema(_, let entities) = error else { Issue.record("\(error)"); return }
        #expect(entities == ["Book"])
    }

    /// Converting a legacy store carries its metadata as it is (hashes and format together), so the copy opens
    /// with the same schema in any other type.
    @Test("a legacy store converts to every other type and still opens", arguments: types)
    func legacyStoreConverts(_ type: String) throws {
        let dir = try TemporaryDirectory("legacy-hash")
        defer { dir.remove() }
        let source = Self.url("sqlite", in: dir)
        let destination = Self.url(type, in: dir, "converted")
        defer { if type == "memory" { try? InMemoryBackend().destroyStore(at: destination) } }
        let schema = try Self.schema()
        try Backends.registry.backend(for: "sqlite").open(
            at: source, options: StoreOptions(),
            creating: .writtenWithLegacyVersionHashes(storeType: "sqlite", schema: schema)).close()

        let coordinator = StoreCoordinator(schema: schema, registry: Backends.registry)
        let loaded = try coordinator.addStore(Self.description(source, "sqlite"))
        let context = coordinator.newContext()
        _ = try context.insert("Shelf", ["label": "B"])
        try context.save()
        let migrated = try coordinator.migrateStore(loaded, to: destination, type: type)
        #expect(migrated.store.metadata.hasLegacyVersionHashes)
        try coordinator.removeStore(migrated)

        let other = StoreCoordinator(schema: schema, registry: Backends.registry)
        let opened = try other.addStore(Self.description(destination, type))
        let reading = other.newContext()
        #expect(try reading.fetch("Shelf").count == 1)
        try other.removeStore(opened)
    }
}
