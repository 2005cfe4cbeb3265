import Foundation
@_spi(BackendKit) import StoreAPI
import Testing

@Suite("NDJSON export and import round trip")
struct InterchangeRoundTripTests {
    /// Exports a store to NDJSON text.
    func export(_ store: any PersistentStore, batchSize: Int = 5_000) throws -> Data {
        var out = Data()
        try NDJSONExporter(batchSize: batchSize).export(store) { out.append($0) }
        return out
    }

    @Test("export → import into a fresh store of each type reproduces every record bit for bit",
          arguments: ["sqlite", "lmdb", "xml"], ["sqlite", "lmdb", "xml"])
    func roundTrip(sourceType: String, destinationType: String) throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let sourceURL = dir.path("source.\(sourceType)")
        let total = try EdgeFixtures.populate(type: sourceType, at: sourceURL)
        let source = try Backends.open(sourceURL, readOnly: true)
        defer { try? source.close() }
        // A small page size makes related keys cross page boundaries.
        let text = try export(source, batchSize: 3)
        #expect(text.split(separator: UInt8(ascii: "\n")).count == total)

        let destination = try Backends.create(destinationType, at: dir.path("copy.\(destinationType)"), schema: EdgeFixtures.schema)
        defer { try? destination.close() }
        let summary = try NDJSONImporter().importRecords(from: text, into: destination)
        #expect(summary.inserted == total)
        #expect(summary.updated == 0)

        let differences = try StoreComparison(comparesMetadata: false, comparesHistory: false).compare(source, destination)
        #expect(differences.isIdentical, "\(differences.summary)")
        #expect(differences.recordsCompared == total)

