import Foundation
import Logging
@_spi(BackendKit) import StoreAPI
import StoreTestSupport
import Testing
@testable import SQLiteBackend

/// Fetches, counts, sorts and slices give exactly the in-memory reference's results on the same data, both when
/// the predicate is translated to SQL and when it is evaluated in memory.
@Suite struct SQLiteFetchTests {
    static func kp(_ path: String) -> FetchExpression { .keyPath(path.split(separator: ".").map(String.init)) }

    static func cmp(_ path: String, _ op: ComparisonOperator, _ value: StoreValue, _ options: ComparisonOptions = [])
        -> FetchPredicate
    {
        .comparison(kp(path), op, .constant(value), options)
    }

    static let uuids = (0..<5).map { i in UUID(uuid: (UInt8(i), 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, UInt8(15 * i))) }
    static let day: TimeInterval = 86_400

    /// Books whose attributes cycle through awkward values (nil, NaN, ±0, infinities, NUL characters, non-ASCII),
    /// with authors, tags and chapters.
    static func dataset(_ schema: Schema) -> [Record] {
        let titles: [StoreValue] = [nil, "", "Alpha", "alpha", "Beta", "Ärger", "Zeta", "a\u{0}b", "🎉 party", "Al",
                                    "Alphabet", "beta", "Æon", "e\u{301}", "Al\u{0}pha", "Straße", "STRASSE", "İstanbul",
                                    "istanbul", "é", "ÉTÉ", "ﬁx"]
        let prices: [StoreValue] = [nil, .double(-0.0), .double(0.0), .double(.nan), .double(.infinity),
                                    .double(-.infinity), .double(1.5), .double(10), .double(10.000_000_1), .double(-3),
                                    .double(1e300)]
        let dates: [StoreValue] = [nil, .date(Date(timeIntervalSinceReferenceDate: .nan)),
                                   .date(Date(timeIntervalSinceReferenceDate: 0)),
                                   .date(Date(timeIntervalSinceReferenceDate: 568_080_000)),  // 2019-01-01
                                   .date(Date(timeIntervalSinceReferenceDate: 568_080_000 + day / 3)),
                                   .date(Date(timeIntervalSinceReferenceDate: -1e9))]
        let pages: [StoreValue] = [nil, .integer16(100), .integer16(150), .integer16(200), .integer16(-5),
                                   .integer16(.max), .integer16(300)]
        let costs: [StoreValue] = [nil, .decimal(Decimal(string: "2.5")!), .decimal(1), .decimal(.nan),
                                   .decimal(Decimal(string: "-0.1")!)]
        let idents: [StoreValue] = [nil] + uuids.map { .uuid($0) }
        let links: [StoreValue] = [nil, .uri(URL(string: "https://a.example/x")!), .uri(URL(string: "file:///b")!)]
        let covers: [StoreValue] = [nil, .binary(Data()), .binary(Data([1])), .binary(Data([0, 255])), .binary(Data([1, 0]))]
        let flags: [StoreValue] = [nil, true, false]
        let weights: [StoreValue] = [nil, .float(0.25), .float(.nan), .float(-0.0), .float(3)]
        func pick(_ values: [StoreValue], _ i: Int) -> StoreValue { values[i % values.count] }

        var g = Graph(schema: schema)
        g.add("Author", 1, ["name": "Ada", "rank": .integer16(3)])
        g.add("Author", 2, ["name": "Bea", "rank": .integer16(-2)])
        g.add("Author", 3, ["name": "Al", "rank": nil])
        g.add("Reader", 4, ["name": "Cy"])
        g.link("Author", 2, "mentor", 1)
        g.link("Author", 3, "mentor", 2)
        for t in Int64(1)...4 { g.add("Tag", t, ["name": .string("tag\(t)")]) }
        var chapter: Int64 = 0
        for i in 0..<64 {
            let pk = Int64(i + 1)
            g.add("Book", pk, [
                "title": pick(titles, i), "price": pick(prices, i), "published": pick(dates, i),
                "isbn": i % 4 == 0 ? nil : .string("isbn-\(i)"), "pages": pick(pages, i), "cost": pick(costs, i),
                "ident": pick(idents, i), "link": pick(links, i), "cover": pick(covers, i), "inPrint": pick(flags, i),
                "weight": pick(weights, i),
            ])
            if i % 5 != 4 { g.link("Book", pk, "author", Int64(i % 3 + 1)) }
            for t in 0..<(i % 4) { g.link("Book", pk, "tags", Int64((i + t) % 4 + 1)) }
            for _ in 0..<(i % 3) {
                chapter += 1
                g.add("Chapter", chapter, ["number": .integer32(Int32(chapter))])
                g.link("Chapter", chapter, "book", pk)
            }
            if i % 7 == 0, i > 0 { g.link("Book", pk, "related", Int64(i)) }
        }
        return g.all
    }

