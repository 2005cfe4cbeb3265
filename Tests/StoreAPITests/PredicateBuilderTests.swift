import Foundation
import StoreAPI
import Testing

/// Expects the built predicate to equal the parsed string.
private func same(
    _ built: FetchPredicate, _ source: String, _ arguments: StoreValue..., sourceLocation: SourceLocation = #_sourceLocation
) throws {
    let parsed = try FetchPredicate(source, arguments: arguments)
    #expect(built == parsed, "\(built) vs \(source)", sourceLocation: sourceLocation)
}

@Suite("Predicate builder DSL")
struct PredicateBuilderTests {
    @Test("operators and methods build the tree the string form parses to")
    func sameAsString() throws {
        let pairs: [(FetchPredicate, String)] = [
            (Key("pages") > 300, "pages > 300"),
            (Key("pages") >= 300, "pages >= 300"),
            (Key("pages") < 300, "pages < 300"),
            (Key("pages") <= 300, "pages <= 300"),
            (Key("title") == "Dune", "title == 'Dune'"),
            (Key("title") != "Dune", "title != 'Dune'"),
            (Key("rating") > 4.5, "rating > 4.5"),
            (Key("inPrint") == true, "inPrint == YES"),
            (Key("author") == nil, "author == nil"),
            (Key("author") != nil, "author != nil"),
            (Key("author.name") == "Ursula", "author.name == 'Ursula'"),
            (Key("tags").count > 2, "tags.@count > 2"),
            (Key("self") == 3, "self == 3"),
            (Key("self.title") == "x", "title == 'x'"),
            (Key("title").beginsWith("D", options: .caseInsensitive), "title BEGINSWITH[c] 'D'"),
            (Key("title").endsWith("e"), "title ENDSWITH 'e'"),
            (Key("title").contains("un", options: [.caseInsensitive, .diacriticInsensitive]), "title CONTAINS[cd] 'un'"),
            (Key("title").like("D*?e"), "title LIKE 'D*?e'"),
            (Key("title").matches("[A-Z]+", options: .diacriticInsensitive), "title MATCHES[d] '[A-Z]+'"),
            (Key("title").equals("dune", options: .caseInsensitive), "title ==[c] 'dune'"),
            (Key("title").notEquals("dune", options: .caseInsensitive), "title !=[c] 'dune'"),
            (Key("rating").in([1, 2]), "rating IN {1, 2}"),
            (Key("title").in(["a", nil, 3]), "title IN {'a', nil, 3}"),
            (Key("title").in(["a", "b"], options: .caseInsensitive), "title IN[c] {'a', 'b'}"),
            (Key("pages").between(100, and: 200), "pages BETWEEN {100, 200}"),
            (Key("pages").between(100...200), "pages BETWEEN {100, 200}"),
            (Key("tags.name").contains("sf"), "tags.name CONTAINS 'sf'"),
            (Key("tags.rank").contains(3), "tags.rank CONTAINS 3"),
            (Key("title").in(Key("tags.name")), "title IN tags.name"),
            (Key("title") == Key("subtitle"), "title == subtitle"),
            (Key("pages") < Key("author.books.@count"), "pages < author.books.@count"),
            (Key("tags").any("name") == "x", "ANY tags.name == 'x'"),
            (Key("tags.name").any() == "x", "ANY tags.name == 'x'"),
            (Key("tags").all("rank") < 3, "ALL tags.rank < 3"),
            (Key("tags").none("name") == "x", "NONE tags.name == 'x'"),
            (Key("tags").any("name").beginsWith("s", options: .caseInsensitive), "ANY tags.name BEGINSWITH[c] 's'"),
            (Key("tags").any("rank").in([1, 2]), "ANY tags.rank IN {1, 2}"),
            (Key("in") == "stock", "#in == 'stock'"),
            (Key(components: ["my key"]) == 1, "%K == 1"),
            (Key(components: ["author", "my key"]) == 1, "author.%K == 1"),
        ]
        for (built, source) in pairs {
            let args: [StoreValue] = source.contains("%K") ? ["my key"] : []
            #expect(built == (try FetchPredicate(source, arguments: args)), "\(source)")
        }
    }

    @Test("logic operators chain like AND/OR chains, and keep explicit grouping")
    func logic() throws {
        let a = Key("a") == 1, b = Key("b") == 2, c = Key("c") == 3
        try same(a && b && c, "a == 1 AND b == 2 AND c == 3")
        try same(a || b || c, "a == 1 OR b == 2 OR c == 3")
        try same(a || b && c, "a == 1 OR b == 2 AND c == 3")
        try same(a && (b || c), "a == 1 AND (b == 2 OR c == 3)")
        try same(a && (b && c), "a == 1 AND (b == 2 AND c == 3)")
        try same(!a && b, "NOT a == 1 AND b == 2")
        try same(!(a || b), "NOT (a == 1 OR b == 2)")
        let example = Key("pages") > 300 && Key("title").beginsWith("D", options: .caseInsensitive)
        try same(example, "pages > 300 AND title BEGINSWITH[c] \"D\"")
    }

    @Test("plain Swift values convert as the string syntax would")
    func plainValues() throws {
        let pages = 300
        let rating: Double = 4.5
        let title = "Dune"
        let flag = false
        let missing: String? = nil
        let present: String? = "x"
        let d = Date(timeIntervalSinceReferenceDate: 1234.5)
        let u = UUID()
        let data = Data([1, 2])
        let url = URL(string: "https://example.com")!
        let dec = Decimal(string: "1.5")!
        try same(Key("pages") > pages, "pages > %d", 300)
        try same(Key("rating") <= rating, "rating <= 4.5")
        try same(Key("title") == title, "title == 'Dune'")
        try same(Key("inPrint") != flag, "inPrint != NO")
        try same(Key("title") == missing, "title == nil")
        try same(Key("title") == present, "title == 'x'")
        try same(Key("published") < d, "published < %@", .date(d))
        try same(Key("isbn") == u, "isbn == %@", .uuid(u))
        try same(Key("cover") == data, "cover == CAST('AQI=', 'binary')")
        try same(Key("site") == url, "site == %@", .uri(url))
        try same(Key("price") >= dec, "price >= CAST('1.5', 'decimal')")
        try same(Key("edition") == Int16(2), "edition == CAST(2, 'integer16')")
        try same(Key("copies") == Int64.max, "copies == 9223372036854775807")
        try same(Key("pages").in([pages, 400]), "pages IN {300, 400}")
        try same(Key("published").between(d...d.addingTimeInterval(1)), "published BETWEEN {%@, %@}", .date(d), .date(d.addingTimeInterval(1)))
        let sv: StoreValue = .integer32(7)
        try same(Key("pages") == sv, "pages == CAST(7, 'integer32')")
    }

    @Test("built predicates print in the string syntax")
    func prints() {
        let p = Key("pages") > 300 && (Key("author.name") == "Ursula" || Key("tags").none("name") == "x")
        #expect(p.description == #"pages > 300 AND (author.name == "Ursula" OR NONE tags.name == "x")"#)
    }
}
