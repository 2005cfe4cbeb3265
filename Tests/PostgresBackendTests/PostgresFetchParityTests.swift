import Foundation
import PostgresBackend
@_spi(BackendKit) import StoreAPI
import StoreTestSupport
import Testing

/// Fetches and counts translated to SQL return exactly what the reference ``MemoryStore`` returns for the same
/// data: edge values (nil, NaN, −0, integers beyond 2^53, NUL and non-ASCII strings), hand-picked predicates and
/// sorts, and a seeded run of random predicates — the predicate-to-SQL path fuzzed against the evaluator.
@Suite(.enabled(if: PostgresTestServer.isAvailable, PostgresTestServer.skipReason))
struct PostgresFetchParityTests {
    static func schema() throws -> Schema {
        func attr(_ name: String, _ type: AttributeType) -> AttributeDescription { AttributeDescription(name: name, type: type) }
        return try Schema(entities: [
            EntityDescription(name: "Item", attributes: [
                attr("i64", .integer64), attr("i16", .integer16), attr("dbl", .double), attr("flt", .float),
                attr("str", .string), attr("flag", .boolean), attr("when", .date), attr("ident", .uuid),
                attr("link", .uri), attr("blob", .binary), attr("dec", .decimal),
            ], relationships: [
                RelationshipDescription(name: "owner", destination: "Owner", inverse: "items"),
                RelationshipDescription(name: "tags", destination: "Owner", isToMany: true, isOrdered: true),
            ]),
            EntityDescription(name: "Special", parent: "Item", attributes: [attr("extra", .string)]),
            EntityDescription(name: "Owner", attributes: [attr("name", .string), attr("rank", .integer32)], relationships: [
                RelationshipDescription(name: "items", destination: "Item", inverse: "owner", isToMany: true),
            ]),
        ])
    }

    static let strings: [StoreValue] = ["", "a", "ab", "abc", "b", "a\u{0}b", "é", "e\u{301}", "Zed", "zed", "日本", "\u{FEFF}x", .null]
    static let doubles: [StoreValue] = [.double(.nan), .double(-0.0), .double(0), .double(1.5), .double(-2), .double(.infinity),
                                        .double(-.infinity), .double(9_007_199_254_740_994), .double(1e-300), .null]
    static let integers: [StoreValue] = [.integer64(0), .integer64(1), .integer64(-1), .integer64(.max), .integer64(.min),
                                         .integer64(9_007_199_254_740_993), .integer64(42), .null]

    static func data(_ schema: Schema) -> [Record] {
        var g = SeededGenerator(seed: 26)
        var out: [Record] = []
        for o in 1...6 {
            out.append(schema.record("Owner", Int64(o), ["name": o == 6 ? .null : .string("owner \(o % 4)"),
                                                          "rank": .integer32(Int32(o % 3))]))
        }
        var itemsOf: [Int64: [Int64]] = [:]
        for i in 1...160 {
            let owner: Int64? = i % 7 == 0 ? nil : Int64(1 + g.below(6))
            if let owner { itemsOf[owner, default: []].append(Int64(100 + i)) }
            var values: [String: StoreValue] = [
                "i64": g.pick(integers), "i16": i % 5 == 0 ? .null : .integer16(Int16(g.below(20)) - 10),
                "dbl": g.pick(doubles), "flt": g.pick([.float(.nan), .float(-0.0), .float(0.1), .float(2), .null]),
                "str": g.pick(strings), "flag": g.pick([.boolean(true), .boolean(false), .null]),
                "when": g.pick([.date(Date(timeIntervalSinceReferenceDate: 0)), .date(Date(timeIntervalSinceReferenceDate: -1e9)),
                                .date(Date(timeIntervalSinceReferenceDate: 86_400.5)), .null]),
                "ident": g.pick([.uuid(UUID(uuidString: "00000000-0000-0000-0000-000000000001")!),
                                 .uuid(UUID(uuidString: "FFFFFFFF-0000-0000-0000-000000000000")!), .null]),
                "link": g.pick([.uri(URL(string: "https://a.example/x")!), .uri(URL(string: "file:///tmp/b")!), .null]),
                "blob": g.pick([.binary(Data()), .binary(Data([0, 1])), .binary(Data([0xFF])), .null]),
                "dec": g.pick([.decimal(Decimal(string: "1.25")!), .decimal(0), .null]),
            ]
            let entity = i % 4 == 0 ? "Special" : "Item"
            if entity == "Special" { values["extra"] = g.pick(strings) }
            let tags = (0..<g.below(4)).map { _ in Int64(1 + g.below(6)) }
            out.append(schema.record(entity, Int64(100 + i), values, ["owner": .toOne(owner), "tags": .toMany(Array(Set(tags)).sorted())]))
        }
        return out.map { r in
            guard r.entity == "Owner", let e = schema.entity(named: "Owner"), let k = e.relationshipIndex("items") else { return r }
            var o = r
            o.relationships[k] = .toMany(itemsOf[r.primaryKey] ?? [])
            return o
        }
    }

