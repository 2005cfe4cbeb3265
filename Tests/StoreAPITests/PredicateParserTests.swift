import Foundation
import StoreAPI
import Testing

private func cmp(
    _ key: String, _ op: ComparisonOperator, _ value: StoreValue, _ options: ComparisonOptions = []
) -> FetchPredicate {
    .comparison(.keyPath(key.split(separator: ".").map(String.init)), op, .constant(value), options)
}

/// The constant on the right of a parsed `x == <literal>`.
private func literal(_ text: String, _ arguments: StoreValue...) throws -> StoreValue {
    let p = try FetchPredicate("x == " + text, arguments: arguments)
    guard case .comparison(_, .equal, .constant(let v), _) = p else {
        Issue.record("\(text) did not parse to a constant comparison: \(p)")
        return .null
    }
    return v
}

@Suite("Predicate parser")
struct PredicateParserTests {
    @Test(
        "every comparison symbol",
        arguments: [
            ("==", ComparisonOperator.equal), ("=", .equal), ("!=", .notEqual), ("<>", .notEqual), ("<", .less),
            ("<=", .lessOrEqual), ("=<", .lessOrEqual), (">", .greater), (">=", .greaterOrEqual),
            ("=>", .greaterOrEqual),
        ])
    func symbols(_ symbol: String, _ op: ComparisonOperator) throws {
        #expect(try FetchPredicate("pages \(symbol) 300") == cmp("pages", op, 300))
        #expect(try FetchPredicate("pages\(symbol)300") == cmp("pages", op, 300))
    }

    @Test(
        "every word operator, in any case",
        arguments: [
            ("BEGINSWITH", ComparisonOperator.beginsWith), ("endswith", .endsWith), ("Contains", .contains),
            ("LIKE", .like), ("matches", .matches),
        ])
    func words(_ word: String, _ op: ComparisonOperator) throws {
        #expect(try FetchPredicate("title \(word) 'D'") == cmp("title", op, "D"))
    }

