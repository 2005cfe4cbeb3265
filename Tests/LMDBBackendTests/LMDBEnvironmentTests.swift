import Foundation
@testable import LMDBBackend
import StoreAPI
import Synchronization
import StoreTestSupport
import Testing

/// Map growth, environment sharing inside the process, key allocation and history.
@Suite struct LMDBEnvironmentTests {
    @Test func theMapGrowsFromATinyStartWithoutErrors() throws {
        let dir = try TemporaryDirectory("lmdb-tests")
        let schema = try LMDBFixture.schema()
        let url = dir.path("grow.lmdb")
        let store = try LMDBFixture.create(url, schema: schema, options: ["lmdb.mapSize": "64K"])
        let initial = store.mapSize
        #expect(initial < 1 << 20)
        let sample = try schema.requireEntity("Sample")
        let blobIndex = try #require(sample.attributeIndex("blob"))
        let payload = Data((0..<(1 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 31) })
        var expected = 0
        // One large save (8 MiB in one transaction), then many small ones: 24 MiB in all.
        var big: [Record] = []
        for i in 1...8 {
            var r = schema.record("Sample", Int64(i), ["str": .string("big \(i)")])
            r.attributes[blobIndex] = .binary(payload)
            big.append(r)
        }
        try store.save(StoreChanges(inserted: big))
        expected += big.count
        for batch in 0..<16 {
            var rs: [Record] = []
            for j in 0..<64 {
                let pk = Int64(1000 + batch * 64 + j)
                var r = schema.record("Sample", pk, ["str": .string(String(repeating: "s", count: 200))])
                r.attributes[blobIndex] = .binary(payload.prefix(16 << 10))
                rs.append(r)
            }
            try store.save(StoreChanges(inserted: rs))
            expected += rs.count
        }
        #expect(store.mapSize >= 24 << 20, "the map grew past the data written (\(store.mapSize) bytes)")
        #expect(store.mapSize > initial)
        try store.close()

        let reopened = try LMDBFixture.open(url, options: StoreOptions(backend: ["lmdb.mapSize": "64K"]))
        defer { try? reopened.close() }
        #expect(try reopened.count(FetchRequest(entity: "Sample")) == expected)
        #expect(try reopened.records(withKeys: [5], root: "Sample").first?.attributes[blobIndex] == .binary(payload))
        #expect(try LMDBFixture.backend.checkIntegrity(at: url).isEmpty)
    }

    @Test func storesOnOnePathShareOneEnvironment() throws {
        let dir = try TemporaryDirectory("lmdb-tests")
        let schema = try LMDBFixture.schema()
        let url = dir.path("shared.lmdb")
        let a = try LMDBFixture.create(url, schema: schema)
        // The same files under another spelling of the path.
        let b = try LMDBFixture.open(URL(fileURLWithPath: dir.url.path + "/./shared.lmdb/"))
        try a.save(StoreChanges(inserted: [schema.record("Tag", 1, ["name": "one"])]))
        #expect(try b.fetch(FetchRequest(entity: "Tag")).count == 1)
        try b.save(StoreChanges(inserted: [schema.record("Tag", 2, ["name": "two"])]))
        #expect(try a.count(FetchRequest(entity: "Tag")) == 2)
        var changed = a.metadata
        changed.custom["note"] = .string("set through b")
        try b.save(StoreChanges(metadata: changed))
        #expect(a.metadata.custom["note"] == .string("set through b"), "metadata changes show in every store on the files")

        // Closing one leaves the other working (lmdb.h: a second handle's close would break the first's locks).
        try a.close()
        #expect(throws: StoreError.self) { try a.fetch(FetchRequest(entity: "Tag")) }
        #expect(try b.count(FetchRequest(entity: "Tag")) == 2)
        try b.save(StoreChanges(inserted: [schema.record("Tag", 3, ["name": "three"])]))
        try b.close()
        let c = try LMDBFixture.open(url)
        #expect(try c.count(FetchRequest(entity: "Tag")) == 3)
        #expect(c.metadata.custom["note"] == .string("set through b"))
        try c.close()
    }

    @Test func metadataIsReadAndWrittenWithoutAFullOpen() throws {
        let dir = try TemporaryDirectory("lmdb-tests")
        let schema = try LMDBFixture.schema()
        let backend = LMDBFixture.backend
        let url = dir.path("meta.lmdb")
        let created = try LMDBFixture.create(url, schema: schema)
        let uuid = created.metadata.storeUUID
        try created.save(StoreChanges(inserted: [schema.record("Tag", 1, ["name": "x"])]))
        try created.close()

        var metadata = try backend.readMetadata(at: url)
        #expect(metadata.storeUUID == uuid && metadata.schema == schema && metadata.storeType == "lmdb")
        metadata.custom["sync"] = .dictionary(["token": .integer(42)])
        try backend.writeMetadata(metadata, at: url)
        #expect(try backend.readMetadata(at: url) == metadata)
        #expect(dir.listing() == ["meta.lmdb"], "no staging or lock files beside the store")

        // While the store is open, a write through the backend shows in the open store too.
        let open = try LMDBFixture.open(url)
        metadata.custom["sync"] = .string("changed while open")
        try backend.writeMetadata(metadata, at: url)
        #expect(open.metadata.custom["sync"] == .string("changed while open"))
        #expect(try open.count(FetchRequest(entity: "Tag")) == 1, "records are untouched")
        try open.close()
        #expect(storeError { try backend.writeMetadata(metadata, at: dir.path("absent.lmdb")) }?.caseName == "storeNotFound")
        #expect(!FileManager.default.fileExists(atPath: dir.path("absent.lmdb").path), "writing metadata never creates a store")
    }

