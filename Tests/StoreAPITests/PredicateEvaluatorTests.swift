import Foundation
@_spi(BackendKit) import StoreAPI
import Testing

/// Runs `body` and checks that it throws a ``StoreError`` the predicate accepts.
private func expectStoreError(
    _ what: String, sourceLocation: SourceLocation = #_sourceLocation, _ body: () throws -> Void,
    where check: (StoreError) -> Bool
) {
    do {
        try body()
        Issue.record("\(what): no error", sourceLocation: sourceLocation)
    } catch let e as StoreError {
        #expect(check(e), "\(what): \(e)", sourceLocation: sourceLocation)
    } catch {
        Issue.record("\(what): not a StoreError: \(error)", sourceLocation: sourceLocation)
    }
}

@Suite("Predicate evaluator")
struct PredicateEvaluatorTests {
    let lib: PredicateLibrary

    init() throws { lib = try PredicateLibrary.standard() }

    @Test("ordering and equality operators over integers, with nil")
    func integers() throws {
        #expect(try lib.books("pages > 300") == [1, 3, 5])
        #expect(try lib.books("pages >= 387") == [1, 3, 5])
        #expect(try lib.books("pages < 387") == [2])
        #expect(try lib.books("pages =< 183") == [2])
        #expect(try lib.books("pages == nil") == [4])
        #expect(try lib.books("pages != nil") == [1, 2, 3, 5])
        #expect(try lib.books("pages != 183") == [1, 3, 4, 5])
        #expect(try lib.books("pages BETWEEN {183, 387}") == [2, 1].sorted())
        #expect(try lib.books("pages BETWEEN {387, 183}") == [])
        #expect(try lib.books("pages IN {183, 412, nil}") == [2, 3, 4])
        #expect(try lib.books("300 < pages") == [1, 3, 5])
        #expect(try lib.books("edition == %@", .integer16(1)) == [2, 3])
        #expect(try lib.books("edition == 2") == [1])
    }

    @Test("nil is two-valued: NOT (x < 5) holds for nil")
    func nilSemantics() throws {
        #expect(try lib.books("NOT pages < 300") == [1, 3, 4, 5])
        #expect(try lib.books("pages < 300 OR pages >= 300") == [1, 2, 3, 5])
        #expect(try lib.books("title BEGINSWITH 'x' OR title ENDSWITH nil") == [])
        #expect(try lib.books("pages BETWEEN {nil, 500}") == [])
        #expect(try lib.books("copies == nil") == [4, 5])
    }

    @Test("numbers compare exactly across integer, double, float, decimal and boolean")
    func mixedNumbers() throws {
        #expect(try lib.books("pages == 387.0") == [1])
        #expect(try lib.books("pages > 386.5") == [1, 3, 5])
        #expect(try lib.books("pages < 183.0001") == [2])
        #expect(try lib.books("copies == 9223372036854775807") == [3])
        // 2^63 as a double is above Int64.max: comparing through doubles would call them equal.
        #expect(try lib.books("copies == 9.223372036854775807e18") == [])
        #expect(try lib.books("copies < 9223372036854775808.0") == [1, 2, 3])
        #expect(try lib.books("copies > 9.2e18") == [3])
        #expect(try lib.books("copies == 5e9") == [1])
        #expect(try lib.books("price > 9.5") == [1, 3])
        #expect(try lib.books("price == 7.5") == [2])
        #expect(try lib.books("price == CAST('9.99', 'decimal')") == [1])
        #expect(try lib.books("price < 10") == [1, 2])
        #expect(try lib.books("price == 10") == [3])
        #expect(try lib.books("weight == 0.5") == [1])
        #expect(try lib.books("weight < 0.3") == [2])
        #expect(try lib.books("inPrint == YES") == [1, 3, 5])
        #expect(try lib.books("inPrint == 1") == [1, 3, 5])
        #expect(try lib.books("inPrint == NO") == [2, 4])
        #expect(try lib.books("rating > 4.4") == [1, 3])
        #expect(try lib.books("rating > pages") == [])
    }

