import Foundation
import LMDBBackend
import SQLiteBackend
@_spi(BackendKit) import StoreAPI
import StoreTestSupport
import Testing
import XMLBackend

/// NDJSON between stores of every backend type: what each engine stores comes back bit for bit.
@Suite("NDJSON export and import across backends")
struct InterchangeBackendTests {
    @Test("export → import into a fresh store of each type reproduces every record bit for bit",
          arguments: ["sqlite", "lmdb", "xml"], ["sqlite", "lmdb", "xml"])
    func roundTrip(sourceType: String, destinationType: String) throws {
        let dir = try TemporaryDirectory("interchange")
        defer { dir.remove() }
        let sourceURL = dir.path("source.\(sourceType)")
        let total = try EdgeFixtures.populate(type: sourceType, at: sourceURL, registry: Backends.registry)
        let source = try Backends.open(sourceURL, readOnly: true)
        defer { try? source.close() }
        // A small page size makes related keys cross page boundaries.
        let text = try ndjson(source, batchSize: 3)
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
        #expect(try ndjson(destination) == text)
    }

    @Test("exporting pages through the store and resolves every related record", arguments: [1, 2, 1000])
    func pageSizes(batchSize: Int) throws {
        let dir = try TemporaryDirectory("interchange")
        defer { dir.remove() }
        let url = dir.path("s.lmdb")
        try EdgeFixtures.populate(type: "lmdb", at: url, registry: Backends.registry)
        let store = try Backends.open(url, readOnly: true)
        defer { try? store.close() }
        #expect(try ndjson(store, batchSize: batchSize) == (try ndjson(store, batchSize: 5_000)))
    }

    @Test("the bundled sample imports, exports and re-imports identically in every backend", arguments: ["sqlite", "lmdb", "xml"])
    func sampleData(type: String) throws {
        let dir = try TemporaryDirectory("interchange")
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
        try NDJSONImporter().importRecords(from: try ndjson(first), into: second)
        let differences = try StoreComparison(comparesMetadata: false, comparesHistory: false).compare(first, second)
        #expect(differences.isIdentical, "\(differences.summary)")
    }
}
