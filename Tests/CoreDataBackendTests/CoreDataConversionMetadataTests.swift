import CoreDataBackend
import Foundation
import LMDBBackend
import StoreAPI
import StoreTestSupport
import Testing
import XMLBackend

/// A conversion takes its source's metadata from the store it opens to read the records, not from a read of the
/// metadata of its own: what it gives the destination must be exactly what that read
/// (``StoreBackend/readMetadata(at:)``) gives, for a Core Data store read through its model cache, one read through
/// the schema it keeps, and the stores converted from them, whichever kind of store is written.
@Suite struct CoreDataConversionMetadataTests {
    static let registry = BackendRegistry(backends: [
        CoreDataStoreBackend(), LMDBStoreBackend(), XMLStoreBackend(),
    ])
    static let operations = StoreOperations(registry: registry)

    /// A Core Data store this backend created (it keeps the framework's schema beside its model cache), with
    /// custom metadata and sync options, and a record.
    static func createdStore(_ dir: TemporaryDirectory) throws -> URL {
        let url = dir.path("Created.sqlite")
        let schema = try CoreDataWriteTests.schema()
        let metadata = StoreMetadata(
            storeType: "coredata", storeUUID: UUID(), schema: schema,
            custom: ["app.build": .integer(42), "app.name": .string("Library")],
            syncOptions: SyncOptions(remote: URL(fileURLWithPath: "/srv/library-sync"), containerIdentifier: "library"))
        let store = try CoreDataStoreBackend().open(at: url, options: StoreOptions(), creating: metadata)
        try store.close()
        return url
    }

    /// Converts `source` to `type` at `destination` and checks the metadata the conversion gave it against a read
    /// of the source's metadata (the type aside).
    static func expectConversionKeepsMetadata(_ source: URL, _ sourceType: String, to destination: URL, _ type: String) throws {
        var expected = try registry.backend(for: sourceType).readMetadata(at: source)
        expected.storeType = type
        let given = try operations.copyStore(from: source, sourceType: sourceType, to: destination, type: type)
        #expect(given == expected, "\(sourceType) → \(type)")
        let written = try registry.backend(for: type).readMetadata(at: destination)
        #expect(written.storeUUID == expected.storeUUID)
        #expect(written.custom == expected.custom)
        #expect(written.syncOptions == expected.syncOptions)
    }

    @Test(arguments: ["lmdb", "xml"])
    func aCreatedStoreAndItsConversionsKeepTheirMetadata(_ type: String) throws {
        let dir = try TemporaryDirectory("coredata-conversion-metadata")
        defer { dir.remove() }
        let source = try Self.createdStore(dir)
        let converted = dir.path("Converted.\(type)")
        try Self.expectConversionKeepsMetadata(source, "coredata", to: converted, type)
        try Self.expectConversionKeepsMetadata(converted, type, to: dir.path("Back.sqlite"), "coredata")
    }

    /// A store Core Data wrote: no schema of this framework's in its metadata, the model read from its cache.
    @Test(.enabled(if: PackagePaths.corpus("stores") != nil, "the shared corpus (../shared/corpus) is absent"))
    func aCoreDataStoreReadThroughItsModelCacheKeepsItsMetadata() throws {
        let stores = try #require(PackagePaths.corpus("stores"))
        let source = stores.appendingPathComponent("alemar11__CoreDataPlus/SampleModel_V1.sqlite")
        #expect(try CoreDataStoreBackend().modelSource(ofStoreAt: source) == .modelCache)
        let dir = try TemporaryDirectory("coredata-conversion-metadata")
        defer { dir.remove() }
        try Self.expectConversionKeepsMetadata(source, "coredata", to: dir.path("Converted.lmdb"), "lmdb")
        try Self.expectConversionKeepsMetadata(dir.path("Converted.lmdb"), "lmdb", to: dir.path("Back.sqlite"), "coredata")
    }
}
