@_spi(BackendKit) import CoreDataBackend
import Foundation
@_spi(BackendKit) import StoreAPI
import StoreTestSupport
import Testing

/// Core Data's binary formats, read from other people's files: binary property lists (the writer included, by
/// round trip), keyed archives, the compiled model in them, and the compressed model cache.
@Suite struct CoreDataFormatFuzzTests {
    /// The corpus stores' metadata plists and inflated model caches, plus the compressed caches as stored.
    static func corpus() throws -> (plists: [[UInt8]], caches: [[UInt8]]) {
        var plists: [[UInt8]] = [BinaryPropertyListWriter.write(.dictionary([
            ("a", .array([.integer(-1), .real(2), .date(Date(timeIntervalSinceReferenceDate: 3)), .uid(4)])),
            ("b", .string("ü")), ("c", .data(Data([1, 2])) ), ("d", .set([.bool(true), .null])),
        ]))]
        var caches: [[UInt8]] = []
        guard let root = PackagePaths.corpus("stores"),
              let walker = FileManager.default.enumerator(at: root, includingPropertiesForKeys: nil)
        else { return (plists, caches) }
        for case let url as URL in walker where url.pathExtension == "sqlite" {
            let file = try CoreDataStoreFile.read(at: url)
            plists.append(BinaryPropertyListWriter.write(file.metadata.propertyList))
            if let blob = file.modelCacheBlob, caches.count < 6 {
                caches.append(blob)
                plists.append(try RawDeflate.inflate(blob))
            }
        }
        return (plists, caches)
    }

    static func classify(_ error: any Error) -> String? {
        switch error {
        case is PropertyListError: "plist"
        case is KeyedArchiveError: "archive"
        case is CoreDataFormatError: "model"
        case is InflateError: "inflate"
        default: FuzzErrors.schema(error)
        }
    }

    /// Property: every mutated plist reads or fails with ``PropertyListError``; what reads is written and read back
    /// equal; a plist that is a keyed archive of a model decodes or fails with a typed error, and a decoded model
    /// becomes a schema or a ``SchemaError``.
    @Test func mutatedPropertyListsAndArchives() throws {
        let (plists, _) = try Self.corpus()
        let campaign = FuzzCampaign(target: "coredata-bplist", corpus: plists, dialect: .binary, ciIterations: 2000,
                                    classify: Self.classify)
        let stats = campaign.run { bytes, _ in
            let value = try BinaryPropertyListReader.read(bytes)
            guard try BinaryPropertyListReader.read(BinaryPropertyListWriter.write(value)) == value else {
                throw FuzzViolation("a property list does not survive write → read")
            }
            guard case .dictionary = value, value["$archiver"] != nil else { return }
            let model = try CoreDataModelCache.decode(archive: try KeyedArchive(value))
            _ = try model.schema()
            _ = model.entityNumbers()
        }
        #expect(stats.accepted > 0 && stats.rejectedTotal > 0, "the campaign exercised both paths: \(stats)")
    }

    /// Property: a mutated `Z_MODELCACHE` blob inflates (within the cap) and decodes, or fails with a typed error.
    @Test func mutatedModelCaches() throws {
        let (_, caches) = try Self.corpus()
        guard !caches.isEmpty else {
            withKnownIssue("the shared corpus is absent; the model-cache campaign did not run") { Issue.record("no corpus") }
            return
        }
        let campaign = FuzzCampaign(target: "coredata-modelcache", corpus: caches, dialect: .binary, ciIterations: 1000,
                                    classify: Self.classify)
        let stats = campaign.run { bytes, _ in
            _ = try CoreDataModelCache.decode(bytes).schema()
        }
        #expect(stats.rejectedTotal > 0, "\(stats)")
    }
}
