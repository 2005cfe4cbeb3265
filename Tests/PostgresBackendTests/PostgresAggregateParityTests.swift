import Foundation
import PostgresBackend
@_spi(BackendKit) import StoreAPI
import StoreTestSupport
import Testing

/// Aggregates computed by PostgreSQL return exactly what the generic in-memory aggregation returns for the same
/// data (the seeded random requests the SQLite store is checked with), and the edges are the same.
@Suite(.enabled(if: PostgresTestServer.isAvailable, PostgresTestServer.skipReason))
struct PostgresAggregateParityTests {
    @Test func randomRequestsMatchTheEvaluator() throws {
        let schema = try AggregateParity.schema()
        let data = AggregateParity.data(schema, seed: 27)
        let metadata = StoreMetadata(storeType: "postgres", schema: schema)
        let reference = MemoryStore(url: nil, metadata: metadata)
        try reference.save(StoreChanges(inserted: data))
        let url = try PostgresTestServer.shared().storeURL("aggregates")
        let backend = PostgresStoreBackend()
        let store = try backend.open(at: url, options: StoreOptions(), creating: metadata)
        defer {
            try? store.close()
            try? backend.destroyStore(at: url)
        }
        try store.save(StoreChanges(inserted: data))
        #expect(store is any AggregatingStore, "PostgreSQL computes aggregates in its engine")
        var g = SeededGenerator(seed: 0xA66_2700)
        let requests = (0..<400).map { _ in AggregateParity.randomRequest(&g) }
        let differences = AggregateParity.differences(store, reference, requests)
        #expect(differences.isEmpty, "\(differences.count) of \(requests.count) differ; first: \(differences.first ?? "")")

        // Past 64 bits an integer sum is an error, as in memory.
        try store.save(StoreChanges(inserted: [
            schema.record("Item", 9_001, ["i64": .integer64(.max)]), schema.record("Item", 9_002, ["i64": .integer64(.max)]),
        ]))
        #expect(throws: StoreError.self) { try store.aggregateRows(AggregateRequest(entity: "Item", aggregates: [.sum("i64")])) }
    }
}
