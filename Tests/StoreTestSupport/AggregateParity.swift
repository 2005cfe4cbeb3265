import Foundation
@_spi(BackendKit) import StoreAPI

/// Seeded data and random aggregate requests for checking a backend's own aggregation (SQL) against the generic
/// in-memory one: the same rows, types, order, nil, NaN and empty sets. Floating values are multiples of a power
/// of two small enough that every sum is exact, so that the order in which an engine adds cannot matter.
public enum AggregateParity {
    public static func schema() throws -> Schema {
        func attr(_ name: String, _ type: AttributeType) -> AttributeDescription { AttributeDescription(name: name, type: type) }
        return try Schema(entities: [
            EntityDescription(name: "Item", attributes: [
                attr("i64", .integer64), attr("i16", .integer16), attr("dbl", .double), attr("flt", .float),
                attr("str", .string), attr("flag", .boolean), attr("when", .date), attr("dec", .decimal),
            ], relationships: [
                RelationshipDescription(name: "owner", destination: "Owner", inverse: "items"),
            ]),
            EntityDescription(name: "Special", parent: "Item", attributes: [attr("extra", .integer32)]),
            EntityDescription(name: "Owner", attributes: [attr("name", .string), attr("rank", .integer32)], relationships: [
                RelationshipDescription(name: "items", destination: "Item", inverse: "owner", isToMany: true),
            ]),
        ])
    }

    static let strings: [StoreValue] = ["", "a", "ab", "b", "a\u{0}b", "é", "e\u{301}", "Zed", "zed", "日本", .null]

    /// Owners 1…6 and `count` items (keys from 100), some of them `Special`.
    public static func data(_ schema: Schema, seed: UInt64, count: Int = 300) -> [Record] {
        var g = SeededGenerator(seed: seed)
        var out: [Record] = []
        var itemsOf: [Int64: [Int64]] = [:]
        for i in 1...count {
            let key = Int64(100 + i)
            let owner: Int64? = i % 9 == 0 ? nil : Int64(1 + g.below(6))
            if let owner { itemsOf[owner, default: []].append(key) }
            var values: [String: StoreValue] = [
                "i64": g.below(10) == 0 ? .null : .integer64(Int64(g.below(2001)) - 1000),
                "i16": g.below(6) == 0 ? .null : .integer16(Int16(g.below(21)) - 10),
                "dbl": g.below(40) == 0
                    ? g.pick([.double(.nan), .double(.infinity), .double(-.infinity)])
                    : (g.below(8) == 0 ? .null : .double(Double(g.below(801) - 400) / 4)),
                "flt": g.below(30) == 0 ? .float(.nan) : (g.below(7) == 0 ? .null : .float(Float(g.below(41) - 20) / 2)),
                "str": g.pick(strings),
                "flag": g.pick([.boolean(true), .boolean(false), .null]),
                "when": g.below(9) == 0 ? .null : .date(Date(timeIntervalSinceReferenceDate: Double(g.below(20)) * 43_200)),
                "dec": g.below(5) == 0 ? .null : .decimal(Decimal(g.below(200)) / 8),
            ]
            let entity = i % 4 == 0 ? "Special" : "Item"
            if entity == "Special" { values["extra"] = g.below(3) == 0 ? .null : .integer32(Int32(g.below(100))) }
            out.append(schema.record(entity, key, values, ["owner": .toOne(owner)]))
        }
        for o in 1...6 {
            out.append(schema.record("Owner", Int64(o), ["name": o == 6 ? .null : .string("owner \(o % 4)"),
                                                          "rank": .integer32(Int32(o % 3))],
                                     ["items": .toMany(itemsOf[Int64(o)] ?? [])]))
        }
        return out
    }

    static let groupKeys = ["i16", "flag", "str", "owner", "owner.name", "owner.rank", "dbl", "when", "flt", "dec", "items.@count"]
    static let numeric = ["i64", "i16", "dbl", "flt", "flag", "dec"]
    static let ordered = numeric + ["str", "when"]

    static func randomPredicate(_ g: inout SeededGenerator) -> FetchPredicate? {
        func cmp(_ k: String, _ op: ComparisonOperator, _ v: StoreValue) -> FetchPredicate {
            .comparison(.keyPath(k.split(separator: ".").map(String.init)), op, .constant(v), [])
        }
        let choices: [FetchPredicate?] = [
            nil, nil, .false, cmp("i64", .greater, 0), cmp("i16", .lessOrEqual, 2), cmp("dbl", .greaterOrEqual, .double(-50)),
            cmp("str", .beginsWith, "a"), cmp("flag", .equal, .boolean(true)), cmp("owner.name", .equal, "owner 1"),
            cmp("owner", .equal, .null), cmp("dec", .greater, .decimal(10)), cmp("when", .less, .date(Date(timeIntervalSinceReferenceDate: 400_000))),
            .comparison(.keyPath(["str"]), .equal, .constant("ZED"), .caseInsensitive),
            .or([cmp("i64", .less, -500), cmp("flt", .greater, .float(5))]),
            .not(cmp("dbl", .equal, .null)),
        ]
        return g.pick(choices)
    }

    /// A random request over `Item` or `Special`.
    public static func randomRequest(_ g: inout SeededGenerator) -> AggregateRequest {
        var groupBy: [String] = []
        for _ in 0..<g.below(3) {
            let k = g.pick(groupKeys)
            if !groupBy.contains(k) { groupBy.append(k) }
        }
        // `items.@count` is Owner's; the others are Item's.
        let onOwner = groupBy.contains("items.@count") || g.below(12) == 0
        if onOwner {
            let rows: [AggregateFunction] = [.count, .sum("rank"), .min("name"), .max("rank"), .average("rank")]
            return AggregateRequest(entity: "Owner", groupBy: g.below(2) == 0 ? ["items.@count"] : [],
                                    aggregates: (0..<g.below(4)).map { _ in g.pick(rows) })
        }
        var aggregates: [AggregateFunction] = []
        for _ in 0..<g.below(5) {
            switch g.below(5) {
            case 0: aggregates.append(.count)
            case 1: aggregates.append(.sum(g.pick(numeric)))
            case 2: aggregates.append(.average(g.pick(numeric)))
            case 3: aggregates.append(.min(g.pick(ordered)))
            default: aggregates.append(.max(g.pick(ordered)))
            }
        }
        let special = g.below(5) == 0
        if special, g.below(2) == 0 { aggregates.append(.sum("extra")) }
        return AggregateRequest(entity: special ? "Special" : "Item", predicate: randomPredicate(&g), groupBy: groupBy,
                                aggregates: aggregates, includesSubentities: g.below(4) != 0)
    }

    /// The requests that differ between `store` and the in-memory `reference` (empty when they agree), each with
    /// both answers; an error on one side only is a difference too.
    public static func differences(_ store: any PersistentStore, _ reference: any PersistentStore, _ requests: [AggregateRequest])
        -> [String]
    {
        var out: [String] = []
        for r in requests {
            let got = Result { try store.aggregateRows(r) }
            let want = Result { try reference.aggregateRows(r) }
            switch (got, want) {
            case (.success(let a), .success(let b)) where a == b: continue
            case (.failure, .failure): continue
            default: out.append("\(r)\n  store:     \(got)\n  reference: \(want)")
            }
        }
        return out
    }
}