    /// Predicates the translator must turn into SQL.
    static let translatable: [FetchPredicate] = {
        let u = uuids[2]
        return [
            .true, .false, .and([]), .or([]),
            cmp("price", .greater, .double(1)), cmp("price", .greaterOrEqual, .double(0)),
            cmp("price", .less, .double(10)), cmp("price", .lessOrEqual, .double(0)), cmp("price", .equal, .double(0)),
            cmp("price", .notEqual, .double(10)), cmp("price", .equal, nil), cmp("price", .notEqual, nil),
            cmp("price", .greater, .integer64(1)), cmp("price", .equal, .float(1.5)), cmp("price", .less, .decimal(2)),
            cmp("price", .equal, .double(.nan)), cmp("price", .notEqual, .double(.nan)), cmp("price", .less, .double(.infinity)),
            cmp("price", .equal, "10"), cmp("price", .notEqual, "10"),
            cmp("pages", .greater, .integer64(100)), cmp("pages", .equal, .double(150)),
            cmp("pages", .less, .double(150.5)), cmp("pages", .equal, .decimal(150)), cmp("pages", .greater, .boolean(true)),
            .comparison(kp("pages"), .between, .list([.integer64(100), .integer64(200)]), []),
            .comparison(kp("pages"), .between, .list([.double(99.5), nil]), []),
            .comparison(kp("pages"), .in, .list([.integer64(100), .integer64(300), nil]), []),
            .comparison(kp("pages"), .in, .list([]), []),
            cmp("title", .equal, "Alpha"), cmp("title", .notEqual, "Alpha"), cmp("title", .less, "B"),
            cmp("title", .greaterOrEqual, "alpha"), cmp("title", .beginsWith, "Al"), cmp("title", .endsWith, "ta"),
            cmp("title", .contains, "ph"), cmp("title", .contains, ""), cmp("title", .beginsWith, "a\u{0}"),
            cmp("title", .contains, "\u{0}"), cmp("title", .endsWith, "\u{301}"), cmp("title", .beginsWith, ""),
            cmp("title", .equal, nil), cmp("title", .equal, .integer64(1)), cmp("title", .notEqual, .integer64(1)),
            cmp("title", .beginsWith, .integer64(1)), cmp("title", .equal, .uri(URL(string: "Alpha")!)),
            .comparison(kp("title"), .in, .list(["Alpha", "Beta", nil]), []),
            cmp("published", .greater, .date(Date(timeIntervalSinceReferenceDate: 1))),
            cmp("published", .lessOrEqual, .date(Date(timeIntervalSinceReferenceDate: 568_080_000))),
            cmp("published", .equal, nil), cmp("published", .greater, "2019-01-01T00:00:00Z"),
            cmp("published", .greater, .double(0)), cmp("published", .notEqual, .double(0)),
            cmp("ident", .equal, .uuid(u)), cmp("ident", .equal, .string(u.uuidString.lowercased())),
            cmp("ident", .less, .uuid(u)), cmp("ident", .equal, "not a uuid"),
            cmp("link", .equal, .uri(URL(string: "file:///b")!)), cmp("link", .equal, "https://a.example/x"),
            cmp("link", .greater, "g"), cmp("link", .beginsWith, "file"),
            cmp("cover", .equal, .binary(Data())), cmp("cover", .greater, .binary(Data([1]))), cmp("cover", .equal, nil),
            cmp("inPrint", .equal, true), cmp("inPrint", .equal, .integer64(1)), cmp("inPrint", .notEqual, false),
            cmp("weight", .greater, .double(0.2)), cmp("weight", .greaterOrEqual, .double(-1)), cmp("weight", .equal, .double(0)),
            cmp("author", .equal, nil), cmp("author", .equal, .integer64(1)), cmp("author.name", .equal, "Ada"),
            cmp("author.name", .beginsWith, "A"), cmp("author.rank", .greater, .integer64(0)),
            cmp("author.mentor.name", .equal, "Ada"), cmp("author.mentor", .equal, nil),
            cmp("chapters.@count", .greater, .integer64(1)), cmp("tags.@count", .equal, .integer64(0)),
            cmp("author.@count", .equal, .integer64(1)), cmp("related.@count", .greaterOrEqual, .integer64(1)),
            cmp("self", .equal, .integer64(3)), .comparison(kp("self"), .in, .list([1, 2, 3]), []),
            .not(cmp("price", .less, .double(5))), .not(cmp("title", .beginsWith, "A")),
            .not(cmp("author.name", .equal, "Ada")), .not(cmp("price", .greater, .double(1))),
            .and([.or([cmp("price", .greater, .double(1)), cmp("title", .beginsWith, "A")]), .not(cmp("pages", .equal, nil))]),
            .or([.not(.and([cmp("weight", .greater, .double(0)), cmp("inPrint", .equal, true)])), cmp("pages", .less, .integer64(0))]),
            .comparison(.constant(.double(5)), .less, kp("price"), []),
            .comparison(.constant("Alpha"), .equal, kp("title"), []),
        ] + foldingAndMatching + quantifiers
    }()

