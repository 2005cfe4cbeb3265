import Foundation
import LMDBBackend
@_spi(BackendKit) import StoreAPI
import StoreTestSupport
import Testing

/// A transfer into a new LMDB store writes the global-ID index in large sorted runs: the finished store is the
/// same store (integrity check clean, every record and global ID in place), only an empty store is bulk loaded,
/// and a duplicate global ID is refused when its run is written.
@Suite struct LMDBBulkLoadTests {
    static func tags(_ schema: Schema, _ keys: ClosedRange<Int64>) throws -> [Record] {
        keys.map { schema.record("Tag", $0, ["name": .string("tag \($0)")]) }
    }

    @Test func transferLeavesACompleteGlobalIDIndex() throws {
        let dir = try TemporaryDirectory("lmdb-tests")
        let schema = try LMDBFixture.schema()
        let source = MemoryStore(url: nil, metadata: LMDBFixture.metadata(schema))
        let records = try Self.tags(schema, 1...500)
        try source.save(StoreChanges(inserted: records))
        let url = dir.path("bulk.lmdb")
        let destination = try LMDBFixture.create(url, schema: schema)
        try StoreTransfer(batchSize: 37).copy(from: source, to: destination)
        #expect(try LMDBFixture.allRecords(destination, schema: schema).map(\.globalID) == records.map(\.globalID))
        try destination.close()
        #expect(try LMDBStoreBackend().checkIntegrity(at: url) == [])
    }

    @Test func onlyAnEmptyStoreIsBulkLoaded() throws {
        let dir = try TemporaryDirectory("lmdb-tests")
        let schema = try LMDBFixture.schema()
        let store = try LMDBFixture.create(dir.path("full.lmdb"), schema: schema)
        defer { try? store.close() }
        try store.save(StoreChanges(inserted: try Self.tags(schema, 1...3)))
        #expect(try store.beginBulkLoad() == false)
        try store.finishBulkLoad()
    }

    @Test func duplicateGlobalIDsAreRefusedWhenWritten() throws {
        let dir = try TemporaryDirectory("lmdb-tests")
        let schema = try LMDBFixture.schema()
        let url = dir.path("dup.lmdb")
        let store = try LMDBFixture.create(url, schema: schema)
        defer { try? store.close() }
        #expect(try store.beginBulkLoad())
        let a = schema.record("Tag", 1, ["name": .string("a")])
        let b0 = schema.record("Tag", 2, ["name": .string("b")])
        let b = Record(entity: b0.entity, primaryKey: 2, globalID: a.globalID, attributes: b0.attributes, relationships: b0.relationships)
        try store.save(StoreChanges(inserted: [a]))
        try store.save(StoreChanges(inserted: [b]))
        let error = try #require(throws: StoreError.self) { try store.finishBulkLoad() }
        #expect("\(error)".contains(a.globalID.uuidString), "\(error)")
    }
}
