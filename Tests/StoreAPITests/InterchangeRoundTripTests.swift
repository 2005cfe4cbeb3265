import Foundation
@_spi(BackendKit) import StoreAPI
import StoreTestSupport
import Testing

/// The NDJSON exporter and importer between in-memory stores (every backend type: IntegrationTests).
@Suite("NDJSON export and import round trip")
struct InterchangeRoundTripTests {
    /// A named in-memory store with ``EdgeFixtures``' records, and their number; the caller destroys it.
    static func populated() throws -> (url: URL, count: Int) {
        let url = MemoryStores.newURL("s")
        return (url, try EdgeFixtures.populate(type: "memory", at: url, registry: MemoryStores.registry))
    }

    @Test("ordered relationships keep their order and unordered ones their members")
    func relationshipOrder() throws {
        let (url, _) = try Self.populated()
        defer { MemoryStores.destroy(url) }
        let source = try MemoryStores.open(url, readOnly: true)
        let copy = try MemoryStores.create(schema: EdgeFixtures.schema)
        try NDJSONImporter().importRecords(from: try ndjson(source), into: copy)

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
        let (url, _) = try Self.populated()
        defer { MemoryStores.destroy(url) }
        let store = try MemoryStores.open(url, readOnly: true)
        let lines = try ndjson(store).split(separator: UInt8(ascii: "\n")).map { Data($0) }
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

    @Test("the exporter's file output is atomic and complete")
    func exportToFile() throws {
        let dir = try TemporaryDirectory("ndjson-export")
        let (url, total) = try Self.populated()
        defer { MemoryStores.destroy(url) }
        let store = try MemoryStores.open(url, readOnly: true)
        let out = dir.path("out.ndjson")
        #expect(try NDJSONExporter().export(store, toFileAt: out) == total)
        #expect(try Data(contentsOf: out) == (try ndjson(store)))
        #expect(dir.listing() == ["out.ndjson"], "no staging file is left beside the output")
    }

}