    /// `[c]`/`[d]`, `LIKE` and `MATCHES`, which run in SQL through the evaluator's own folding and matching
    /// (Foundation folds `ß` to `ss`, `İ` to `i` + combining dot, `ﬁ` to `fi`; `é` and `e` + U+0301 stay distinct).
    static let foldingAndMatching: [FetchPredicate] = {
        let c: ComparisonOptions = .caseInsensitive
        let d: ComparisonOptions = .diacriticInsensitive
        let cd: ComparisonOptions = [.caseInsensitive, .diacriticInsensitive]
        return [
            cmp("title", .equal, "alpha", c), cmp("title", .equal, "strasse", c), cmp("title", .equal, "STRASSE", c),
            cmp("title", .equal, "istanbul", c), cmp("title", .equal, "istanbul", cd), cmp("title", .equal, "e", d),
            cmp("title", .equal, "E", cd), cmp("title", .equal, "ete", cd), cmp("title", .equal, "FIX", c),
            cmp("title", .notEqual, "alpha", c), cmp("title", .less, "b", c), cmp("title", .greaterOrEqual, "ä", cd),
            cmp("title", .equal, nil, c), cmp("title", .notEqual, nil, cd), cmp("title", .equal, .integer64(1), c),
            cmp("title", .beginsWith, "AL", c), cmp("title", .beginsWith, "i", c), cmp("title", .beginsWith, "I", cd),
            cmp("title", .endsWith, "SSE", c), cmp("title", .endsWith, "ße", c), cmp("title", .contains, "SS", c),
            cmp("title", .contains, "\u{301}", c), cmp("title", .contains, "\u{301}", d), cmp("title", .contains, "", cd),
            cmp("title", .beginsWith, "A\u{0}", c), cmp("title", .contains, "T", cd), cmp("author.name", .beginsWith, "a", c),
            .comparison(kp("title"), .in, .list(["ALPHA", "straße", "e", nil]), cd),
            .comparison(kp("title"), .between, .list(["a", "B"]), c),
            .not(cmp("title", .beginsWith, "a", c)),
            cmp("title", .like, "A*"), cmp("title", .like, "*a"), cmp("title", .like, "?l*"), cmp("title", .like, "*\u{0}*"),
            cmp("title", .like, ""), cmp("title", .like, "*"), cmp("title", .like, "a*", c), cmp("title", .like, "*e", d),
            cmp("title", .like, "str*", c), cmp("title", .like, "%_*"), cmp("title", .like, .integer64(1)),
            cmp("title", .matches, "A.*"), cmp("title", .matches, ".*[0-9].*"), cmp("title", .matches, "al.*", c),
            cmp("title", .matches, "e", d), cmp("title", .matches, "\\D+", c), cmp("title", .matches, ".*\u{0}.*"),
            cmp("link", .like, "file*"), cmp("pages", .matches, "1.*"),
        ]
    }()

