import Foundation
@testable import LMDBBackend
@_spi(BackendKit) import StoreAPI
import StoreTestSupport
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

    /// Runs set aside during a bulk load merge back into one stream in key order: every entry once, equal keys in
    /// the order they were added (earlier runs first, the in-memory buffer last), in chunks of the asked size;
    /// and the runs are empty and usable again afterwards.
    @Test func setAsideRunsMergeInKeyOrder() throws {
        let runs = try GlobalIDRuns()
        var added: [(id: UUID, primaryKey: Int64)] = []
        var next: Int64 = 0
        func batch(_ ids: [UUID]) -> GlobalIDBatch {
            var b = GlobalIDBatch()
            for id in ids {
                b.append(id, entityID: 1, primaryKey: next)
                added.append((id, next))
                next += 1
            }
            return b
        }
        let repeated = (0..<50).map { _ in UUID() }
        // Runs of different lengths (one longer than a reader's buffer), a key repeated across runs and the buffer.
        for length in [3000, 1, 700, 0, 2500] {
            try runs.append(sortedRun: batch((0..<length).map { _ in UUID() } + repeated.prefix(length / 60)).sorted())
        }
        let buffer = batch((0..<1200).map { _ in UUID() } + repeated.prefix(10)).sorted()
        #expect(runs.count == added.count - buffer.count)

        for chunk in [1000, 1 << 14] {
            var merged: [GlobalIDBatch.Entry] = []
            var chunks: [Int] = []
            let copy = try GlobalIDRuns()
            if chunk == 1000 {
                try runs.merge(with: buffer, chunk: chunk) { merged += $0; chunks.append($0.count) }
                #expect(runs.isEmpty && runs.count == 0)
            } else {
                // The same content again through a fresh set of runs: one run of everything but the buffer.
                let all = added.dropLast(buffer.count)
                var b = GlobalIDBatch()
                for e in all { b.append(e.id, entityID: 1, primaryKey: e.primaryKey) }
                try copy.append(sortedRun: b.sorted())
                try copy.merge(with: buffer, chunk: chunk) { merged += $0; chunks.append($0.count) }
            }
            let expected = added.enumerated().sorted { a, b in
                let x = withUnsafeBytes(of: a.element.id.uuid) { Array($0) }
                let y = withUnsafeBytes(of: b.element.id.uuid) { Array($0) }
                return x.lexicographicallyPrecedes(y) || (x == y && a.offset < b.offset)
            }
            #expect(merged.map(\.primaryKey) == expected.map(\.element.primaryKey), "chunk \(chunk)")
            #expect(chunks.dropLast().allSatisfy { $0 == chunk } && chunks.reduce(0, +) == added.count)
        }
        // Emptied runs take new ones from the start of the file.
        try runs.append(sortedRun: batch([UUID(), UUID()]).sorted())
        var again: [Int64] = []
        try runs.merge(with: [], chunk: 10) { again += $0.map(\.primaryKey) }
        #expect(Set(again) == [next - 2, next - 1])
    }

    @Test func aBulkSaveIntoATinyMapStoresEverything() throws {
        let dir = try TemporaryDirectory("lmdb-tests")
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

    /// Pages inserted in one transaction into a map too small for them, with a first page too small to estimate
    /// from: the map fills, is grown, and the transaction starts over, asking for the pages again from the first.
    /// Every record is stored once, and the global-ID index holds each once.
    @Test func insertPagesStartsOverWhenTheMapFills() throws {
        let dir = try TemporaryDirectory("lmdb-tests")
        let schema = try LMDBFixture.schema()
        let url = dir.path("pages.lmdb")
        let store = try LMDBFixture.create(url, schema: schema, options: ["lmdb.mapSize": "256K"])
        defer { try? store.close() }
        let sample = try schema.requireEntity("Sample")
        let strIndex = try #require(sample.attributeIndex("str"))
        let ids = (0..<6001).map { _ in UUID() }
        func page(_ p: Int) -> RecordPage {
            // Page 0 holds one record (no estimate from it); the others 3 000 each.
            let keys = p == 0 ? 0..<1 : (1 + (p - 1) * 3000)..<(1 + p * 3000)
            var page = RecordPage(entity: "Sample")
            for k in keys {
                var r = sample.newRecord(primaryKey: Int64(k + 1))
                r.globalID = ids[k]
                r.attributes[strIndex] = .string(String(repeating: "p", count: 200 + k % 50))
                page.append(r)
            }
            return page
        }
        var asked: [Int] = []
        try store.insertPages(count: 3) { p in
            asked.append(p)
            return page(p)
        }
        // Each page once when the transaction does not start over (page 0 is made for the estimate and used):
        // more means a restart.
        #expect(asked.count > 3, "the transaction started over: \(asked)")
        #expect(Array(asked.suffix(3)) == [0, 1, 2])
        #expect(try store.count(FetchRequest(entity: "Sample")) == 6001)
        for k in [0, 1, 3000, 6000] {
            #expect(try store.record(globalID: ids[k])?.primaryKey == Int64(k + 1))
        }
        #expect(try LMDBFixture.backend.checkIntegrity(at: url).isEmpty)

        // With room in the map, every page is made exactly once.
        var again: [Int] = []
        try store.insertPages(count: 3) { p in
            again.append(p)
            var page = RecordPage(entity: "Sample")
            for k in 0..<2500 { page.append(sample.newRecord(primaryKey: Int64(10_000 + p * 2500 + k))) }
            return page
        }
        #expect(again == [0, 1, 2])
        #expect(try store.count(FetchRequest(entity: "Sample")) == 6001 + 7500)
    }

    @Test func aRecordLargerThanTheEncodingBufferRoundTrips() throws {
        let dir = try TemporaryDirectory("lmdb-tests")
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