        // Attribute values, compared directly (bit identity: NaN == NaN, 0 != -0, exact dates).
        let before = try Backends.records(of: source)
        let after = try Backends.records(of: destination)
        #expect(Set(before.keys) == Set(after.keys))
        for (id, record) in before {
            #expect(after[id]?.attributes == record.attributes, "attributes of \(record.entity) \(id)")
        }
        // Exporting the copy gives the same bytes: the format is a faithful, canonical form.
        #expect(try export(destination) == text)
    }

    @Test("ordered relationships keep their order and unordered ones their members")
    func relationshipOrder() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let url = dir.path("s.sqlite")
        try EdgeFixtures.populate(type: "sqlite", at: url)
        let source = try Backends.open(url, readOnly: true)
        defer { try? source.close() }
        let copy = try Backends.create("lmdb", at: dir.path("c.lmdb"), schema: EdgeFixtures.schema)
        defer { try? copy.close() }
        try NDJSONImporter().importRecords(from: try export(source), into: copy)

        func names(_ store: any PersistentStore, owner: String, relationship: String) throws -> [String] {
            let schema = store.metadata.schema
            let ownerEntity = try #require(schema.entity(named: owner == "owner 0" ? "Owner" : "Sample"))
            let match = try #require(try store.fetch(FetchRequest(entity: ownerEntity.name,
                predicate: .comparison(.keyPath(["name"]), .equal, .constant(.string(owner)), []))).first)
            let index = try #require(ownerEntity.relationshipIndex(relationship))
            let keys = match.relationships[index].keys
            let thing = try #require(schema.entity(named: "Thing"))
            let related = try store.records(withKeys: keys, root: thing.rootName)
            let byKey = Dictionary(uniqueKeysWithValues: related.map { ($0.primaryKey, $0) })
            return keys.map { key in
                guard let r = byKey[key] else { return "?" }
                if let i = schema.entity(named: r.entity)?.attributeIndex("name"), case .string(let s) = r.attributes[i] { return s }
                return r.entity
            }
        }
        let expected = try names(source, owner: "owner 0", relationship: "samples")
        #expect(expected == ["precise", "limits low", "subnormal"])
        #expect(try names(copy, owner: "owner 0", relationship: "samples") == expected)
        #expect(try names(copy, owner: "ulps", relationship: "seeAlso") == (try names(source, owner: "ulps", relationship: "seeAlso")))
    }

    @Test("the exporter writes every stored attribute, null included, in the documented JSON forms")
    func lineFormat() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let url = dir.path("s.sqlite")
        try EdgeFixtures.populate(type: "sqlite", at: url)
        let store = try Backends.open(url, readOnly: true)
        defer { try? store.close() }
        let lines = try export(store).split(separator: UInt8(ascii: "\n")).map { Data($0) }
        let objects = try lines.map { try #require(try JSONSerialization.jsonObject(with: $0) as? [String: Any]) }
        let samples = objects.filter { $0["entity"] as? String == "Sample" }
        #expect(samples.count == EdgeFixtures.sampleValues.count)
        let sampleEntity = try #require(EdgeFixtures.schema.entity(named: "Sample"))
        for s in samples {
            let attributes = try #require(s["attributes"] as? [String: Any])
            #expect(Set(attributes.keys) == Set(sampleEntity.attributes.map(\.name)))
            let relationships = try #require(s["relationships"] as? [String: Any])
            #expect(Set(relationships.keys) == Set(sampleEntity.relationships.map(\.name)))
            #expect(UUID(uuidString: try #require(s["id"] as? String)) != nil)
        }
        let high = try #require(samples.first { ($0["attributes"] as? [String: Any])?["name"] as? String == "limits high" })
        let attributes = try #require(high["attributes"] as? [String: Any])
        #expect(attributes["dec"] as? String == "99999999999999999999999999999999999999")
        #expect(attributes["dbl"] as? String == "-0.0")
        #expect(attributes["blob"] as? String == Data((0...255).map { UInt8($0) }).base64EncodedString())
        #expect(attributes["when"] as? String == ExactISO8601.string(from: .distantFuture))
        #expect((attributes["i64"] as? NSNumber)?.int64Value == Int64.max)
        let empty = try #require(samples.first { ($0["attributes"] as? [String: Any])?["name"] is NSNull })
        #expect((empty["attributes"] as? [String: Any])?["dbl"] is NSNull)
        #expect((empty["relationships"] as? [String: Any])?["owner"] is NSNull)
    }

    @Test("exporting pages through the store and resolves every related record", arguments: [1, 2, 1000])
    func pageSizes(batchSize: Int) throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let url = dir.path("s.lmdb")
        try EdgeFixtures.populate(type: "lmdb", at: url)
        let store = try Backends.open(url, readOnly: true)
        defer { try? store.close() }
        #expect(try export(store, batchSize: batchSize) == (try export(store, batchSize: 5_000)))
    }

    @Test("the exporter's file output is atomic and complete")
    func exportToFile() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let url = dir.path("s.sqlite")
        let total = try EdgeFixtures.populate(type: "sqlite", at: url)
        let store = try Backends.open(url, readOnly: true)
        defer { try? store.close() }
        let out = dir.path("out.ndjson")
        #expect(try NDJSONExporter().export(store, toFileAt: out) == total)
        #expect(try Data(contentsOf: out) == (try export(store)))
        #expect(dir.entries() == ["out.ndjson", "s.sqlite"])
    }

    @Test("the bundled sample imports, exports and re-imports identically in every backend", arguments: ["sqlite", "lmdb", "xml"])
    func sampleData(type: String) throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let schema = try Schema(xcodeModelAt: PackagePaths.libraryModel)
        let first = try Backends.create(type, at: dir.path("a.\(type)"), schema: schema)
        defer { try? first.close() }
        let summary = try NDJSONImporter().importRecords(fromFileAt: PackagePaths.libraryData, into: first)
        let lines = try String(contentsOf: PackagePaths.libraryData, encoding: .utf8).split(separator: "\n").count
        #expect(summary.inserted == lines)
        #expect(try StoreVerifier().verify(first) == [])
        let second = try Backends.create(type, at: dir.path("b.\(type)"), schema: schema)
        defer { try? second.close() }
        try NDJSONImporter().importRecords(from: try export(first), into: second)
        let differences = try StoreComparison(comparesMetadata: false, comparesHistory: false).compare(first, second)
        #expect(differences.isIdentical, "\(differences.summary)")
    }
}
