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
        // The encoder's output seeds both campaigns, with or without the corpus: a model of every attribute type,
        // with inheritance, fetch indexes and a derived attribute.
        let encoded = try CoreDataModelCache.encode(CoreDataModel(schema: try encoderSeedSchema()))
        var caches: [[UInt8]] = [encoded]
        plists.append(try RawDeflate.inflate(encoded))
        guard let root = PackagePaths.corpus("stores"),
              let walker = FileManager.default.enumerator(at: root, includingPropertiesForKeys: nil)
        else { return (plists, caches) }
        var originals = 0
        for case let url as URL in walker where url.pathExtension == "sqlite" {
            let file = try CoreDataStoreFile.read(at: url)
            plists.append(BinaryPropertyListWriter.write(file.metadata.propertyList))
            if let blob = file.modelCacheBlob, originals < 6 {
                originals += 1
                caches.append(blob)
                plists.append(try RawDeflate.inflate(blob))
                // And the same model as the encoder writes it.
                let reencoded = try CoreDataModelCache.encode(try CoreDataModelCache.decode(blob))
                caches.append(reencoded)
                plists.append(try RawDeflate.inflate(reencoded))
            }
        }
        return (plists, caches)
    }

    /// A schema exercising what the encoder writes.
    static func encoderSeedSchema() throws -> Schema {
        let types: [AttributeType] = [.integer16, .integer32, .integer64, .decimal, .double, .float, .string, .boolean,
                                      .date, .binary, .uuid, .uri, .transformable]
        return try Schema(entities: [
            EntityDescription(
                name: "Base", isAbstract: true,
                attributes: types.map { AttributeDescription(name: "a\($0.rawValue)", type: $0, isIndexed: $0 == .string) },
                relationships: [RelationshipDescription(name: "parts", destination: "Part", inverse: "base", isToMany: true, isOrdered: true)],
                uniquenessConstraints: [["astring"]],
                derivedAttributes: [AttributeDescription(name: "partCount", type: .integer64, derivation: AttributeDerivation(expression: "parts.@count"))],
                fetchIndexes: [FetchIndex(name: "byDate", elements: [FetchIndex.Element(property: "adate", isAscending: false)])]),
            EntityDescription(name: "Leaf", parent: "Base", attributes: [AttributeDescription(name: "extra", type: .string, defaultValue: .string("x"))]),
            EntityDescription(name: "Part", relationships: [RelationshipDescription(name: "base", destination: "Base", inverse: "parts")]),
        ])
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

    /// Property: a mutated `Z_MODELCACHE` blob inflates (within the cap) and decodes, or fails with a typed error;
    /// a model that decodes is encoded again (or refused with a typed error) into a cache that decodes to the same
    /// schema, and whose model encodes to the same bytes again. (The encoder writes what Core Data's compiler
    /// fills in where a hostile cache left it out: class names, renaming identifiers equal to the name.)
    @Test func mutatedModelCaches() throws {
        let (_, caches) = try Self.corpus()
        guard !caches.isEmpty else {
            withKnownIssue("the shared corpus is absent; the model-cache campaign did not run") { Issue.record("no corpus") }
            return
        }
        let campaign = FuzzCampaign(target: "coredata-modelcache", corpus: caches, dialect: .binary, ciIterations: 1000,
                                    classify: Self.classify)
        let stats = campaign.run { bytes, _ in
            let model = try CoreDataModelCache.decode(bytes)
            let encoded = try CoreDataModelCache.encode(model)
            let again = try CoreDataModelCache.decode(encoded)
            guard try CoreDataModelCache.encode(again) == encoded else {
                throw FuzzViolation("an encoded model does not encode to the same cache again")
            }
            let schema = try model.schema()
            guard try again.schema() == schema else {
                throw FuzzViolation("a decoded model's schema does not survive encode → decode")
            }
        }
        #expect(stats.rejectedTotal > 0, "\(stats)")
    }
}
