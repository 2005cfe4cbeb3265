@_spi(BackendKit) import CoreDataBackend
import Foundation
@_spi(BackendKit) import StoreAPI
import StoreTestSupport
import Testing

/// A store this process created is opened without decoding back the model cache and the schema it just wrote (every
/// conversion to `coredata` creates a store and opens it). Only the exact bytes written are taken on trust: a cache
/// changed since, in this process too, is decoded and a damaged one is still a corrupt store.
@Suite struct CoreDataCreatedStoreTests {
    static func schema() throws -> Schema {
        try Schema(entities: [
            EntityDescription(name: "Person", attributes: [AttributeDescription(name: "name", type: .string)]),
            EntityDescription(
                name: "Author", parent: "Person",
                attributes: [AttributeDescription(name: "born", type: .date)],
                relationships: [RelationshipDescription(name: "books", destination: "Book", inverse: "author",
                                                        isToMany: true, isOrdered: true)]),
            EntityDescription(
                name: "Book",
                attributes: [AttributeDescription(name: "title", type: .string, isOptional: false, defaultValue: .string("Untitled")),
                             AttributeDescription(name: "price", type: .decimal, defaultValue: .decimal(Decimal(string: "12.50") ?? 0))],
                relationships: [RelationshipDescription(name: "author", destination: "Author", inverse: "books")]),
        ])
    }

    @Test func aCreatedStoreOpensWithItsSchemaAndAChangedCacheIsDecodedAgain() throws {
        let dir = try TemporaryDirectory("coredata-created")
        let url = dir.path("New.sqlite")
        let schema = try Self.schema()
        let backend = CoreDataStoreBackend()
        let store = try backend.open(at: url, options: StoreOptions(), creating: StoreMetadata(storeType: "coredata", schema: schema))
        try store.close()

        // Opened again in this process: the schema written, read as any store this backend created is read.
        #expect(try backend.modelSource(ofStoreAt: url) == .embeddedSchema)
        let metadata = try backend.readMetadata(at: url)
        #expect(metadata.schema == schema)
        #expect(metadata.versionHashes == schema.versionHashes)
        let reopened = try backend.open(at: url, options: StoreOptions(), creating: nil)
        #expect(reopened.metadata.schema == schema)
        try reopened.close()
        let written = try #require(try CoreDataStoreFile.read(at: url).modelCacheBlob)
        #expect(try CoreDataModelCache.decode(written).schema().versionHashes == schema.versionHashes)

        // The cache damaged after it was written: this process decodes it again and refuses the store.
        try CoreDataStoreFileTests.execute(url, "UPDATE Z_MODELCACHE SET Z_CONTENT = ?", blob: [0xFF, 0x00, 0x12, 0x34])
        CoreDataStoreFileTests.expectCorrupt(url, "Z_MODELCACHE") { _ = try backend.readMetadata(at: url) }
        CoreDataStoreFileTests.expectCorrupt(url, "Z_MODELCACHE") {
            _ = try backend.open(at: url, options: StoreOptions(isReadOnly: true, createIfMissing: false), creating: nil)
        }

        // The bytes written put back: the store opens again.
        try CoreDataStoreFileTests.execute(url, "UPDATE Z_MODELCACHE SET Z_CONTENT = ?", blob: written)
        #expect(try backend.readMetadata(at: url).schema == schema)
    }

    @Test func coreDataHashesOfASchemaAreItsEntitiesHashes() throws {
        let schema = try Self.schema()
        let hashes = schema.coreDataVersionHashes
        for entity in schema.entities {
            #expect(hashes.entityHashes[entity.name] == schema.coreDataVersionHash(ofEntity: entity.name))
            #expect(hashes.entityHashes[entity.name]?.base64EncodedString() == entity.versionHash)
        }
    }
}