    static let attributes = ["i64", "i16", "dbl", "flt", "str", "flag", "when", "ident", "link", "blob", "dec", "owner", "owner.name",
                             "owner.rank", "tags.@count", "self"]
    static let constants: [StoreValue] = strings + doubles + integers + [
        .boolean(true), .float(0.1), .date(Date(timeIntervalSinceReferenceDate: 0)), .string("2001-01-01T00:00:00Z"),
        .uuid(UUID(uuidString: "00000000-0000-0000-0000-000000000001")!), .string("00000000-0000-0000-0000-000000000001"),
        .uri(URL(string: "file:///tmp/b")!), .binary(Data([0, 1])), .decimal(Decimal(string: "1.25")!), .integer16(2),
    ]
    static let operators: [ComparisonOperator] = [.equal, .notEqual, .less, .lessOrEqual, .greater, .greaterOrEqual,
                                                  .beginsWith, .endsWith, .contains, .in, .between, .like, .matches]
    /// `LIKE` patterns (also compared as plain strings): wildcards, SQL's own wildcards and escape as literals.
    static let patterns: [StoreValue] = ["a*", "*b", "*", "a?b", "?", "%", "*_*", "\\*", "*\u{0}*", "é*", "*日*"]
    /// Paths over the to-many `tags` (to Owner) for `ANY`/`ALL`/`NONE`, `IN` and `CONTAINS`.
    static let manyPaths = ["tags.name", "tags.rank", "tags", "tags.items.str", "tags.items.owner.name"]

    static func randomPredicate(_ g: inout SeededGenerator, depth: Int = 0) -> FetchPredicate {
        let roll = g.below(10)
        if depth < 3, roll < 2 {
            let parts = (0..<(1 + g.below(3))).map { _ in randomPredicate(&g, depth: depth + 1) }
            return roll == 0 ? .and(parts) : .or(parts)
        }
        if depth < 3, roll == 2 { return .not(randomPredicate(&g, depth: depth + 1)) }
        let op = g.pick(operators)
        let options: ComparisonOptions = g.below(8) == 0 ? .caseInsensitive : []
        if g.below(5) == 0 {
            let many = g.pick(manyPaths).split(separator: ".").map(String.init)
            let value = g.pick(op == .like ? patterns : constants)
            switch (op, g.below(5)) {
            case (.in, _): return .comparison(.constant(value), .in, .keyPath(many), options)
            case (.contains, _): return .comparison(.keyPath(many), .contains, .constant(value), options)
            case (.between, _): return .comparison(.any(many), .between, .list([g.pick(constants), g.pick(constants)]), options)
            case (_, 0): return .comparison(.all(many), op, .constant(value), options)
            case (_, 1): return .not(.comparison(.any(many), op, .constant(value), options))
            default: return .comparison(.any(many), op, .constant(value), options)
            }
        }
        let path = g.pick(attributes).split(separator: ".").map(String.init)
        if op == .like { return .comparison(.keyPath(path), .like, .constant(g.pick(patterns + strings)), options) }
        switch op {
        case .in: return .comparison(.keyPath(path), .in, .list((0..<g.below(4)).map { _ in g.pick(constants) }), options)
        case .between: return .comparison(.keyPath(path), .between, .list([g.pick(constants), g.pick(constants)]), options)
        default:
            return g.below(6) == 0
                ? .comparison(.constant(g.pick(constants)), op, .keyPath(path), options)
                : .comparison(.keyPath(path), op, .constant(g.pick(constants)), options)
        }
    }