    @Test("IN and BETWEEN take lists")
    func inAndBetween() throws {
        #expect(try FetchPredicate("rating IN {1, 2, 3}") == .comparison(.keyPath(["rating"]), .in, .list([1, 2, 3]), []))
        #expect(try FetchPredicate("rating in {}") == .comparison(.keyPath(["rating"]), .in, .list([]), []))
        #expect(
            try FetchPredicate("title IN {'a', \"b\", nil}") == .comparison(.keyPath(["title"]), .in, .list(["a", "b", nil]), []))
        #expect(try FetchPredicate("pages BETWEEN {100, 200}") == .comparison(.keyPath(["pages"]), .between, .list([100, 200]), []))
        #expect(try FetchPredicate("pages between { -1.5 , 2e3 }") == .comparison(.keyPath(["pages"]), .between, .list([-1.5, 2000.0]), []))
        #expect(try FetchPredicate("'sf' IN tags.name") == .comparison(.constant("sf"), .in, .keyPath(["tags", "name"]), []))
        #expect(try FetchPredicate("{1, 2} CONTAINS rating") == .comparison(.list([1, 2]), .contains, .keyPath(["rating"]), []))
        #expect(
            try FetchPredicate("rating IN {%@, %d}", 1.5, 7) == .comparison(.keyPath(["rating"]), .in, .list([1.5, 7]), []))
    }

    @Test(
        "comparison options",
        arguments: [
            ("[c]", ComparisonOptions.caseInsensitive), ("[d]", .diacriticInsensitive),
            ("[cd]", [.caseInsensitive, .diacriticInsensitive]), ("[dc]", [.caseInsensitive, .diacriticInsensitive]),
            ("[C]", .caseInsensitive), (" [ cd ] ", [.caseInsensitive, .diacriticInsensitive]),
        ] as [(String, ComparisonOptions)])
    func options(_ text: String, _ options: ComparisonOptions) throws {
        #expect(try FetchPredicate("title BEGINSWITH\(text)'d'") == cmp("title", .beginsWith, "d", options))
        #expect(try FetchPredicate("title ==\(text)'d'") == cmp("title", .equal, "d", options))
        #expect(
            try FetchPredicate("title IN\(text){'a'}") == .comparison(.keyPath(["title"]), .in, .list(["a"]), options))
    }

    @Test("integer literals, including the Int64 extremes and other radixes")
    func integers() throws {
        #expect(try literal("42") == .integer64(42))
        #expect(try literal("-7") == .integer64(-7))
        #expect(try literal("0") == .integer64(0))
        #expect(try literal("9223372036854775807") == .integer64(.max))
        #expect(try literal("-9223372036854775808") == .integer64(.min))
        #expect(try literal("0x2A") == .integer64(42))
        #expect(try literal("-0x2a") == .integer64(-42))
        #expect(try literal("0b101") == .integer64(5))
        #expect(try literal("0o17") == .integer64(15))
    }

    @Test("decimal and exponent literals are doubles")
    func doubles() throws {
        #expect(try literal("1.5") == .double(1.5))
        #expect(try literal("1e3") == .double(1000))
        #expect(try literal("2.0") == .double(2))
        #expect(try literal("-2.5E-3") == .double(-0.0025))
        #expect(try literal("1e+20") == .double(1e20))
        #expect(try literal("5e-324") == .double(5e-324))
        let negativeZero = try literal("-0.0")
        #expect(negativeZero == .double(-0.0))
        #expect(negativeZero != .double(0.0))
    }

    @Test("strings in either quote, with every escape")
    func strings() throws {
        #expect(try literal("'single'") == "single")
        #expect(try literal("\"double\"") == "double")
        #expect(try literal("''") == "")
        #expect(try literal(#"'it\'s'"#) == "it's")
        #expect(try literal(#""say \"hi\"""#) == "say \"hi\"")
        #expect(try literal(#"'a"b'"#) == "a\"b")
        #expect(try literal(#""a'b""#) == "a'b")
        #expect(try literal(#"'\n\t\r\0\\'"#) == "\n\t\r\0\\")
        #expect(try literal(#"'\u{1F600}'"#) == "\u{1F600}")
        #expect(try literal(#"'\u00e9\u00C9'"#) == "éÉ")
        #expect(try literal(#"'\uD83D\uDE00'"#) == "\u{1F600}")
        #expect(try literal("'line\nbreak'") == "line\nbreak")
        #expect(try literal("'日本語 e\u{301}'") == "日本語 e\u{301}")
        // A quote followed by a combining mark is still a quote to the lexer.
        #expect(try literal("'\u{301}x'") == "\u{301}x")
    }

    @Test("nil, booleans and keywords in any case")
    func keywords() throws {
        for text in ["nil", "NIL", "null", "NULL", "Nil"] { #expect(try literal(text) == .null) }
        for text in ["YES", "yes", "TRUE", "true"] { #expect(try literal(text) == .boolean(true)) }
        for text in ["NO", "no", "FALSE", "False"] { #expect(try literal(text) == .boolean(false)) }
        #expect(try FetchPredicate("TRUEPREDICATE") == .true)
        #expect(try FetchPredicate("falsepredicate") == .false)
        #expect(try FetchPredicate("(TRUEPREDICATE)") == .true)
        #expect(try FetchPredicate("a == 1 and b == 2 Or not c == 3") == .or([.and([cmp("a", .equal, 1), cmp("b", .equal, 2)]), .not(cmp("c", .equal, 3))]))
    }

    @Test("CAST builds every other stored type")
    func casts() throws {
        let d = PredicateLibrary.date("2019-05-01T12:30:00.25Z")
        #expect(try literal(#"CAST("2019-05-01T12:30:00.25Z", "date")"#) == .date(d))
        #expect(try literal("CAST(\(d.timeIntervalSinceReferenceDate), 'NSDate')") == .date(d))
        #expect(try literal("cast(0, 'date')") == .date(Date(timeIntervalSinceReferenceDate: 0)))
        let u = UUID()
        #expect(try literal("CAST('\(u.uuidString.lowercased())', 'uuid')") == .uuid(u))
        #expect(try literal("CAST('AQID', 'binary')") == .binary(Data([1, 2, 3])))
        #expect(try literal("CAST('https://example.com/x?y=1', 'uri')") == .uri(URL(string: "https://example.com/x?y=1")!))
        #expect(try literal("CAST('1.10', 'decimal')") == .decimal(Decimal(string: "1.1")!))
        #expect(try literal("CAST(0.1, 'decimal')") == .decimal(Decimal(string: "0.1")!))
        #expect(try literal("CAST(-5, 'integer16')") == .integer16(-5))
        #expect(try literal("CAST(70000, 'integer32')") == .integer32(70000))
        #expect(try literal("CAST(0.1, 'float')") == .float(0.1))
        #expect(try literal("CAST('-inf', 'double')") == .double(-.infinity))
        #expect(try literal("CAST('nan', 'float')") == .float(.nan))
        #expect(try literal("CAST(1, 'boolean')") == .boolean(true))
        #expect(try literal("CAST(CAST('inf', 'double'), 'date')") == .date(Date(timeIntervalSinceReferenceDate: .infinity)))
        #expect(try literal("CAST(%@, 'uuid')", .string(u.uuidString)) == .uuid(u))
    }

    @Test("key paths: dotted, @count, self, escaped keywords")
    func keyPaths() throws {
        #expect(try FetchPredicate("author.name == 'Ursula'") == cmp("author.name", .equal, "Ursula"))
        #expect(try FetchPredicate("a.b.c.d > 1") == cmp("a.b.c.d", .greater, 1))
        #expect(try FetchPredicate("tags.@count > 2") == cmp("tags.@count", .greater, 2))
        #expect(try FetchPredicate("author.books.@COUNT >= 2") == cmp("author.books.@count", .greaterOrEqual, 2))
        #expect(try FetchPredicate("self == 3") == cmp("self", .equal, 3))
        #expect(try FetchPredicate("SELF.title == 'x'") == cmp("title", .equal, "x"))
        #expect(try FetchPredicate("#in == 'stock'") == cmp("in", .equal, "stock"))
        #expect(try FetchPredicate("#AND.#or == 1") == cmp("AND.or", .equal, 1))
        #expect(try FetchPredicate("author.in == 1") == cmp("author.in", .equal, 1))
        #expect(try FetchPredicate("_private_1 == 1") == cmp("_private_1", .equal, 1))
        #expect(try FetchPredicate("título == 'x'") == cmp("título", .equal, "x"))
        #expect(try FetchPredicate("title == subtitle") == .comparison(.keyPath(["title"]), .equal, .keyPath(["subtitle"]), []))
        #expect(try FetchPredicate("5 < pages") == .comparison(.constant(5), .less, .keyPath(["pages"]), []))
        // `cast` is a key unless a '(' follows.
        #expect(try FetchPredicate("cast == 1") == cmp("cast", .equal, 1))
    }

    @Test("ANY, SOME, ALL and NONE")
    func quantifiers() throws {
        let any = FetchPredicate.comparison(.any(["tags", "name"]), .equal, .constant("sf"), [])
        #expect(try FetchPredicate("ANY tags.name == 'sf'") == any)
        #expect(try FetchPredicate("some tags.name == 'sf'") == any)
        #expect(try FetchPredicate("ALL tags.rank < 3") == .comparison(.all(["tags", "rank"]), .less, .constant(3), []))
        #expect(try FetchPredicate("NONE tags.name == 'sf'") == .not(any))
        #expect(try FetchPredicate("NOT ANY tags.name == 'sf'") == .not(any))
        #expect(try FetchPredicate("ANY %K BEGINSWITH[c] %@", "tags.name", "s")
            == .comparison(.any(["tags", "name"]), .beginsWith, .constant("s"), .caseInsensitive))
        #expect(try FetchPredicate("ANY tags.rank IN {1, 2}") == .comparison(.any(["tags", "rank"]), .in, .list([1, 2]), []))
    }

    @Test("precedence: NOT binds tighter than AND, AND tighter than OR")
    func precedence() throws {
        let a = cmp("a", .equal, 1), b = cmp("b", .equal, 2), c = cmp("c", .equal, 3), d = cmp("d", .equal, 4)
        #expect(try FetchPredicate("a == 1 OR b == 2 AND c == 3") == .or([a, .and([b, c])]))
        #expect(try FetchPredicate("a == 1 AND b == 2 OR c == 3") == .or([.and([a, b]), c]))
        #expect(try FetchPredicate("NOT a == 1 AND b == 2") == .and([.not(a), b]))
        #expect(try FetchPredicate("NOT a == 1 OR b == 2") == .or([.not(a), b]))
        #expect(try FetchPredicate("a == 1 || b == 2 && !c == 3") == .or([a, .and([b, .not(c)])]))
        #expect(try FetchPredicate("!(a == 1 || b == 2)") == .not(.or([a, b])))
        #expect(try FetchPredicate("NOT NOT a == 1") == .not(.not(a)))
        #expect(try FetchPredicate("a == 1 AND b == 2 AND c == 3 AND d == 4") == .and([a, b, c, d]))
        #expect(try FetchPredicate("a == 1 OR b == 2 OR c == 3") == .or([a, b, c]))
        #expect(try FetchPredicate("(a == 1 OR b == 2) AND (c == 3 OR d == 4)") == .and([.or([a, b]), .or([c, d])]))
    }

    @Test("parentheses keep their grouping in the tree")
    func nesting() throws {
        let a = cmp("a", .equal, 1), b = cmp("b", .equal, 2), c = cmp("c", .equal, 3)
        #expect(try FetchPredicate("(a == 1 AND b == 2) AND c == 3") == .and([.and([a, b]), c]))
        #expect(try FetchPredicate("a == 1 AND (b == 2 AND c == 3)") == .and([a, .and([b, c])]))
        #expect(try FetchPredicate("((((a == 1))))") == a)
        #expect(try FetchPredicate("(a == 1 OR (b == 2 AND (c == 3 OR a == 1)))") == .or([a, .and([b, .or([c, a])])]))
        let deep = String(repeating: "(", count: 150) + "a == 1" + String(repeating: ")", count: 150)
        #expect(try FetchPredicate(deep) == a)
    }

    @Test("placeholders substitute values and key paths in order")
    func placeholders() throws {
        #expect(try FetchPredicate("%K == %@", "author.name", "Ursula") == cmp("author.name", .equal, "Ursula"))
        #expect(try FetchPredicate("%K == %@", "my key", nil) == .comparison(.keyPath(["my key"]), .equal, .constant(.null), []))
        #expect(try FetchPredicate("pages > %d AND rating < %f", 300, 4.5) == .and([cmp("pages", .greater, 300), cmp("rating", .less, 4.5)]))
        #expect(try FetchPredicate("pages > %ld OR pages < %i", .integer16(3), .integer32(1))
            == .or([cmp("pages", .greater, .integer16(3)), cmp("pages", .less, .integer32(1))]))
        let d = Date(timeIntervalSinceReferenceDate: 12.5)
        #expect(try FetchPredicate("published < %@", .date(d)) == cmp("published", .less, .date(d)))
        #expect(try FetchPredicate("x == %@", arguments: [.binary(Data([9]))]) == cmp("x", .equal, .binary(Data([9]))))
        #expect(try FetchPredicate("author.%K == 1", "name") == cmp("author.name", .equal, 1))
        #expect(try FetchPredicate("%K == 1", "in") == cmp("in", .equal, 1))
    }

    @Test("whitespace is free, including none at all and newlines")
    func whitespace() throws {
        let expected = FetchPredicate.and([cmp("a", .equal, 1), .not(cmp("b", .less, -2))])
        #expect(try FetchPredicate("a==1&&!b<-2") == expected)
        #expect(try FetchPredicate("  a  ==  1\n\tAND\n NOT b < -2  ") == expected)
    }
}