    /// `ANY`/`ALL`/`NONE`, `IN` and `CONTAINS` over to-many relationships, which run as `EXISTS` subqueries.
    static let quantifiers: [FetchPredicate] = [
        .comparison(.any(["tags", "name"]), .equal, .constant("tag2"), []),
        .comparison(.any(["tags", "name"]), .beginsWith, .constant("TAG"), .caseInsensitive),
        .comparison(.all(["chapters", "number"]), .greater, .constant(.integer64(1)), []),
        .comparison(.all(["tags", "name"]), .notEqual, .constant("tag1"), []),
        .not(.comparison(.any(["tags", "name"]), .in, .list(["tag1", "tag3"]), [])),
        .comparison(.constant("tag2"), .in, kp("tags.name"), []),
        .comparison(.constant("TAG2"), .in, kp("tags.name"), .caseInsensitive),
        .comparison(kp("tags.name"), .contains, .constant("tag1"), []),
        .comparison(.any(["tags"]), .equal, .constant(.integer64(2)), []),
        .comparison(.any(["chapters", "book", "title"]), .equal, .constant("Alpha"), []),
        .comparison(.any(["related", "tags", "name"]), .equal, .constant("tag1"), []),
        .comparison(.all(["related", "chapters", "number"]), .less, .constant(.integer64(5)), []),
        .comparison(.any(["tags", "books", "author", "name"]), .equal, .constant("Bea"), []),
        .comparison(.any(["chapters", "number"]), .between, .list([.integer64(2), .integer64(6)]), []),
        .comparison(.all(["tags", "name"]), .equal, .constant(nil), []),
        .comparison(.any(["related", "price"]), .greater, .constant(.double(1)), []),
        .and([.comparison(.any(["tags", "name"]), .equal, .constant("tag2"), []), cmp("title", .like, "A*", .caseInsensitive)]),
    ]

    /// Predicates the translator must leave to the evaluator.
    static let untranslatable: [FetchPredicate] = [
        cmp("cost", .greater, .integer64(1)), cmp("cost", .equal, nil), cmp("title", .equal, .uuid(uuids[1])),
        cmp("link", .equal, "FILE:///B", .caseInsensitive),
        .comparison(.any(["author", "books", "title"]), .equal, .constant("Alpha"), []),
        .comparison(.any(["chapters", "number"]), .equal, kp("pages"), []),
        .comparison(.any(["tags", "name"]), .equal, .constant(.uuid(uuids[1])), .caseInsensitive),
        cmp("pages", .equal, .decimal(Decimal(string: "150.5")!)),
        .comparison(kp("price"), .less, kp("pages"), []),
        .not(cmp("cost", .less, .integer64(2))),
    ]

    static let sorts: [[SortKey]] = [
        [], [SortKey("price")], [SortKey("price", ascending: false)], [SortKey("title")],
        [SortKey("title", ascending: false), SortKey("pages")], [SortKey("published")], [SortKey("author.name")],
        [SortKey("cost")], [SortKey("weight", ascending: false)], [SortKey("ident")], [SortKey("cover")],
        [SortKey("inPrint", ascending: false), SortKey("title")], [SortKey("chapters.@count", ascending: false)],
        [SortKey("author.mentor.name"), SortKey("price")], [SortKey("link", ascending: false)],
    ]

    static let slices: [(Int, Int?)] = [(0, nil), (2, 5), (0, 0), (100, 3), (3, nil), (0, -1)]

    /// Forces the in-memory path without changing the meaning (`self == self` compares two key paths).
    static func forceFallback(_ p: FetchPredicate) -> FetchPredicate {
        .and([p, .comparison(kp("self"), .equal, kp("self"), [])])
    }

    @Test func translationCoversWhatItShould() throws {
        let schema = try Fixture.schema()
        let layout = SQLiteLayout(schema: schema)
        let book = try #require(schema.entity(named: "Book"))
        for p in Self.translatable {
            var q = QueryTranslator(layout: layout)
            #expect(q.translate(p, entity: book) != nil, "should translate: \(p)")
        }
        for p in Self.untranslatable {
            var q = QueryTranslator(layout: layout)
            #expect(q.translate(p, entity: book) == nil, "should not translate: \(p)")
        }
        // A pattern that does not compile stays with the evaluator, which reports it.
        var q = QueryTranslator(layout: layout)
        #expect(q.translate(Self.cmp("title", .matches, "(unclosed"), entity: book) == nil)
        for sort in Self.sorts {
            var q = QueryTranslator(layout: layout)
            let expected = !sort.contains { $0.keyPath == "cost" }
            #expect((q.orderBy(sort, entity: book) != nil) == expected, "sort \(sort.map(\.keyPath))")
        }
    }

