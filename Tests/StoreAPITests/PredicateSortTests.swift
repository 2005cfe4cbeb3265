import Foundation
@_spi(BackendKit) import StoreAPI
import Testing

/// Items with awkward sort keys: nil, NaN, infinities, ties, case and accents.
private struct SortFixture {
    let schema: Schema
    var tables: [String: [Int64: Record]] = [:]

    init() throws {
        schema = try Schema(entities: [
            EntityDescription(
                name: "Item",
                attributes: [
                    AttributeDescription(name: "name", type: .string),
                    AttributeDescription(name: "score", type: .double),
                ],
                relationships: [RelationshipDescription(name: "owner", destination: "Owner", inverse: "items")]),
            EntityDescription(
                name: "Owner", attributes: [AttributeDescription(name: "name", type: .string)],
                relationships: [
                    RelationshipDescription(name: "items", destination: "Item", inverse: "owner", isToMany: true)
                ]),
        ])
        let rows: [(Int64, StoreValue, StoreValue, Int64?)] = [
            (1, "b", 2.0, 1), (2, "a", nil, 1), (3, "B", .double(.nan), 2), (4, "é", .double(-.infinity), nil),
            (5, nil, 2.0, nil), (6, "A", nil, nil), (7, "a", .double(.nan), nil), (8, "b", 1.0, nil),
        ]
        let item = try schema.requireEntity("Item")
        let owner = try schema.requireEntity("Owner")
        for (pk, name, score, ownerKey) in rows {
            var r = item.newRecord(primaryKey: pk)
            r.attributes = [name, score]
            r.relationships = [.toOne(ownerKey)]
            tables["Item", default: [:]][pk] = r
        }
        for (pk, name, items) in [(Int64(1), StoreValue("z"), [Int64(1), 2]), (2, "m", [3])] {
            var o = owner.newRecord(primaryKey: pk)
            o.attributes = [name]
            o.relationships = [.toMany(items)]
            tables["Owner", default: [:]][pk] = o
        }
    }

    var evaluator: PredicateEvaluator {
        let t = tables
        return PredicateEvaluator(schema: schema) { root, keys in keys.compactMap { t[root]?[$0] } }
    }

    /// The items in a scrambled order, so the result cannot come from the input order.
    var candidates: [Record] {
        let items = (tables["Item"] ?? [:]).values.sorted { $0.primaryKey < $1.primaryKey }
        return [5, 2, 7, 0, 3, 6, 1, 4].compactMap { items.indices.contains($0) ? items[$0] : nil }
    }

    func fetch(
        _ sort: [SortKey], where predicate: FetchPredicate? = nil, offset: Int = 0, limit: Int? = nil
    ) throws -> [Int64] {
        let request = FetchRequest(
            entity: "Item", predicate: predicate, sortDescriptors: sort, offset: offset, limit: limit)
        return try evaluator.execute(request, candidates: candidates).map(\.primaryKey)
    }
}

@Suite("Predicate evaluator sorting and slicing")
struct PredicateSortTests {
    @Test("ascending: nil first, then NaN, then values; ties by primary key")
    func ascending() throws {
        let f = try SortFixture()
        #expect(try f.fetch([SortKey("score")]) == [2, 6, 3, 7, 4, 8, 1, 5])
    }

    @Test("descending reverses the values, puts nil last, and still breaks ties by ascending key")
    func descending() throws {
        let f = try SortFixture()
        #expect(try f.fetch([SortKey("score", ascending: false)]) == [1, 5, 8, 4, 3, 7, 2, 6])
    }

    @Test("strings sort by Unicode scalar value")
    func strings() throws {
        let f = try SortFixture()
        #expect(try f.fetch([SortKey("name")]) == [5, 6, 3, 2, 7, 1, 8, 4])
    }

    @Test("later descriptors order the ties of earlier ones")
    func multiple() throws {
        let f = try SortFixture()
        #expect(
            try f.fetch([SortKey("name", ascending: false), SortKey("score")]) == [4, 8, 1, 2, 7, 3, 6, 5])
    }

    @Test("sort keys may go through to-one relationships, and `self` is the primary key")
    func keyPaths() throws {
        let f = try SortFixture()
        #expect(try f.fetch([SortKey("owner.name")]) == [4, 5, 6, 7, 8, 3, 1, 2])
        #expect(try f.fetch([SortKey("self", ascending: false)]) == [8, 7, 6, 5, 4, 3, 2, 1])
        #expect(try f.fetch([]) == [1, 2, 3, 4, 5, 6, 7, 8])
    }

    @Test("filter, then sort, then slice")
    func pipeline() throws {
        let f = try SortFixture()
        let notNil = try FetchPredicate("score != nil")
        #expect(try f.fetch([SortKey("score", ascending: false)], where: notNil) == [1, 5, 8, 4, 3, 7])
        #expect(try f.fetch([SortKey("score", ascending: false)], where: notNil, offset: 1, limit: 3) == [5, 8, 4])
        #expect(try f.fetch([SortKey("score", ascending: false)], where: notNil, offset: 5, limit: 3) == [7])
    }

    @Test(
        "offset and limit, including out-of-range and negative values",
        arguments: [
            (0, nil, [1, 2, 3, 4, 5]), (2, nil, [3, 4, 5]), (0, 2, [1, 2]), (4, 10, [5]), (5, nil, []), (99, 1, []),
            (-3, 2, [1, 2]), (1, -1, []), (1, 0, []), (2, Int.max, [3, 4, 5]), (Int.max, Int.max, []),
        ] as [(Int, Int?, [Int64])])
    func slicing(_ offset: Int, _ limit: Int?, _ expected: [Int64]) throws {
        let records = (1...5).map {
            Record(entity: "Item", primaryKey: $0, globalID: UUID(), attributes: [], relationships: [])
        }
        #expect(PredicateEvaluator.slice(records, offset: offset, limit: limit).map(\.primaryKey) == expected)
    }
}
