import Foundation
import JSONStoreBackend
@_spi(BackendKit) import StoreAPI
import StoreConformance
import Testing

/// A JSON store written before version hashes became Core Data's carries metadata format 1 with the legacy hashes.
/// The backend persists metadata as the framework's JSON, so such a store keeps opening with its schema and is
/// refused with a changed one, like every built-in type.
@Suite struct JSONLegacyVersionHashTests {
    let backend = JSONStoreBackend()

    /// Metadata as the framework wrote it before: format 1, legacy hashes.
    static func legacyMetadata(_ schema: Schema) -> StoreMetadata {
        var metadata = StoreMetadata(storeType: JSONStoreBackend.typeIdentifier, schema: schema)
        metadata.formatVersion = StoreMetadata.legacyVersionHashFormatVersion
        metadata.versionHashes = schema.legacyVersionHashes
        return metadata
    }

    @Test func legacyStoreOpensWithItsSchemaAndNotWithAChangedOne() throws {
        let dir = try TemporaryDirectory()
        let url = dir.file("old.json")
        let schema = try ConformanceSchema.make()
        try backend.open(at: url, options: StoreOptions(), creating: Self.legacyMetadata(schema)).close()
        let stored = try backend.readMetadata(at: url)
        #expect(stored.hasLegacyVersionHashes && stored.versionHashes == schema.legacyVersionHashes)
        #expect(stored.versionHashes["Tag"] != schema.versionHashes["Tag"])

        let registry = BackendRegistry(backends: [backend])
        let description = StoreDescription(url: url, type: JSONStoreBackend.typeIdentifier, options: StoreOptions(createIfMissing: false))
        let coordinator = StoreCoordinator(schema: schema, registry: registry)
        let loaded = try coordinator.addStore(description)
        let context = coordinator.newContext()
        try context.insert("Tag", ["name": "kept"])
        try context.save()
        try coordinator.removeStore(loaded)
        #expect(try backend.readMetadata(at: url).versionHashes == schema.legacyVersionHashes)

        let changed = try ConformanceSchema.makeIncompatible()
        let error = try #require(throws: StoreError.self) {
            try StoreCoordinator(schema: changed, registry: registry).addStore(description)
        }
        guard case .incompatibleSchema(_, let entities) = error else { Issue.record("\(error)"); return }
        #expect(entities == ["Tag"])
    }

    @Test func newStoreCarriesCoreDataHashes() throws {
        let dir = try TemporaryDirectory()
        let url = dir.file("new.json")
        try makeStore(at: url)
        let stored = try backend.readMetadata(at: url)
        #expect(stored.formatVersion == StoreMetadata.currentFormatVersion)
        #expect(stored.versionHashes == (try ConformanceSchema.make()).coreDataVersionHashes.base64EntityHashes)
    }
}