    @Test func resultsEqualTheReferenceOnBothPaths() throws {
        let dir = try TemporaryDirectory("sqlitestore-tests")
        let schema = try Fixture.schema()
        let store = try Fixture.open(dir.path("fetch.sqlite"), schema: schema)
        defer { try? store.close() }
        let reference = MemoryStore(url: nil, metadata: Fixture.metadata(schema))
        let records = Self.dataset(schema)
        try store.save(StoreChanges(inserted: records))
        try reference.save(StoreChanges(inserted: records))

        var checked = 0
        var nonEmpty = 0
        for p in Self.translatable + Self.untranslatable {
            for (vi, variant) in [p, Self.forceFallback(p)].enumerated() {
                // Every sort on the SQL path; the in-memory path is the reference's own code, so fewer suffice.
                let sorts = vi == 0 ? Self.sorts : [Self.sorts[0], Self.sorts[2], Self.sorts[7]]
                for (si, sort) in sorts.enumerated() {
                    let slices = si < 2 ? Self.slices : [(0, nil)]
                    for (offset, limit) in slices {
                        let request = FetchRequest(
                            entity: "Book", predicate: variant, sortDescriptors: sort, offset: offset, limit: limit)
                        let expected = try reference.fetch(request)
                        let actual = try store.fetch(request)
                        if !sameRecords(actual, expected, schema) {
                            Issue.record("\(p) sorted by \(sort.map { "\($0.keyPath) \($0.ascending)" }) [\(offset), \(String(describing: limit))]: got \(actual.map(\.primaryKey)), expected \(expected.map(\.primaryKey)); \(firstDifference(actual, expected, schema))")
                        }
                        if si == 0 {
                            let expectedCount = try reference.count(request)
                            #expect(try store.count(request) == expectedCount, "count of \(p) [\(offset), \(String(describing: limit))]")
                        }
                        checked += 1
                        if !expected.isEmpty { nonEmpty += 1 }
                    }
                }
            }
        }
        // The data must actually exercise the predicates: most requests select something.
        #expect(nonEmpty > checked / 2, "\(nonEmpty) of \(checked) requests matched records")
    }

    /// The store says when a predicate runs in memory (a debug line): never for what the translator takes, always
    /// for what it leaves — so `[c]`, `LIKE`, `MATCHES` and `ANY`/`ALL` no longer load every record.
    @Test func translatedPredicatesNeverRunInMemory() throws {
        let dir = try TemporaryDirectory("sqlitestore-tests")
        let schema = try Fixture.schema()
        let store = try Fixture.open(dir.path("path.sqlite"), schema: schema)
        defer { try? store.close() }
        try store.save(StoreChanges(inserted: Self.dataset(schema)))
        func inMemoryLines(_ predicates: [FetchPredicate]) throws -> Int {
            let capture = LogCapture()
            try withLogger(capture.logger()) { _ in
                for p in predicates { _ = try store.fetch(FetchRequest(entity: "Book", predicate: p)) }
            }
            return capture.all.filter { $0.message == "predicate evaluated in memory" }.count
        }
        #expect(try inMemoryLines(Self.foldingAndMatching + Self.quantifiers) == 0)
        #expect(try inMemoryLines(Self.untranslatable) == Self.untranslatable.count)
    }

    @Test func otherEntitiesAndKeyPathsEqualTheReference() throws {
        let dir = try TemporaryDirectory("sqlitestore-tests")
        let schema = try Fixture.schema()
        let store = try Fixture.open(dir.path("fetch2.sqlite"), schema: schema)
        defer { try? store.close() }
        let reference = MemoryStore(url: nil, metadata: Fixture.metadata(schema))
        let records = Self.dataset(schema)
        try store.save(StoreChanges(inserted: records))
        try reference.save(StoreChanges(inserted: records))
        let requests: [FetchRequest] = [
            FetchRequest(entity: "Person", predicate: Self.cmp("books.@count", .greater, .integer64(20))),
            FetchRequest(entity: "Person", predicate: Self.cmp("mentees.@count", .equal, .integer64(1)),
                         sortDescriptors: [SortKey("name", ascending: false)]),
            FetchRequest(entity: "Author", predicate: Self.cmp("mentor.mentor.name", .equal, "Ada")),
            FetchRequest(entity: "Person", predicate: Self.cmp("rank", .greater, .integer64(0))),  // Author-only key
            FetchRequest(entity: "Chapter", predicate: Self.cmp("book.author.name", .beginsWith, "A"),
                         sortDescriptors: [SortKey("book.title"), SortKey("number", ascending: false)], offset: 1, limit: 7),
            FetchRequest(entity: "Tag", predicate: Self.cmp("books.@count", .greaterOrEqual, .integer64(10))),
            FetchRequest(entity: "Person", includesSubentities: false),
        ]
        for request in requests {
            for r in [request, { var f = request; f.predicate = f.predicate.map(Self.forceFallback); return f }()] {
                let expected: Result<[Record], Error> = Result { try reference.fetch(r) }
                let actual: Result<[Record], Error> = Result { try store.fetch(r) }
                switch (actual, expected) {
                case (.success(let a), .success(let b)):
                    #expect(sameRecords(a, b, schema), "\(r): \(firstDifference(a, b, schema))")
                case (.failure(let a), .failure(let b)):
                    #expect("\(a)" == "\(b)", "both fail, with the same error")
                default:
                    Issue.record("\(r): SQLite \(actual) vs reference \(expected)")
                }
            }
        }
    }

