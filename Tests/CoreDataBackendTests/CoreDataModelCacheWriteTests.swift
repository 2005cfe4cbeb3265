@_spi(BackendKit) @testable import CoreDataBackend
import Foundation
@_spi(BackendKit) import StoreAPI
import StoreTestSupport
import Testing

/// Created Core Data stores carry a real model cache (what Core Data reads) beside the framework's schema (what
/// this backend reads while it is current), and stores created before the cache was written still open.
@Suite struct CoreDataModelCacheWriteTests {
    static func schema() throws -> Schema {
        var definitions = try CoreDataWriteTests.schema().definitions
        for i in definitions.indices where definitions[i].name == "Book" {
            definitions[i].fetchIndexes = [FetchIndex(name: "byTitle", elements: [FetchIndex.Element(property: "title")])]
            definitions[i].attributes[1].isIndexed = true
        }
        return try Schema(entities: definitions)
    }

    static func plist(_ schema: Schema, json: Schema) throws -> CoreDataMetadata {
        var plist = try CoreDataMetadata(newStoreFor: CoreDataModel(schema: schema))
        plist.custom[CoreDataStoreBackend.schemaMetadataKey] = .data(try json.jsonData())
        return plist
    }

    @Test func createdStoreHasADecodableModelCache() throws {
        let dir = try TemporaryDirectory("coredata-cache-write")
        defer { dir.remove() }
        let url = dir.path("Library.sqlite")
        let schema = try Self.schema()
        let backend = CoreDataStoreBackend()
        try backend.open(at: url, options: StoreOptions(), creating: StoreMetadata(storeType: "coredata", schema: schema)).close()

        let file = try CoreDataStoreFile.read(at: url)
        let blob = try #require(file.modelCacheBlob)
        #expect(!blob.isEmpty)
        let cached = try CoreDataModelCache.decode(blob)
        let cachedSchema = try cached.schema()
        // The cache is the model Core Data would compile: same hashes as the metadata, same layout as the store's.
        #expect(cachedSchema.coreDataVersionHashes.entityHashes == file.metadata.versionHashes)
        #expect(try CoreDataLayout(model: cached).statements().sorted()
            == CoreDataLayout(model: CoreDataModel(schema: schema)).statements().sorted())
        #expect(cachedSchema.entity(named: "Book")?.definition.fetchIndexes == schema.entity(named: "Book")?.definition.fetchIndexes)
        #expect(try CoreDataWriteTests.rows(url, "SELECT name FROM sqlite_master WHERE name = 'Z_Book_byTitle' OR name = 'Z_Book_pages'")
            .count == 2)
        // Read back with the exact schema, which the metadata still keeps.
        #expect(file.metadata.custom[CoreDataStoreBackend.schemaMetadataKey] != nil)
        #expect(try backend.modelSource(ofStoreAt: url) == .embeddedSchema)
        #expect(try backend.readMetadata(at: url).schema == schema)
    }

    /// A created store keeps the digest of the cache it wrote (so that another process opening it need not decode
    /// the cache to know it is undamaged): hidden from custom metadata, kept when the metadata is rewritten, and a
    /// cache that no longer matches it is decoded — a damaged one refused.
    @Test func createdStoreKeepsItsModelCacheDigest() throws {
        let dir = try TemporaryDirectory("coredata-cache-digest")
        defer { dir.remove() }
        let url = dir.path("Library.sqlite")
        let schema = try Self.schema()
        let backend = CoreDataStoreBackend()
        try backend.open(at: url, options: StoreOptions(), creating: StoreMetadata(storeType: "coredata", schema: schema)).close()
        func digest() throws -> PropertyListValue? {
            try CoreDataStoreFile.read(at: url).metadata.custom[CoreDataStoreBackend.modelCacheDigestMetadataKey]
        }
        let blob = try #require(try CoreDataStoreFile.read(at: url).modelCacheBlob)
        #expect(try digest() == .data(Data(StoreDigest.sha256(blob))))

        var metadata = try backend.readMetadata(at: url)
        #expect(metadata.custom[CoreDataStoreBackend.modelCacheDigestMetadataKey] == nil)
        metadata.custom["note"] = .string("kept")
        try backend.writeMetadata(metadata, at: url)
        #expect(try digest() == .data(Data(StoreDigest.sha256(blob))))
        #expect(try backend.readMetadata(at: url).custom == ["note": .string("kept")])

        try CoreDataStoreFileTests.execute(url, "UPDATE Z_MODELCACHE SET Z_CONTENT = ?", blob: [0xFF, 0x00, 0x12, 0x34])
        CoreDataStoreFileTests.expectCorrupt(url, "Z_MODELCACHE") { _ = try backend.readMetadata(at: url) }
    }

    /// A store written before the encoder existed: an empty `Z_MODELCACHE`, the schema only in the metadata.
    @Test func storeWithoutACacheStillOpens() throws {
        let dir = try TemporaryDirectory("coredata-cache-write")
        defer { dir.remove() }
        let url = dir.path("Old.sqlite")
        let schema = try Self.schema()
        try CoreDataLayout.createEmptyStore(
            at: url, model: CoreDataModel(schema: schema), metadata: try Self.plist(schema, json: schema))
        #expect(try CoreDataStoreFile.read(at: url).modelCacheBlob == nil)
        let backend = CoreDataStoreBackend()
        #expect(try backend.modelSource(ofStoreAt: url) == .embeddedSchema)
        let store = try backend.open(at: url, options: StoreOptions(), creating: nil)
        defer { try? store.close() }
        #expect(store.metadata.schema == schema)
    }

    /// Once the store's model is another (Core Data migrated it), the stale schema in the metadata is ignored and
    /// the cache is read.
    @Test func staleEmbeddedSchemaGivesWayToTheCache() throws {
        let dir = try TemporaryDirectory("coredata-cache-write")
        defer { dir.remove() }
        let url = dir.path("Migrated.sqlite")
        let current = try Self.schema()
        var older = current.definitions
        older[0].attributes.removeLast()
        let stale = try Schema(entities: older)
        #expect(stale.coreDataVersionHashes.entityHashes != current.coreDataVersionHashes.entityHashes)
        let model = CoreDataModel(schema: current)
        try CoreDataLayout.createEmptyStore(
            at: url, model: model, metadata: try Self.plist(current, json: stale),
            modelCache: try CoreDataModelCache.encode(model))
        let backend = CoreDataStoreBackend()
        #expect(try backend.modelSource(ofStoreAt: url) == .modelCache)
        let read = try backend.readMetadata(at: url).schema
        #expect(read.coreDataVersionHashes.entityHashes == current.coreDataVersionHashes.entityHashes)
        #expect(read.entity(named: "Author")?.attribute("photo") != nil)
    }
}
