import Foundation
import StoreAPI
import StoreTestSupport
import Testing

/// One malformed predicate: where the parser must point and what it must say.
struct PredicateSyntaxCase: Sendable, CustomTestStringConvertible {
    let source: String
    let arguments: [StoreValue]
    let position: Int
    let message: String

    init(_ source: String, _ arguments: [StoreValue] = [], at position: Int, _ message: String) {
        self.source = source
        self.arguments = arguments
        self.position = position
        self.message = message
    }

    var testDescription: String { source }
}

@Suite("Predicate syntax errors")
struct PredicateSyntaxErrorTests {
    static let cases: [PredicateSyntaxCase] = [
        // Missing operands and operators.
        .init("", at: 0, "expected a predicate"),
        .init("   ", at: 3, "expected a predicate"),
        .init("title ==", at: 8, "expected a value after '=='"),
        .init("title == AND pages > 1", at: 9, "expected a value after '==', found keyword 'AND'"),
        .init("title 'Dune'", at: 6, "expected a comparison operator after 'title'"),
        .init("author.name", at: 11, "expected a comparison operator after 'author.name'"),
        .init("== 5", at: 0, "expected a predicate, found '=='"),
        .init("a == 1 AND", at: 10, "expected a predicate after 'AND'"),
        .init("a == 1 OR OR b == 2", at: 10, "expected a predicate after 'OR', found keyword 'OR'"),
        .init("NOT", at: 3, "expected a predicate after 'NOT'"),
        .init("a == 1 b == 2", at: 7, "expected AND, OR or the end after '1', found 'b'"),
        .init("a == 1 5", at: 7, "expected AND, OR or the end"),
        .init("in == 1", at: 0, "expected a predicate, found keyword 'in'"),
        // Parentheses.
        .init("(a == 1", at: 7, "expected ')' to close the '(' at position 0"),
        .init("((a == 1) AND b == 2", at: 20, "expected ')' to close the '(' at position 0"),
        .init("a == 1)", at: 6, "unexpected ')' without a matching '('"),
        .init("()", at: 1, "expected a predicate after '(', found ')'"),
        // Strings and escapes.
        .init("title == 'Dune", at: 9, "unterminated string"),
        .init("title == \"Dune'", at: 9, "unterminated string (no closing \")"),
        .init(#"title == 'a\qb'"#, at: 11, #"unknown escape '\q'"#),
        .init(#"title == 'a\u{110000}'"#, at: 11, "invalid unicode escape"),
        .init(#"title == 'a\u12'"#, at: 11, "invalid unicode escape"),
        .init(#"title == 'a\uD83Dx'"#, at: 11, "unpaired UTF-16 surrogate"),
        // Stray characters.
        .init("a == 1 ^ 2", at: 7, "unexpected character '^'"),
        .init("a == 1 & b == 2", at: 7, "unexpected '&' (use '&&' or AND)"),
        .init("a == 1 | b == 2", at: 7, "unexpected '|' (use '||' or OR)"),
        .init("# == 1", at: 0, "expected a key after '#'"),
        .init("a == $x", at: 5, "unexpected character '$'"),
        // Options.
        .init("title BEGINSWITH[x] 'a'", at: 17, "unknown comparison option 'x' (use c, d or cd)"),
        .init("title ==[cx] 'a'", at: 10, "unknown comparison option 'x'"),
        .init("title ==[c 'a'", at: 11, "expected ']' after the comparison options"),
        .init("title ==[] 'a'", at: 9, "expected comparison options (c, d or cd) after '['"),
        // Numbers.
        .init("a == 9223372036854775808", at: 5, "integer 9223372036854775808 does not fit in 64 bits"),
        .init("a > -9223372036854775809", at: 4, "does not fit in 64 bits"),
        .init("a == 1e999", at: 5, "number 1e999 is out of range for a double"),
        // Lists, IN and BETWEEN.
        .init("a IN 5", at: 5, "IN needs a list ({…}) or a key path on its right, found '5'"),
        .init("a BETWEEN {1}", at: 10, "BETWEEN needs a list of two values"),
        .init("a BETWEEN 1", at: 10, "BETWEEN needs a list of two values"),
        .init("a == {1, 2}", at: 5, "a list can only follow IN or BETWEEN, not =="),
        .init("a IN {1, 2", at: 10, "expected ',' or '}' in the list opened at position 5"),
        .init("a IN {1 2}", at: 8, "expected ',' or '}'"),
        .init("a IN {1, b}", at: 9, "a list holds only constant values, not key paths"),
        .init("a IN {1, {2}}", at: 9, "lists cannot be nested"),
        .init("a IN {1,}", at: 8, "expected a value after ',', found '}'"),
        .init("{1} == a", at: 0, "a list can only be on the left of CONTAINS"),
        // Key paths and quantifiers.
        .init("author. == 1", at: 8, "expected a key after '.', found '=='"),
        .init("author.5 == 1", at: 7, "expected a key after '.'"),
        .init("tags.@sum.x == 1", at: 5, "unsupported collection operator '@sum' (only @count is supported)"),
        .init("tags.@count.x == 1", at: 11, "nothing can follow '@count'"),
        .init("@count == 1", at: 0, "'@count' must follow a relationship key"),
        .init("ANY 5 == 1", at: 4, "expected a key path after 'ANY', found '5'"),
        .init("ALL", at: 3, "expected a key path after 'ALL'"),
        .init("SUBQUERY(tags, $t, $t.name == 'x').@count > 0", at: 0, "function calls such as 'SUBQUERY(…)' are not supported"),
        // CAST.
        .init("d == CAST('x', 'date')", at: 10, "cannot convert 'x' to date"),
        .init("d == CAST(1, 'colour')", at: 13, "unknown CAST type \"colour\""),
        .init("d == CAST(1 'date')", at: 12, "expected ',' and a type name after the value in CAST"),
        .init("d == CAST(1, date)", at: 13, "expected a type name string"),
        .init("d == CAST(1, 'date'", at: 19, "expected ')' to close the CAST at position 5"),
        // Placeholders.
        .init("a == %@", at: 5, "no argument for '%@' (placeholder 1, but 0 arguments given)"),
        .init("a == %@ AND b == %@", ["x"], at: 17, "no argument for '%@' (placeholder 2, but 1 argument given)"),
        .init("a == %@", ["x", "y"], at: 7, "2 arguments given but the format uses only 1"),
        .init("%K == 1", [5], at: 0, "%K needs a key path string argument, got integer64 5"),
        .init("%K == 1", ["a..b"], at: 0, "%K argument \"a..b\" is not a key path"),
        .init("a == %d", ["x"], at: 5, "%d needs an integer argument, got string"),
        .init("a == %f", [true], at: 5, "%f needs a number argument, got boolean"),
        .init("a == %x", at: 5, "unknown placeholder '%x' (use %@, %K, %d or %f)"),
        // Positions count Characters, not bytes or scalars.
        .init("title == '日本' 5", at: 14, "expected AND, OR or the end"),
        .init("e\u{301}e\u{301} == 1 ^", at: 8, "unexpected character '^'"),
        .init("'\u{1F600}' ==", at: 6, "expected a value after '=='"),
    ]

    @Test("errors point at the offending token", arguments: cases)
    func position(_ c: PredicateSyntaxCase) throws {
        let e = try #require(predicateSyntaxError(c.source, c.arguments), "\(c.source) parsed without error")
        #expect(e.position == c.position, "\(e.message)")
        #expect(e.message.contains(c.message), "message was: \(e.message)")
        #expect(e.position <= c.source.count)
    }

    @Test("the error's description shows a caret under the position")
    func caret() throws {
        do {
            _ = try FetchPredicate("title == AND")
            Issue.record("parsed")
        } catch {
            let lines = error.description.split(separator: "\n", omittingEmptySubsequences: false)
            #expect(lines.count == 3)
            #expect(lines[0].hasPrefix("predicate syntax error at position 9: expected a value after '=='"))
            #expect(lines[1] == "  title == AND")
            #expect(lines[2] == "  " + String(repeating: " ", count: 9) + "^")
        }
    }

    @Test("nesting beyond the limit is an error, not a crash")
    func tooDeep() throws {
        let opens = String(repeating: "(", count: 100_000)
        let e = try #require(predicateSyntaxError(opens + "a == 1"))
        #expect(e.message.contains("nested more than"))
        #expect(e.position > 0 && e.position < 1000)
        let nots = try #require(predicateSyntaxError(String(repeating: "NOT ", count: 100_000) + "a == 1"))
        #expect(nots.message.contains("nested more than"))
        let casts = try #require(
            predicateSyntaxError("a == " + String(repeating: "CAST(", count: 100_000) + "1"))
        #expect(casts.message.contains("nested more than"))
        let lists = try #require(predicateSyntaxError("a IN " + String(repeating: "{", count: 100_000)))
        #expect(lists.message.contains("lists cannot be nested"))
    }

    @Test("garbage of every byte never crashes")
    func garbage() {
        var rng = SeededGenerator(seed: 7)
        let alphabet = Array("ab.@#%'\"\\{}()[],=<>!&|-0123456789eExKd cANDORNOTINY日\u{301}")
        for _ in 0..<3000 {
            let length = Int(rng.next() % 24)
            let s = String((0..<length).map { _ in alphabet[Int(rng.next() % UInt64(alphabet.count))] })
            do {
                let p = try FetchPredicate(s)
                // Whatever parses prints back to the same tree.
                #expect(try FetchPredicate(p.description) == p, "\(s) → \(p.description)")
            } catch {
                guard case .predicateSyntax(_, let position, _) = error else {
                    Issue.record("\(s): \(error)")
                    continue
                }
                #expect(position >= 0 && position <= s.count, "\(s): \(position)")
            }
        }
    }
}
