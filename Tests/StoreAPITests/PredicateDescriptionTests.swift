import Foundation
import StoreAPI
import StoreTestSupport
import Testing

@Suite("Predicate description")
struct PredicateDescriptionTests {
    static let sources: [String] = [
        "TRUEPREDICATE", "FALSEPREDICATE", "title == 'Dune'", "pages > 300", "pages >= -1", "rating < 4.5",
        "rating <= 1e-7", "title != nil", "inPrint == YES", "inPrint = no", "title BEGINSWITH[c] 'd'",
        "title ENDSWITH[d] 'e'", "title CONTAINS[cd] 'ü'", "title LIKE 'D*n?'", "title MATCHES '^[A-Z].*\\\\d$'",
        "pages IN {1, 2, 3}", "title IN {'a', nil, 2.5}", "pages BETWEEN {100, 200}", "'sf' IN tags.name",
        "{1, 2} CONTAINS pages", "author.name == 'Ursula'", "tags.@count > 2", "ANY tags.name ==[c] 'SF'",
        "ALL tags.rank < 3", "NONE tags.name == 'x'", "NOT ANY tags.name == 'x'", "self == 3", "#in == 'stock'",
        "author.#and == 1", "a == 1 AND b == 2 AND c == 3", "(a == 1 AND b == 2) AND c == 3",
        "a == 1 AND (b == 2 AND c == 3)", "a == 1 OR b == 2 AND c == 3", "(a == 1 OR b == 2) AND c == 3",
        "a == 1 OR (b == 2 OR c == 3)", "NOT (a == 1 OR b == 2)", "NOT NOT a == 1", "NOT (a == 1 AND b == 2) OR c == 3",
        "title == subtitle", "5 < pages", "x == 9223372036854775807", "x == -9223372036854775808", "x == -0.0",
        "x == 1e+300", "x == 'quote \\' and \" and \\\\ and \\n and \\t and \\u{7}'", "x == '\\u{301}leading mark'",
        "x == '日本語 😀'", "x == CAST('2019-05-01T12:30:00.123456Z', 'date')", "x == CAST(1, 'integer16')",
        "x == CAST('1.25', 'decimal')", "x == CAST('nan', 'double')", "x == CAST('-inf', 'float')",
        "x == CAST('AQID', 'binary')", "x == CAST('https://example.com/a?b=c#d', 'uri')",
        "x == CAST('E621E1F8-C36C-495A-93FC-0C247A3E6E5F', 'uuid')",
        "(TRUEPREDICATE OR FALSEPREDICATE) AND NOT TRUEPREDICATE",
    ]

    @Test("parse(description) gives back the same tree", arguments: sources)
    func roundTrip(_ source: String) throws {
        let p = try FetchPredicate(source)
        let printed = p.description
        #expect(try FetchPredicate(printed) == p, "printed: \(printed)")
        // Printing is a fixed point.
        #expect(try FetchPredicate(printed).description == printed)
    }

    @Test("the description reads like the syntax")
    func readable() throws {
        #expect(try FetchPredicate("a==1&&(b==2||!c==3)").description == "a == 1 AND (b == 2 OR NOT c == 3)")
        #expect(try FetchPredicate("title beginswith[cd] \"D\"").description == #"title BEGINSWITH[cd] "D""#)
        #expect(try FetchPredicate("NOT ANY tags.name == 'x'").description == #"NONE tags.name == "x""#)
        #expect(try FetchPredicate("x IN {1, 2.5, nil, true}").description == "x IN {1, 2.5, nil, TRUE}")
        #expect(try FetchPredicate("%K == 1", "in").description == "#in == 1")
        #expect(FetchPredicate.and([]).description == "TRUEPREDICATE")
        #expect(FetchPredicate.or([]).description == "FALSEPREDICATE")
        #expect(FetchPredicate.and([.or([.true])]).description == "TRUEPREDICATE")
    }

    @Test("every stored type survives the round trip exactly, as placeholder arguments")
    func everyValueType() throws {
        let values: [StoreValue] = [
            .null, .integer16(.min), .integer32(.max), .integer64(.min), .integer64(.max), .decimal(Decimal(string: "-12.345")!),
            .double(0.1), .double(-0.0), .double(.nan), .double(.infinity), .double(-.infinity),
            .double(.leastNonzeroMagnitude), .double(.greatestFiniteMagnitude), .float(0.1), .float(-0.0), .float(.nan),
            .float(.leastNonzeroMagnitude), .string(""), .string("\u{0}\u{1F}\u{7F}\u{85}\r\n"), .boolean(true), .boolean(false),
            .date(Date(timeIntervalSinceReferenceDate: 0)), .date(Date(timeIntervalSinceReferenceDate: 578_492_400.123_456_789)),
            .date(Date(timeIntervalSinceReferenceDate: -0.0)), .date(.distantPast), .date(.distantFuture),
            .date(Date(timeIntervalSinceReferenceDate: .nan)), .binary(Data()), .binary(Data((0...255).map(UInt8.init))),
            .uuid(UUID()), .uri(URL(string: "file:///tmp/a%20b")!),
        ]
        for v in values {
            let p = FetchPredicate.comparison(.keyPath(["x"]), .equal, .constant(v), [])
            #expect(try FetchPredicate("x == %@", v) == p)
            #expect(try FetchPredicate(p.description) == p, "\(v) printed as \(p.description)")
        }
        let list = FetchPredicate.comparison(.keyPath(["x"]), .in, .list(values), [])
        #expect(try FetchPredicate(list.description) == list)
    }