    @Test func predicatesBeyondSQLiteLimitsStillAnswer() throws {
        let dir = try TemporaryDirectory("sqlitestore-tests")
        let schema = try Fixture.schema()
        let store = try Fixture.open(dir.path("limits.sqlite"), schema: schema)
        defer { try? store.close() }
        let reference = MemoryStore(url: nil, metadata: Fixture.metadata(schema))
        let records = Self.dataset(schema)
        try store.save(StoreChanges(inserted: records))
        try reference.save(StoreChanges(inserted: records))
        // 40 000 IN values (over SQLite's parameter limit), 1 500 OR-ed comparisons (over its depth limit), and a
        // large IN list with nil that stays in SQL.
        let huge: FetchPredicate = .comparison(Self.kp("pages"), .in, .list((0..<40_000).map { .integer64(Int64($0)) }), [])
        let deep: FetchPredicate = .or((0..<1_500).map { Self.cmp("self", .equal, .integer64(Int64($0 * 3))) })
        let wide: FetchPredicate = .comparison(Self.kp("title"), .in, .list([nil] + (0..<2_000).map { .string("Al\($0 % 50 == 0 ? "" : "x\($0)")") }), [])
        let layout = SQLiteLayout(schema: schema)
        let book = try #require(schema.entity(named: "Book"))
        var q = QueryTranslator(layout: layout)
        #expect(q.translateWithinLimits(wide, entity: book) != nil, "a long IN list is one SQL IN")
        // NOT (… OR NOT (… OR ANY …)), 11 deep: within the expression depth, beyond SQLite's parser stack.
        var nested: FetchPredicate = .comparison(.any(["tags", "name"]), .equal, .constant("x"), [])
        for _ in 0..<11 { nested = .not(.or([Self.cmp("title", .equal, "x"), nested])) }
        #expect(q.translateWithinLimits(nested, entity: book) != nil, "translated, then found too deep to prepare")
        for p in [huge, deep, wide, .and([deep, .not(huge)]), nested] {
            let request = FetchRequest(entity: "Book", predicate: p, sortDescriptors: [SortKey("title")])
            let a = try store.fetch(request)
            let b = try reference.fetch(request)
            #expect(!b.isEmpty)
            #expect(sameRecords(a, b, schema), "\(firstDifference(a, b, schema))")
            #expect(try store.count(request) == b.count)
        }
    }

    @Test func invalidRequestsFailTheSameWayWhateverTheData() throws {
        let dir = try TemporaryDirectory("sqlitestore-tests")
        let schema = try Fixture.schema()
        let store = try Fixture.open(dir.path("invalid.sqlite"), schema: schema)
        defer { try? store.close() }
        let bad: [FetchRequest] = [
            FetchRequest(entity: "Nope"),
            FetchRequest(entity: "Book", predicate: Self.cmp("nope", .equal, 1)),
            FetchRequest(entity: "Book", sortDescriptors: [SortKey("nope")]),
            FetchRequest(entity: "Book", predicate: Self.cmp("tags", .equal, 1)),
            FetchRequest(entity: "Book", predicate: Self.cmp("title", .matches, "(")),
        ]
        for r in bad {
            // An empty store must still refuse, as the reference does.
            #expect(throws: (any Error).self, "\(r)") { try store.fetch(r) }
            #expect(throws: (any Error).self, "\(r)") { try store.count(r) }
        }
    }
}