    @Test("NaN is unequal and unordered to everything, itself included")
    func nan() throws {
        #expect(try lib.books("rating == CAST('nan', 'double')") == [])
        #expect(try lib.books("rating != CAST('nan', 'double')") == [1, 2, 3, 4, 5])
        #expect(try lib.books("rating < CAST('inf', 'double')") == [1, 2, 3, 5])
        #expect(try lib.books("rating == rating") == [1, 2, 3, 5])
    }

    @Test("dates compare with dates and ISO 8601 strings, never numbers")
    func dates() throws {
        #expect(try lib.books("published < CAST('1970-01-01', 'date')") == [2, 3])
        #expect(try lib.books("published > '1970-01-01'") == [1])
        #expect(try lib.books("published == '1974-05-01T00:00:00Z'") == [1])
        #expect(
            try lib.books("published BETWEEN {CAST('1965-01-01', 'date'), CAST('1969-01-01', 'date')}") == [2, 3])
        #expect(try lib.books("published == %@", .date(PredicateLibrary.date("1965-08-01"))) == [3])
        #expect(try lib.books("published > 0") == [])
        #expect(try lib.books("published > 'not a date'") == [])
        #expect(try lib.books("author.born < CAST('1925-01-01', 'date')") == [3, 5])
    }

    @Test("UUIDs equal string constants that spell them, in any case; binary and URIs compare")
    func uuidsAndOthers() throws {
        #expect(try lib.books("isbn == '00000000-0000-0000-0000-000000000001'") == [1])
        #expect(try lib.books("'00000000-0000-0000-0000-000000000001' == isbn") == [1])
        #expect(try lib.books("isbn == 'not-a-uuid'") == [])
        #expect(try lib.books("isbn != 'not-a-uuid'") == [1, 2, 3, 4, 5])
        #expect(try lib.keys("Author", where: FetchPredicate("code == 'e621e1f8-c36c-495a-93fc-0c247a3e6e5f'")) == [1])
        #expect(try lib.keys("Author", where: FetchPredicate("code IN {'x', 'E621E1F8-C36C-495A-93FC-0C247A3E6E5F'}")) == [1])
        #expect(try lib.books("cover == CAST('AQID', 'binary')") == [1])
        #expect(try lib.books("cover < CAST('AQID', 'binary')") == [2])
        #expect(try lib.books("site == 'https://example.com/dispossessed'") == [1])
        #expect(try lib.books("cover == 'AQID'") == [])
    }

    @Test("string operators, with [c] and [d] folding")
    func strings() throws {
        #expect(try lib.books("title BEGINSWITH 'Dune'") == [3])
        #expect(try lib.books("title ENDSWITH 'Dune'") == [3, 5])
        #expect(try lib.books("title CONTAINS 'Dune'") == [3, 5])
        #expect(try lib.books("title CONTAINS 'dune'") == [])
        #expect(try lib.books("title CONTAINS[c] 'dune'") == [3, 5])
        #expect(try lib.books("title CONTAINS ''") == [1, 2, 3, 4, 5])
        #expect(try lib.books("title BEGINSWITH 'arbol'") == [])
        #expect(try lib.books("title BEGINSWITH[c] 'árbol'") == [4])
        #expect(try lib.books("title BEGINSWITH[d] 'Arbol'") == [4])
        #expect(try lib.books("title BEGINSWITH[cd] 'ARBOL'") == [4])
        #expect(try lib.books("title ==[d] 'Arbol de la vida'") == [4])
        #expect(try lib.books("title ==[c] 'DUNE'") == [3])
        #expect(try lib.books("title == 'dune'") == [])
        #expect(try lib.books("title IN[c] {'dune', 'a wizard of earthsea'}") == [2, 3])
        #expect(try lib.books("title BETWEEN[c] {'a', 'b'}") == [2])
        #expect(try lib.books("title BETWEEN {'a', 'b'}") == [])
        // Unicode scalar order: 'A' < 'B' < 'Z' < 'a' < 'Á'.
        #expect(try lib.books("title < 'B'") == [2])
        #expect(try lib.books("title > 'Z'") == [4])
        #expect(try lib.books("title > 'z'") == [4])
        #expect(try lib.books("pages BEGINSWITH '3'") == [])
    }

    @Test("LIKE: * is any run, ? is one character, the rest is literal")
    func like() throws {
        #expect(try lib.books("title LIKE '*Dune'") == [3, 5])
        #expect(try lib.books("title LIKE 'D?ne'") == [3])
        #expect(try lib.books("title LIKE '*of*'") == [2, 5])
        #expect(try lib.books("title LIKE 'Dune*'") == [3])
        #expect(try lib.books("title LIKE 'Dune'") == [3])
        #expect(try lib.books("title LIKE[c] 'dune'") == [3])
        #expect(try lib.books("title LIKE[cd] 'ARBOL*'") == [4])
        #expect(try lib.books("title LIKE '*'") == [1, 2, 3, 4, 5])
        #expect(try lib.books("title LIKE '?'") == [])
        #expect(try lib.books("title LIKE '*u*e*'") == [3, 5])
        #expect(try lib.books("title LIKE 'D*e*'") == [3])
        #expect(try lib.books("title LIKE '.*'") == [])
    }

    @Test("MATCHES: a whole-string ICU regular expression; [c] does not change escapes")
    func matches() throws {
        #expect(try lib.books("title MATCHES 'D.*'") == [3])
        #expect(try lib.books("title MATCHES 'Dune'") == [3])
        #expect(try lib.books("title MATCHES 'd.*'") == [])
        #expect(try lib.books("title MATCHES[c] 'd.*'") == [3])
        #expect(try lib.books(#"title MATCHES[c] '\\D+'"#) == [1, 2, 3, 4, 5])
        #expect(try lib.books(#"title MATCHES '.*\\d.*'"#) == [])
        #expect(try lib.books("title MATCHES[d] 'Arbol.*'") == [4])
        #expect(try lib.books("title MATCHES 'Dune|A .*'") == [2, 3])
        #expect(try lib.books("title MATCHES %@", "Children.*") == [5])
    }

    @Test("key paths through to-one relationships, @count and self")
    func keyPaths() throws {
        #expect(try lib.books("author.name == 'Frank Herbert'") == [3, 5])
        #expect(try lib.books("author.name BEGINSWITH 'Ursula'") == [1, 2])
        #expect(try lib.books("author == nil") == [4])
        #expect(try lib.books("author == 1") == [1, 2])
        #expect(try lib.books("author.name == nil") == [4])
        #expect(try lib.books("tags.@count == 2") == [1, 2])
        #expect(try lib.books("tags.@count == 0") == [4])
        #expect(try lib.books("author.books.@count == 2") == [1, 2, 3, 5])
        #expect(try lib.books("edition < tags.@count") == [2])
        #expect(try lib.books("self == 3") == [3])
        #expect(try lib.books("self IN {1, 5}") == [1, 5])
        #expect(try lib.books("#in == 'stock'") == [1])
        #expect(try lib.books("%K == %@", "in", "stock") == [1])
        #expect(try lib.keys("Author", where: FetchPredicate("books.@count == 0")) == [3])
        #expect(try lib.keys("Author", where: FetchPredicate("name == nil")) == [3])
        #expect(try lib.keys("Novel", where: FetchPredicate("genre == 'sf' AND author.name == 'Frank Herbert'")) == [5])
    }

    @Test("ANY, ALL and NONE over to-many relationships, including empty ones")
    func quantifiers() throws {
        #expect(try lib.books("ANY tags.name == 'sf'") == [1, 3, 5])
        #expect(try lib.books("ANY tags.name == 'classic'") == [1, 2])
        #expect(try lib.books("ALL tags.name == 'sf'") == [3, 4, 5])
        #expect(try lib.books("NONE tags.name == 'sf'") == [2, 4])
        #expect(try lib.books("NOT ANY tags.name == 'sf'") == [2, 4])
        #expect(try lib.books("ANY tags.rank > 2") == [2])
        #expect(try lib.books("ALL tags.rank >= 2") == [2, 4])
        #expect(try lib.books("ANY tags.name IN {'fantasy', 'x'}") == [2])
        #expect(try lib.books("ANY tags.name BEGINSWITH[c] 'C'") == [1, 2])
        #expect(try lib.books("SOME tags.rank BETWEEN {2, 3}") == [1, 2])
        #expect(try lib.books("ANY tags == 3") == [2])
        #expect(try lib.books("ANY tags.name == title") == [])
        #expect(try lib.books("ANY author.books.title == 'Dune'") == [3, 5])
        #expect(try lib.keys("Author", where: FetchPredicate("ANY books.tags.name == 'fantasy'")) == [1])
        #expect(try lib.keys("Author", where: FetchPredicate("ALL books.pages > 400")) == [2, 3])
        #expect(try lib.keys("Tag", where: FetchPredicate("ANY books.author.name == 'Frank Herbert'")) == [1])
    }

    @Test("IN and CONTAINS over the values a to-many key path reaches")
    func collections() throws {
        #expect(try lib.books("'sf' IN tags.name") == [1, 3, 5])
        #expect(try lib.books("tags.name CONTAINS 'fantasy'") == [2])
        // Membership, not substring, once the key path crosses a to-many relationship.
        #expect(try lib.books("tags.name CONTAINS 'fan'") == [])
        #expect(try lib.books("tags.name CONTAINS[c] 'SF'") == [1, 3, 5])
        #expect(try lib.books("1 IN tags") == [1, 3, 5])
        #expect(try lib.books("tags CONTAINS 2") == [1, 2])
        #expect(try lib.books("{183, 412} CONTAINS pages") == [2, 3])
        #expect(try lib.keys("Author", where: FetchPredicate("'Dune' IN books.title")) == [2])
    }

    @Test("logic, TRUEPREDICATE and FALSEPREDICATE")
    func logic() throws {
        #expect(try lib.books("pages > 300 AND NOT author.name BEGINSWITH 'Frank'") == [1])
        #expect(try lib.books("title == 'Dune' OR rating < 4.1") == [2, 3, 5])
        #expect(try lib.books("TRUEPREDICATE") == [1, 2, 3, 4, 5])
        #expect(try lib.books("FALSEPREDICATE") == [])
        #expect(try lib.books("NOT (inPrint == YES OR pages == nil)") == [2])
        #expect(try lib.keys("Book", where: .and([])) == [1, 2, 3, 4, 5])
        #expect(try lib.keys("Book", where: .or([])) == [])
    }

    @Test("the DSL and the string form select the same records")
    func dslAgrees() throws {
        let built = Key("pages") > 300 && Key("tags").any("name") == "sf" && !(Key("author.name") == "Ursula K. Le Guin")
        #expect(try lib.keys("Book", where: built) == [3, 5])
        #expect(try lib.keys("Book", where: Key("tags").count > 1) == [1, 2])
        #expect(try lib.keys("Book", where: Key("rating").in([4.5, 4.7])) == [1, 3])
        #expect(try lib.keys("Book", where: Key("tags").none("rank") < 2) == [2, 4])
    }

    // MARK: Errors

    @Test("unknown keys throw unknownProperty naming entity and key, even with no records")
    func unknownKeys() throws {
        let ev = lib.evaluator
        func run(_ entity: String, _ p: FetchPredicate, sort: [SortKey] = []) throws {
            _ = try ev.execute(FetchRequest(entity: entity, predicate: p, sortDescriptors: sort), candidates: [])
        }
        expectStoreError("nope", { try run("Book", FetchPredicate("nope == 1")) }) {
            if case .unknownProperty("Book", "nope") = $0 { return true }
            return false
        }
        expectStoreError("author.nope", { try run("Book", FetchPredicate("author.nope == 1")) }) {
            if case .unknownProperty("Author", "nope") = $0 { return true }
            return false
        }
        expectStoreError("ANY tags.nope", { try run("Book", FetchPredicate("ANY tags.nope == 1")) }) {
            if case .unknownProperty("Tag", "nope") = $0 { return true }
            return false
        }
        expectStoreError("sub-entity key on the parent", { try run("Book", FetchPredicate("genre == 'sf'")) }) {
            if case .unknownProperty("Book", "genre") = $0 { return true }
            return false
        }
        expectStoreError("unknown sort key", { try run("Book", .true, sort: [SortKey("nope")]) }) {
            if case .unknownProperty("Book", "nope") = $0 { return true }
            return false
        }
        expectStoreError("unknown entity", { try run("Nope", .true) }) {
            if case .unknownEntity("Nope") = $0 { return true }
            return false
        }
    }

    @Test("keys used the wrong way throw invalidPredicate naming entity and key")
    func misusedKeys() throws {
        let ev = lib.evaluator
        func run(_ p: FetchPredicate, sort: [SortKey] = []) throws {
            _ = try ev.execute(FetchRequest(entity: "Book", predicate: p, sortDescriptors: sort), candidates: [])
        }
        func invalid(_ fragments: String...) -> (StoreError) -> Bool {
            { e in
                guard case .invalidPredicate(let m) = e else { return false }
                return fragments.allSatisfy { m.contains($0) }
            }
        }
        expectStoreError("through an attribute", { try run(FetchPredicate("title.length == 1")) }, where: invalid("title", "Book"))
        expectStoreError("to-many without ANY", { try run(FetchPredicate("tags.name == 'x'")) }, where: invalid("Book.tags", "to-many"))
        expectStoreError("to-many alone", { try run(FetchPredicate("tags == 1")) }, where: invalid("Book.tags", "to-many"))
        expectStoreError("@count on an attribute", { try run(FetchPredicate("pages.@count == 1")) }, where: invalid("pages", "Book"))
        expectStoreError("@count first", { try run(.comparison(.keyPath(["@count"]), .equal, .constant(1), [])) },
                         where: invalid("@count", "Book"))
        expectStoreError("empty key path", { try run(.comparison(.keyPath([]), .equal, .constant(1), [])) },
                         where: invalid("empty key path", "Book"))
        expectStoreError("sort on to-many", { try run(.true, sort: [SortKey("tags")]) }, where: invalid("Book.tags"))
        expectStoreError("IN a constant", { try run(.comparison(.keyPath(["pages"]), .in, .constant(1), [])) },
                         where: invalid("IN needs a list"))
        expectStoreError("BETWEEN three", { try run(.comparison(.keyPath(["pages"]), .between, .list([1, 2, 3]), [])) },
                         where: invalid("BETWEEN needs a list of two"))
        expectStoreError("bad regex", { try run(FetchPredicate("title MATCHES '('")) }, where: invalid("MATCHES pattern", "("))
    }

    @Test("malformed records and trees give errors, never crashes")
    func robustness() throws {
        let ev = lib.evaluator
        let misaligned = Record(entity: "Book", primaryKey: 9, globalID: UUID(), attributes: [], relationships: [])
        expectStoreError("misaligned attributes", { _ = try ev.evaluate(FetchPredicate("pages == 1"), on: misaligned) }) {
            if case .invalidPredicate(let m) = $0 { return m.contains("Book/p9") }
            return false
        }
        expectStoreError("misaligned relationships", { _ = try ev.evaluate(FetchPredicate("tags.@count == 1"), on: misaligned) }) {
            if case .invalidPredicate = $0 { return true }
            return false
        }
        let stranger = Record(entity: "Ghost", primaryKey: 1, globalID: UUID(), attributes: [], relationships: [])
        expectStoreError("unknown record entity", { _ = try ev.evaluate(FetchPredicate("a == 1"), on: stranger) }) {
            if case .unknownEntity("Ghost") = $0 { return true }
            return false
        }
        let book = try lib.record("Book", 1)
        expectStoreError("ANY on the right", {
            _ = try ev.evaluate(.comparison(.constant(1), .equal, .any(["tags"]), []), on: book)
        }) {
            if case .invalidPredicate = $0 { return true }
            return false
        }
        // A link to a record the resolver does not know reads as nil.
        var dangling = book
        let authorIndex = try #require(try lib.entity("Book").relationshipIndex("author"))
        dangling.relationships[authorIndex] = .toOne(999)
        #expect(try ev.evaluate(FetchPredicate("author.name == nil"), on: dangling))
        #expect(try ev.evaluate(FetchPredicate("author == 999"), on: dangling))
    }
}