    @Test("random trees round-trip", arguments: [1, 2, 3, 4])
    func randomTrees(_ seed: Int) throws {
        var g = PredicateGenerator(seed: UInt64(seed))
        for _ in 0..<150 {
            let p = g.predicate(depth: 4)
            let printed = p.description
            #expect(try FetchPredicate(printed) == p, "printed: \(printed)")
        }
    }
}

/// Builds random predicates of the shapes the parser produces.
struct PredicateGenerator {
    var rng: SeededGenerator

    init(seed: UInt64) { rng = SeededGenerator(seed: seed) }

    mutating func pick<T>(_ items: [T]) -> T { items[Int(rng.next() % UInt64(items.count))] }

    mutating func predicate(depth: Int) -> FetchPredicate {
        let roll = depth <= 0 ? 0 : rng.next() % 7
        switch roll {
        case 3: return .and((0..<(2 + Int(rng.next() % 3))).map { _ in predicate(depth: depth - 1) })
        case 4: return .or((0..<(2 + Int(rng.next() % 3))).map { _ in predicate(depth: depth - 1) })
        case 5: return .not(predicate(depth: depth - 1))
        case 6: return pick([.true, .false])
        default: return comparison()
        }
    }

    mutating func keyPath() -> [String] {
        let keys = ["title", "pages", "author", "name", "in", "AND", "self", "cast", "über", "x_1", "ANY", "nil"]
        var path = (0..<(1 + Int(rng.next() % 3))).map { _ in pick(keys) }
        if path.first == "self" && path.count > 1 { path[0] = "title" }
        if path.count > 1 && rng.next() % 4 == 0 { path.append("@count") }
        return path
    }

    mutating func constant() -> StoreValue {
        switch rng.next() % 14 {
        case 0: return .null
        case 1: return .integer64(Int64(bitPattern: rng.next()))
        case 2: return .double(Double(bitPattern: rng.next() & 0x7FEF_FFFF_FFFF_FFFF | (rng.next() & 0x8000_0000_0000_0000)))
        case 3: return .string(String((0..<Int(rng.next() % 6)).map { _ in pick(Array("aZ'\"\\\n é😀{}*?")) }))
        case 4: return .boolean(rng.next() % 2 == 0)
        case 5: return .integer16(Int16(truncatingIfNeeded: rng.next()))
        case 6: return .integer32(Int32(truncatingIfNeeded: rng.next()))
        case 7: return .float(Float(bitPattern: UInt32(truncatingIfNeeded: rng.next()) & 0x7F7F_FFFF))
        case 8: return .decimal(Decimal(string: "\(rng.next() % 1_000_000).\(rng.next() % 100)") ?? 0)
        case 9:
            let seconds = Double(Int64(truncatingIfNeeded: rng.next() % 4_000_000_000_000)) / 1000 - 2e9
            return .date(Date(timeIntervalSinceReferenceDate: seconds))
        case 10: return .binary(Data((0..<Int(rng.next() % 5)).map { _ in UInt8(truncatingIfNeeded: rng.next()) }))
        case 11: return .uuid(UUID())
        case 12: return .uri(URL(string: "https://example.com/\(rng.next() % 1000)")!)
        default: return .double(pick([.nan, .infinity, -.infinity, -0.0, 0.0]))
        }
    }

    mutating func comparison() -> FetchPredicate {
        let op = pick(ComparisonOperator.allCases)
        let options = ComparisonOptions(rawValue: Int(rng.next() % 4))
        let rhs: FetchExpression
        switch op {
        case .in:
            rhs = rng.next() % 3 == 0 ? .keyPath(keyPath()) : .list((0..<Int(rng.next() % 4)).map { _ in constant() })
        case .between:
            rhs = .list([constant(), constant()])
        default:
            rhs = rng.next() % 4 == 0 ? .keyPath(keyPath()) : .constant(constant())
        }
        var lhs: FetchExpression
        switch rng.next() % 6 {
        case 0: lhs = .any(keyPath())
        case 1: lhs = .all(keyPath())
        case 2: lhs = .constant(constant())
        default: lhs = .keyPath(keyPath())
        }
        if op == .contains && rng.next() % 5 == 0 { lhs = .list([constant(), constant()]) }
        let p = FetchPredicate.comparison(lhs, op, rhs, options)
        if case .any = lhs, rng.next() % 3 == 0 { return .not(p) }
        return p
    }
}