    @Test func fetchAndCountMatchTheReference() throws {
        let schema = try Self.schema()
        let data = Self.data(schema)
        let metadata = StoreMetadata(storeType: "postgres", schema: schema)
        let reference = MemoryStore(url: nil, metadata: metadata)
        try reference.save(StoreChanges(inserted: data))
        let url = try PostgresTestServer.shared().storeURL("parity")
        let backend = PostgresStoreBackend()
        let store = try backend.open(at: url, options: StoreOptions(), creating: metadata)
        defer {
            try? store.close()
            try? backend.destroyStore(at: url)
        }
        try store.save(StoreChanges(inserted: data))

        let sorts: [[SortKey]] = [[], [SortKey("dbl")], [SortKey("str", ascending: false), SortKey("i64")], [SortKey("when"), SortKey("flt", ascending: false)],
                                  [SortKey("owner.name")], [SortKey("flag"), SortKey("ident")], [SortKey("dec")]]
        var g = SeededGenerator(seed: 0x5EED_2600)
        var requests: [FetchRequest] = [
            FetchRequest(entity: "Item", predicate: try FetchPredicate("dbl > 0")),
            FetchRequest(entity: "Item", predicate: try FetchPredicate("dbl >= %@", arguments: [.double(-.infinity)])),
            FetchRequest(entity: "Item", predicate: try FetchPredicate("i64 == %@", arguments: [.double(9_007_199_254_740_992)])),
            FetchRequest(entity: "Item", predicate: try FetchPredicate("str BEGINSWITH 'a'"), sortDescriptors: [SortKey("str")]),
            FetchRequest(entity: "Item", predicate: try FetchPredicate("str ENDSWITH 'b'")),
            FetchRequest(entity: "Item", predicate: try FetchPredicate("NOT (owner.name == 'owner 1')")),
            FetchRequest(entity: "Item", predicate: try FetchPredicate("tags.@count >= 2"), sortDescriptors: [SortKey("dbl", ascending: false)],
                         offset: 2, limit: 7),
            FetchRequest(entity: "Special", predicate: try FetchPredicate("extra != nil"), includesSubentities: false),
            FetchRequest(entity: "Owner", predicate: try FetchPredicate("items.@count > 20")),
            FetchRequest(entity: "Item", predicate: try FetchPredicate("ANY tags.name BEGINSWITH 'owner'"), sortDescriptors: [SortKey("str")]),
            FetchRequest(entity: "Item", predicate: try FetchPredicate("ALL tags.rank > 0")),
            FetchRequest(entity: "Item", predicate: try FetchPredicate("NONE tags.items.str == 'a'")),
            FetchRequest(entity: "Item", predicate: try FetchPredicate("str LIKE 'a*'")),
            FetchRequest(entity: "Owner", predicate: try FetchPredicate("ANY items.owner.name == 'owner 1'")),
            FetchRequest(entity: "Owner", predicate: try FetchPredicate("ANY items.str LIKE '*b'"), offset: 1, limit: 2),
        ]
        for i in 0..<400 {
            requests.append(FetchRequest(
                entity: g.below(4) == 0 ? "Special" : "Item", predicate: Self.randomPredicate(&g),
                sortDescriptors: sorts[i % sorts.count], offset: g.below(3) == 0 ? g.below(20) : 0,
                limit: g.below(3) == 0 ? g.below(30) : nil))
        }
        var compared = 0
        var errors = 0
        for request in requests {
            let expected: Result<[Record], Error> = Result { try reference.fetch(request) }
            let actual: Result<[Record], Error> = Result { try store.fetch(request) }
            switch (expected, actual) {
            case (.success(let e), .success(let a)):
                #expect(a == e, "fetch differs for \(request)")
                #expect(try store.count(request) == reference.count(request), "count differs for \(request)")
                compared += e.count
            case (.failure, .failure):
                errors += 1
            default:
                Issue.record("one store failed and the other did not for \(request): \(expected) vs \(actual)")
            }
        }
        #expect(compared > 1_000, "the requests must actually return records")
    }
}
