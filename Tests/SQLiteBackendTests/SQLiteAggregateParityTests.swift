import Foundation
@_spi(BackendKit) import StoreAPI
@testable import SQLiteBackend
import StoreTestSupport
import Testing

/// Aggregates computed in SQL return exactly what the generic in-memory aggregation returns for the same data:
/// a seeded run of random requests (groups, predicates, every function over every numeric type, nil, NaN, ±∞,
/// decimals that SQL leaves to the evaluator), plus the edges one by one.
@Suite struct SQLiteAggregateParityTests {
    static func stores(seed: UInt64) throws -> (TemporaryDirectory, any PersistentStore, MemoryStore) {
        let dir = try TemporaryDirectory("sqlite-aggregates")
        let schema = try AggregateParity.schema()
        let data = AggregateParity.data(schema, seed: seed)
        let metadata = StoreMetadata(storeType: SQLiteStoreBackend.typeIdentifier, schema: schema)
        let reference = MemoryStore(url: nil, metadata: metadata)
        try reference.save(StoreChanges(inserted: data))
        let store = try SQLiteStoreBackend().open(at: dir.path("parity.sqlite"), options: StoreOptions(), creating: metadata)
        try store.save(StoreChanges(inserted: data))
        return (dir, store, reference)
    }

    @Test func randomRequestsMatchTheEvaluator() throws {
        let (dir, store, reference) = try Self.stores(seed: 27)
        defer {
            try? store.close()
            _ = dir
        }
        #expect(store is any AggregatingStore, "SQLite computes aggregates in its engine")
        var g = SeededGenerator(seed: 0xA66_2700)
        let requests = (0..<400).map { _ in AggregateParity.randomRequest(&g) }
        let differences = AggregateParity.differences(store, reference, requests)
        #expect(differences.isEmpty, "\(differences.count) of \(requests.count) differ; first: \(differences.first ?? "")")
        // The run is not vacuous: it holds grouped rows, NaN sums and empty results.
        let rows = try requests.flatMap { try reference.aggregateRows($0) }
        #expect(rows.count > 2_000)
        #expect(rows.contains { $0.values.contains { if case .double(let d) = $0 { d.isNaN } else { false } } })
        #expect(try requests.contains { try reference.aggregateRows($0).isEmpty })
    }

    @Test func edgesAreDefined() throws {
        let dir = try TemporaryDirectory("sqlite-aggregate-edges")
        let schema = try AggregateParity.schema()
        let metadata = StoreMetadata(storeType: SQLiteStoreBackend.typeIdentifier, schema: schema)
        let store = try SQLiteStoreBackend().open(at: dir.path("edges.sqlite"), options: StoreOptions(), creating: metadata)
        defer { try? store.close() }
        func rows(_ r: AggregateRequest) throws -> [AggregateRow] { try store.aggregateRows(r) }

        // An empty store: one row without groups, none with them.
        #expect(try rows(AggregateRequest(entity: "Item", aggregates: [.count, .sum("i64"), .sum("dbl"), .average("i64"), .min("str")]))
                == [AggregateRow(group: [], values: [.integer64(0), .integer64(0), .double(0), .null, .null])])
        #expect(try rows(AggregateRequest(entity: "Item", groupBy: ["str"], aggregates: [.count])).isEmpty)

        try store.save(StoreChanges(inserted: [
            schema.record("Item", 1, ["i64": .integer64(.max), "dbl": .double(.infinity), "flt": .float(1.5), "flag": .boolean(true)]),
            schema.record("Item", 2, ["i64": .integer64(1), "dbl": .double(-.infinity), "flt": .float(.nan), "flag": .boolean(false)]),
            schema.record("Item", 3, ["i64": .null, "dbl": .null, "flt": .float(-2), "flag": .boolean(true)]),
        ]))
        // Past 64 bits a sum is an error naming the attribute, never a wrapped number.
        #expect {
            try rows(AggregateRequest(entity: "Item", aggregates: [.sum("i64")]))
        } throws: { error in
            "\(error)".contains("Item.i64")
        }
        let values = try rows(AggregateRequest(entity: "Item", aggregates: [
            .sum("dbl"), .sum("flt"), .min("flt"), .max("flt"), .sum("flag"), .max("flag"), .average("i64"),
        ])).first?.values
        #expect(values?[0] == .double(.nan), "∞ − ∞ is NaN")
        #expect(values?[1] == .double(.nan), "a stored NaN makes the sum NaN")
        #expect(values?[2] == .float(-2) && values?[3] == .float(1.5), "minimum and maximum skip NaN, keep the type")
        #expect(values?[4] == .integer64(2) && values?[5] == .boolean(true))
        #expect(values?[6] == .double((Double(Int64.max) + 1) / 2))
        #expect(throws: StoreError.self) { try rows(AggregateRequest(entity: "Item", aggregates: [.average("str")])) }
        #expect(throws: StoreError.self) { try rows(AggregateRequest(entity: "Item", aggregates: [.max("nope")])) }
    }
}
