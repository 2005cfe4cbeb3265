import Foundation
@testable import LMDBBackend
import StoreAPI
import Testing

/// The bulk-save path: global-ID entries written in key order, and the map grown ahead of a large save.
@Suite struct LMDBBulkSaveTests {
    /// The byte order liblmdb sorts 16-byte keys in.
    private static func keyBytes(_ e: GlobalIDBatch.Entry) -> [UInt8] {
        e.withKey { Array($0) }
    }

    private static func checkSorted(_ ids: [UUID]) {
        var batch = GlobalIDBatch()
        for (i, id) in ids.enumerated() { batch.append(id, entityID: 1, primaryKey: Int64(i)) }
        let sorted = batch.sorted()
        #expect(sorted.count == ids.count)
        // The reference: a stable sort by key bytes (ties keep their insertion order, told by primary key).
        let expected = ids.enumerated().sorted { a, b in
            let x = withUnsafeBytes(of: a.element.uuid) { Array($0) }
            let y = withUnsafeBytes(of: b.element.uuid) { Array($0) }
            return x.lexicographicallyPrecedes(y) || (x == y && a.offset < b.offset)
        }
        #expect(sorted.map(\.primaryKey) == expected.map { Int64($0.offset) })
        #expect(sorted.map(keyBytes) == expected.map { e in withUnsafeBytes(of: e.element.uuid) { Array($0) } })
        #expect(zip(sorted, expected).allSatisfy { $0.uuid == $1.element })
    }

    @Test func globalIDEntriesSortInKeyOrder() {
        // Random UUIDs (the radix path), a few (the small-sort path), and UUIDs that share long prefixes or repeat
        // (buckets too full for the radix pass).
        Self.checkSorted((0..<5000).map { _ in UUID() })
        Self.checkSorted((0..<7).map { _ in UUID() })
        Self.checkSorted([])
        let shared = (0..<3000).map { i -> UUID in
            var bytes = [UInt8](repeating: 0xAB, count: 16)
            bytes[14] = UInt8(truncatingIfNeeded: (i * 7919) >> 8)
            bytes[15] = UInt8(truncatingIfNeeded: i * 7919)
            return bytes.withUnsafeBytes { UUID(uuid: $0.load(as: uuid_t.self)) }
        }
        Self.checkSorted(shared + shared.prefix(100))
    }

    @Test func aBulkSaveIntoATinyMapStoresEverything() throws {
        let dir = try TemporaryDirectory()
        let schema = try LMDBFixture.schema()
        let url = dir.path("bulk.lmdb")
        let store = try LMDBFixture.create(url, schema: schema, options: ["lmdb.mapSize": "256K"])
        defer { try? store.close() }
        let sample = try schema.requireEntity("Sample")
        let strIndex = try #require(sample.attributeIndex("str"))
        let records = (1...6000).map { i -> Record in
            var r = sample.newRecord(primaryKey: Int64(i))
            r.attributes[strIndex] = .string(String(repeating: "v", count: 100 + i % 50))
            return r
        }
        let dataFile = url.appendingPathComponent("data.mdb")
        let before = try #require(try FileManager.default.attributesOfItem(atPath: dataFile.path)[.size] as? Int)
        let estimate = try #require(SaveSizeEstimate.bytes(for: StoreChanges(inserted: records), layout: store.layout))

        try store.save(StoreChanges(inserted: records))

        // The estimate the map was grown by covers what the save wrote, so it never had to start over.
        let after = try #require(try FileManager.default.attributesOfItem(atPath: dataFile.path)[.size] as? Int)
        #expect(estimate >= after - before, "estimated \(estimate) bytes, the save wrote \(after - before)")
        #expect(store.mapSize >= after)
        #expect(try store.count(FetchRequest(entity: "Sample")) == records.count)
        let fetched = try store.records(withKeys: [1, 3000, 6000], root: sample.rootName)
        #expect(fetched.map(\.globalID) == [records[0], records[2999], records[5999]].map(\.globalID))
        for r in fetched { #expect(try store.record(globalID: r.globalID)?.primaryKey == r.primaryKey) }
        #expect(try LMDBFixture.backend.checkIntegrity(at: url).isEmpty)
    }

    @Test func aRecordLargerThanTheEncodingBufferRoundTrips() throws {
        let dir = try TemporaryDirectory()
        let schema = try LMDBFixture.schema()
        let url = dir.path("large.lmdb")
        let store = try LMDBFixture.create(url, schema: schema)
        defer { try? store.close() }
        let sample = try schema.requireEntity("Sample")
        let strIndex = try #require(sample.attributeIndex("str"))
        let blobIndex = try #require(sample.attributeIndex("blob"))
        // Larger than the reused 4 KiB buffer, in a string and in binary data, between ordinary records.
        var big = sample.newRecord(primaryKey: 2)
        big.attributes[strIndex] = .string(String(repeating: "é\u{0}x", count: 3000))
        big.attributes[blobIndex] = .binary(Data((0..<20_000).map { UInt8(truncatingIfNeeded: $0 &* 13) }))
        let small = [1, 3].map { i -> Record in
            var r = sample.newRecord(primaryKey: Int64(i))
            r.attributes[strIndex] = .string("small \(i)")
            return r
        }
        try store.save(StoreChanges(inserted: [small[0], big, small[1]]))
        let back = try store.records(withKeys: [1, 2, 3], root: sample.rootName)
        #expect(back.count == 3)
        #expect(back.map(\.attributes) == [small[0], big, small[1]].map(\.attributes))
    }
}