    @Test func allocatedKeysNeverOverlap() throws {
        let dir = try TemporaryDirectory("lmdb-tests")
        let schema = try LMDBFixture.schema()
        let url = dir.path("keys.lmdb")
        let a = try LMDBFixture.create(url, schema: schema)
        let b = try LMDBFixture.open(url)
        let stores = [a, b]
        let ranges = Mutex<[(Int64, Int64)]>([])
        DispatchQueue.concurrentPerform(iterations: 8) { worker in
            for i in 0..<40 {
                let count = 1 + (worker * 7 + i) % 13
                if let first = try? stores[worker % 2].allocatePrimaryKeys(root: "Work", count: count) {
                    ranges.withLock { $0.append((first, first + Int64(count))) }
                }
            }
        }
        let sorted = ranges.withLock { $0 }.sorted { $0.0 < $1.0 }
        #expect(sorted.count == 320)
        for (x, y) in zip(sorted, sorted.dropFirst()) { #expect(x.1 <= y.0, "ranges \(x) and \(y) overlap") }
        #expect(sorted.first?.0 == 1)

        // Keys saved from elsewhere (a transfer) push the allocator past them.
        let far = schema.record("Book", 10_000, ["title": "far"])
        try a.save(StoreChanges(inserted: [far]))
        #expect(try b.allocatePrimaryKeys(root: "Work", count: 1) == 10_001)
        #expect(try a.allocatePrimaryKeys(root: "Tag", count: 0) == 1, "a zero count reserves nothing")
        #expect(try a.allocatePrimaryKeys(root: "Tag", count: 2) == 1)
        try a.close()
        try b.close()

        // A record the allocator never saw (written by another program) is skipped too.
        try RawLMDB.write(url) { txn, open in try RawLMDB.put(txn, try open("records:Tag"), RawLMDB.key(500), [1]) }
        let c = try LMDBFixture.open(url)
        defer { try? c.close() }
        #expect(try c.allocatePrimaryKeys(root: "Tag", count: 1) == 501)
    }

    @Test func historyIsAppendedInTokenOrder() throws {
        let dir = try TemporaryDirectory("lmdb-tests")
        let schema = try LMDBFixture.schema()
        let url = dir.path("history.lmdb")
        let store = try LMDBFixture.create(url, schema: schema)
        let tag = schema.record("Tag", 1, ["name": "t"])
        let insert = HistoryChange(kind: .insert, entity: "Tag", primaryKey: 1, globalID: tag.globalID)
        let t0 = Date(timeIntervalSinceReferenceDate: 1000.5)
        try store.save(StoreChanges(inserted: [tag], history: [HistoryTransaction(token: HistoryTransaction.assignToken, timestamp: t0, author: "me", changes: [insert])]))
        let delete = HistoryChange(kind: .delete, entity: "Tag", primaryKey: 1, globalID: tag.globalID, tombstone: ["name": "t"])
        try store.save(StoreChanges(deleted: [tag.key], history: [
            HistoryTransaction(token: HistoryTransaction.assignToken, timestamp: t0, author: nil, changes: [delete]),
            HistoryTransaction(token: 10, timestamp: t0, author: "copied", changes: []),
            HistoryTransaction(token: HistoryTransaction.assignToken, timestamp: t0, author: nil, changes: []),
        ]))
        #expect(try store.history(after: nil).map(\.token) == [1, 2, 10, 11])
        #expect(try store.history(after: 2).map(\.token) == [10, 11])
        #expect(try store.history(after: 11).isEmpty)
        // A token that is not after the last one is refused with the rest of the save.
        let stale = HistoryTransaction(token: 5, timestamp: t0, author: nil, changes: [])
        #expect(throws: StoreError.self) {
            try store.save(StoreChanges(inserted: [schema.record("Tag", 2)], history: [stale]))
        }
        #expect(try store.count(FetchRequest(entity: "Tag")) == 0)
        try store.close()
        let reopened = try LMDBFixture.open(url)
        defer { try? reopened.close() }
        let all = try reopened.history(after: nil)
        #expect(all.map(\.token) == [1, 2, 10, 11])
        #expect(all.first?.changes == [insert] && all.first?.author == "me" && all.first?.timestamp == t0)
        #expect(all[1].changes == [delete])
    }
}
