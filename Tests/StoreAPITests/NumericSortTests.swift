import Foundation
@_spi(BackendKit) @testable import StoreAPI
import Testing

/// The sort by number, boolean and date keys read into flat arrays gives exactly the order of the general sort
/// (``PredicateEvaluator/sortOrder(_:_:)`` on every pair), on records whose keys are nil, NaN, ±0, infinities,
/// extremes and many ties.
@Suite struct NumericSortTests {
    static let schema: Schema = {
        do {
            return try Schema(entities: [
                EntityDescription(name: "Item", attributes: [
                    AttributeDescription(name: "small", type: .integer16),
                    AttributeDescription(name: "big", type: .integer64),
                    AttributeDescription(name: "score", type: .double),
                    AttributeDescription(name: "weight", type: .float),
                    AttributeDescription(name: "flag", type: .boolean),
                    AttributeDescription(name: "when", type: .date),
                    AttributeDescription(name: "name", type: .string),
                    AttributeDescription(name: "price", type: .decimal),
                ]),
                EntityDescription(name: "Special", parent: "Item", attributes: [
                    AttributeDescription(name: "extra", type: .integer32),
                ]),
            ])
        } catch {
            preconditionFailure("the test schema is invalid: \(error)")
        }
    }()

    /// Records of both entities with keys drawn from small pools of awkward values, so that ties are common.
    static func records(_ count: Int, seed: UInt64) throws -> [Record] {
        var rng = SeededGenerator(seed: seed)
        let smalls: [StoreValue] = [nil, .integer16(.min), .integer16(-1), .integer16(0), .integer16(7), .integer16(.max)]
        let bigs: [StoreValue] = [nil, .integer64(.min), .integer64(-(1 << 53) - 1), .integer64(0), .integer64(1 << 53 + 1),
                                  .integer64(.max)]
        let scores: [StoreValue] = [nil, .double(.nan), .double(-.infinity), .double(-0.0), .double(0.0), .double(1.5),
                                    .double(.greatestFiniteMagnitude), .double(.infinity), .double(-1e-300)]
        let weights: [StoreValue] = [nil, .float(.nan), .float(-0.0), .float(0.25), .float(-3)]
        let flags: [StoreValue] = [nil, true, false]
        let dates: [StoreValue] = [nil, .date(Date(timeIntervalSinceReferenceDate: .nan)), .date(Date(timeIntervalSinceReferenceDate: -1e9)),
                                   .date(Date(timeIntervalSinceReferenceDate: 0)), .date(Date(timeIntervalSinceReferenceDate: 568_080_000))]
        let item = try schema.requireEntity("Item")
        let special = try schema.requireEntity("Special")
        var out: [Record] = []
        for pk in 1...Int64(count) {
            // Runs of one entity, as a store returns them, with switches between them.
            let entity = (pk / 7) % 3 == 0 ? special : item
            var r = entity.newRecord(primaryKey: pk)
            func pick(_ values: [StoreValue]) -> StoreValue { values[Int.random(in: 0..<values.count, using: &rng)] }
            r.attributes[0] = pick(smalls)
            r.attributes[1] = pick(bigs)
            r.attributes[2] = pick(scores)
            r.attributes[3] = pick(weights)
            r.attributes[4] = pick(flags)
            r.attributes[5] = pick(dates)
            r.attributes[6] = .string("n\(pk % 5)")
            if entity.name == "Special" { r.attributes[8] = .integer32(Int32(pk % 4)) }
            out.append(r)
        }
        return out.shuffled(using: &rng)
    }

    static let sorts: [[SortKey]] = [
        [SortKey("small")], [SortKey("big", ascending: false)], [SortKey("score")], [SortKey("score", ascending: false)],
        [SortKey("weight"), SortKey("flag", ascending: false)], [SortKey("when")], [SortKey("when", ascending: false), SortKey("small")],
        [SortKey("flag"), SortKey("score", ascending: false), SortKey("big")],
    ]

    @Test func ordersExactlyAsTheGeneralSort() throws {
        let evaluator = PredicateEvaluator(schema: Self.schema) { _, _ in [] }
        for seed: UInt64 in [1, 2, 3] {
            let records = try Self.records(600, seed: seed)
            for sort in Self.sorts {
                #expect(NumericSort(records, sort, schema: Self.schema) != nil, "\(sort.map(\.keyPath)) takes the numeric path")
                var fast = records
                try evaluator.sort(&fast, by: sort)
                var general = records
                try evaluator.sortComparingValues(&general, by: sort)
                #expect(fast.map(\.primaryKey) == general.map(\.primaryKey),
                        "seed \(seed), \(sort.map { "\($0.keyPath) \($0.ascending)" })")
            }
        }
    }

    @Test func leavesOtherKeysToTheGeneralSort() throws {
        let records = try Self.records(50, seed: 4)
        for sort in [[SortKey("name")], [SortKey("price")], [SortKey("small"), SortKey("name")], [SortKey("extra")],
                     [SortKey("nothing")], [SortKey("small.x")]] {
            #expect(NumericSort(records, sort, schema: Self.schema) == nil, "\(sort.map(\.keyPath))")
        }
        // An attribute of a sub-entity only: the general sort reports what the other records lack.
        let evaluator = PredicateEvaluator(schema: Self.schema) { _, _ in [] }
        var sorted = records
        #expect(throws: StoreError.self) { try evaluator.sort(&sorted, by: [SortKey("extra")]) }
    }
}

/// SplitMix64: a seeded generator, so a failing case can be replayed.
private struct SeededGenerator: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
