import Foundation
import StoreTestSupport
import Testing
@_spi(BackendKit) import StoreAPI

/// Which version hash stored metadata carries, by its format version: new stores Core Data's, stores written before
/// the change the legacy hash, checked with the legacy algorithm; later formats are refused rather than misread.
struct MetadataVersionHashFormatTests {
    static func schema(bookAttributes: [String] = ["title"]) throws -> Schema {
        try Schema(entities: [
            EntityDescription(name: "Item", isAbstract: true, attributes: [AttributeDescription(name: "created", type: .date)]),
            EntityDescription(
                name: "Book", parent: "Item",
                attributes: bookAttributes.map { AttributeDescription(name: $0, type: .string) },
                relationships: [RelationshipDescription(name: "shelf", destination: "Shelf", inverse: "books")]),
            EntityDescription(
                name: "Shelf", attributes: [AttributeDescription(name: "label", type: .string)],
                relationships: [RelationshipDescription(name: "books", destination: "Book", inverse: "shelf", isToMany: true, isOrdered: true)],
                uniquenessConstraints: [["label"]]),
        ])
    }

    static let url = URL(fileURLWithPath: "/tmp/hash-format.sqlite")

    @Test func newMetadataCarriesCoreDataHashes() throws {
        let schema = try Self.schema()
        let metadata = StoreMetadata(storeType: "sqlite", schema: schema)
        #expect(metadata.formatVersion == StoreMetadata.currentFormatVersion)
        #expect(!metadata.hasLegacyVersionHashes)
        #expect(metadata.versionHashes == schema.coreDataVersionHashes.base64EntityHashes)
        let back = try StoreMetadata.decode(try metadata.encoded(), url: Self.url)
        #expect(back.formatVersion == StoreMetadata.currentFormatVersion)
        #expect(back.mismatchedEntities(schema.entities).isEmpty)
        #expect(back.incompatibleEntities(with: schema).isEmpty)
        let changed = try Self.schema(bookAttributes: ["title", "isbn"])
        #expect(back.mismatchedEntities(changed.entities) == ["Book"])
        #expect(back.incompatibleEntities(with: changed) == ["Book"])
    }

    @Test func legacyMetadataIsCheckedWithTheLegacyHash() throws {
        let schema = try Self.schema()
        let written = StoreMetadata.writtenWithLegacyVersionHashes(storeType: "sqlite", schema: schema)
        let data = try written.encoded()
        // What such a store holds: layout 1 and 64-digit hex hashes, none of them Core Data's.
        let object = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        #expect(object["formatVersion"] as? Int == 1)
        let stored = try #require(object["versionHashes"] as? [String: String])
        #expect(stored.values.allSatisfy { $0.count == 64 && $0.allSatisfy(\.isHexDigit) })
        #expect(Set(stored.values).isDisjoint(with: schema.versionHashes.values))

        let read = try StoreMetadata.decode(data, url: Self.url)
        #expect(read.hasLegacyVersionHashes)
        #expect(read.versionHashes == stored)
        #expect(read.mismatchedEntities(schema.entities).isEmpty)
        #expect(read.incompatibleEntities(with: schema).isEmpty)
        for entity in schema.entities { #expect(read.versionHash(of: entity) == stored[entity.name]) }
        // A change the legacy hash covers is still caught, on the entity that changed.
        let changed = try Self.schema(bookAttributes: ["title", "isbn"])
        #expect(read.mismatchedEntities(changed.entities) == ["Book"])
        #expect(read.incompatibleEntities(with: changed) == ["Book"])
    }

    @Test func entitiesMissingOnEitherSideAreIncompatible() throws {
        let schema = try Self.schema()
        for var metadata in [StoreMetadata(storeType: "sqlite", schema: schema),
                             StoreMetadata.writtenWithLegacyVersionHashes(storeType: "sqlite", schema: schema)] {
            metadata.versionHashes["Gone"] = metadata.versionHashes["Shelf"]
            metadata.versionHashes["Shelf"] = nil
            #expect(metadata.incompatibleEntities(with: schema) == ["Gone", "Shelf"])
            #expect(metadata.mismatchedEntities(schema.entities) == ["Shelf"])
        }
    }

    @Test("a format this version does not know is refused, naming the store", arguments: [0, -1, StoreMetadata.currentFormatVersion + 1])
    func unknownFormatsAreRefused(_ version: Int) throws {
        var metadata = StoreMetadata(storeType: "sqlite", schema: try Self.schema())
        metadata.formatVersion = version
        let error = try #require(throws: StoreError.self) { try StoreMetadata.decode(try metadata.encoded(), url: Self.url) }
        guard case .corruptStore(let url, let reason) = error else { Issue.record("\(error)"); return }
        #expect(url == Self.url)
        #expect(reason.contains("metadata format version \(version) is not one this version reads (1 to \(StoreMetadata.currentFormatVersion))"))
    }

    /// Through the coordinator, on a named in-memory store: a legacy store opens with its schema and is refused
    /// with a changed one, naming the entity.
    @Test func coordinatorOpensLegacyStoresAndRefusesChangedSchemas() throws {
        let schema = try Self.schema()
        let url = MemoryStores.newURL()
        defer { MemoryStores.destroy(url) }
        try InMemoryBackend().open(at: url, options: StoreOptions(), creating: .writtenWithLegacyVersionHashes(storeType: "memory", schema: schema)).close()

        let same = StoreCoordinator(schema: schema, registry: MemoryStores.registry)
        let loaded = try same.addStore(StoreDescription(url: url, type: "memory"))
        #expect(loaded.store.metadata.hasLegacyVersionHashes)
        try same.removeStore(loaded)

        let changed = StoreCoordinator(schema: try Self.schema(bookAttributes: ["subtitle"]), registry: MemoryStores.registry)
        let error = try #require(throws: StoreError.self) { try changed.addStore(StoreDescription(url: url, type: "memory")) }
        guard case .incompatibleSchema(_, let entities) = error else { Issue.record("\(error)"); return }
        #expect(entities == ["Book"])
    }
}
