import Foundation
@_spi(BackendKit) import StoreAPI
import Testing

extension ConformanceSuite {
    /// Builds a catalog of works with varied values (nils, NaN, ties, non-ASCII) for fetch checks.
    static func populateCatalog(_ ctx: StoreContext) throws {
        let authors = try ["Le Guin", "Banks", "Ōe", "le guin"].map { try ctx.insert("Author", ["name": .string($0)]) }
        let tags = try ["sf", "classic", "short"].map { try ctx.insert("Tag", ["name": .string($0)]) }
        let titles = ["The Dispossessed", "Excession", "Nip the Buds", "the lathe", "Zebra", "Äpfel", "apple", "Éclair",
                      "Use of Weapons", "Always Coming Home", "", "Matter", "Inversions", "Look to Windward", "Surface Detail",
                      "Hydrogen Sonata", "A Personal Matter", "Teach Us", "Rouse Up", "Tales", "The Word for World"]
        for (i, title) in titles.enumerated() {
            let entity = ["Book", "Novel", "Article"][i % 3]
            var values: [String: StoreValue] = ["title": .string(title)]
            values["pages"] = i % 5 == 0 ? .null : .integer32(Int32(100 + (i * 37) % 400))
            values["rating"] = i % 7 == 3 ? .double(.nan) : (i % 4 == 0 ? .null : .double(Double(i % 6) / 2))
            values["published"] = i % 6 == 0 ? .null : .date(Date(timeIntervalSinceReferenceDate: Double(i % 4) * 86_400 * 365))
            values["isbn"] = i % 2 == 0 ? .string("isbn-\(i)") : .null
            if entity == "Novel" { values["genre"] = .string(i % 2 == 0 ? "space opera" : "literary") }
            let w = try ctx.insert(entity, values)
            if i % 4 != 3 { try w.setObject(authors[i % authors.count], forKey: "author") }
            try w.setObjects(Array(tags.prefix(i % 4)), forKey: "tags")
        }
    }

    /// Predicates covering each operator, option and key-path form.
    static func catalogPredicates() -> [FetchPredicate] {
        func cmp(_ k: String, _ op: ComparisonOperator, _ v: StoreValue, _ o: ComparisonOptions = []) -> FetchPredicate {
            .comparison(.keyPath(k.split(separator: ".").map(String.init)), op, .constant(v), o)
        }
        return [
            .true, .false,
            cmp("pages", .greater, 300), cmp("pages", .lessOrEqual, 250), cmp("pages", .equal, .null), cmp("pages", .notEqual, .null),
            cmp("pages", .equal, .double(211)), cmp("rating", .greaterOrEqual, 1.5), cmp("rating", .less, 1), cmp("rating", .notEqual, 1),
            cmp("title", .beginsWith, "The"), cmp("title", .beginsWith, "the", .caseInsensitive), cmp("title", .endsWith, "er"),
            cmp("title", .contains, "Matter"), cmp("title", .contains, "a", .caseInsensitive), cmp("title", .equal, ""),
            cmp("title", .greater, "M"), cmp("title", .less, "a"), cmp("title", .equal, "apfel", [.caseInsensitive, .diacriticInsensitive]),
            cmp("title", .like, "*Matter"), cmp("title", .like, "?e*"), cmp("title", .matches, "[A-Z].*s"),
            .comparison(.keyPath(["pages"]), .in, .list([.integer32(137), .integer32(211), .integer32(999)]), []),
            .comparison(.keyPath(["title"]), .in, .list(["Zebra", "apple", "nope"]), []),
            .comparison(.keyPath(["pages"]), .between, .list([200, 400]), []),
            cmp("published", .greater, .date(Date(timeIntervalSinceReferenceDate: 86_400 * 365))),
            cmp("author.name", .equal, "Banks"), cmp("author.name", .equal, "le guin", .caseInsensitive), cmp("author", .equal, .null),
            cmp("isbn", .beginsWith, "isbn-1"),
            .comparison(.keyPath(["tags", "@count"]), .greaterOrEqual, .constant(2), []),
            .comparison(.any(["tags", "name"]), .equal, .constant("classic"), []),
            .comparison(.all(["tags", "name"]), .notEqual, .constant("short"), []),
            .and([cmp("pages", .greater, 150), .not(cmp("title", .beginsWith, "The"))]),
            .or([cmp("rating", .equal, .double(.nan)), cmp("pages", .less, 150), .and([cmp("author.name", .equal, "Ōe"), cmp("pages", .notEqual, .null)])]),
            .not(.or([cmp("pages", .equal, .null), cmp("rating", .equal, .null)])),
        ]
    }

    func checkFetching(_ h: Harness) throws {
        let url = h.storeURL()
        let (c, store) = try h.coordinator(url)
        let ctx = c.newContext()
        try Self.populateCatalog(ctx)
        try ctx.save()
        let fresh = c.newContext()
        let all = try store.store.fetch(FetchRequest(entity: "Work"))
        #expect(all.count == 21)
        #expect(Set(all.map(\.entity)) == ["Book", "Novel", "Article"])
        #expect(try store.store.count(FetchRequest(entity: "Novel")) == 7)
        #expect(try fresh.count(FetchRequest(entity: "Book")) == 14, "Book includes its sub-entity Novel")
        #expect(try fresh.count(FetchRequest(entity: "Book", includesSubentities: false)) == 7)

        // Hand-checked answers, so the reference evaluator is checked too.
        let longOnes = try fresh.fetch(FetchRequest(entity: "Work", predicate: .comparison(.keyPath(["pages"]), .greater, .constant(400), []),
                                                    sortDescriptors: [SortKey("title")]))
        #expect(try longOnes.map { try $0.value(forKey: "title") } == ["Always Coming Home", "Tales"])
        let sorted = try fresh.fetch(FetchRequest(entity: "Work", sortDescriptors: [SortKey("title")], limit: 4))
        #expect(try sorted.map { try $0.value(forKey: "title") } == ["", "A Personal Matter", "Always Coming Home", "Excession"])

        let reference = PredicateEvaluator(schema: h.schema) { root, keys in try store.store.records(withKeys: keys, root: root) }
        let sorts: [[SortKey]] = [
            [], [SortKey("title")], [SortKey("pages", ascending: false)], [SortKey("rating"), SortKey("title", ascending: false)],
            [SortKey("published", ascending: false), SortKey("pages")], [SortKey("author.name"), SortKey("title")],
        ]
        for (i, predicate) in Self.catalogPredicates().enumerated() {
            let sort = sorts[i % sorts.count]
            for (offset, limit) in [(0, nil), (2, 5), (0, 1), (30, 3)] as [(Int, Int?)] {
                for entity in ["Work", "Book", "Article"] {
                    let request = FetchRequest(entity: entity, predicate: predicate, sortDescriptors: sort, offset: offset, limit: limit)
                    let candidates = try store.store.fetch(FetchRequest(entity: entity))
                    let want = try reference.execute(request, candidates: candidates).map(\.globalID)
                    let got = try store.store.fetch(request).map(\.globalID)
                    if sort.isEmpty {
                        #expect(Set(got) == Set(want), "\(entity) where \(predicate): store fetch differs from the reference")
                    } else {
                        #expect(got == want, "\(entity) where \(predicate) sorted by \(sort.map(\.keyPath)) [\(offset), \(limit ?? -1)]: store fetch differs from the reference")
                    }
                    var countRequest = request
                    countRequest.sortDescriptors = []
                    #expect(try store.store.count(countRequest) == want.count, "count of \(entity) where \(predicate) [\(offset), \(limit ?? -1)]")
                }
            }
        }

        // A context's unsaved changes take part in fetches.
        let extra = try fresh.insert("Book", ["title": "Unsaved", "pages": 999])
        let deleted = try #require(try fresh.fetch(FetchRequest(entity: "Work", predicate: .comparison(.keyPath(["title"]), .equal, .constant("Zebra"), []))).first)
        try fresh.delete(deleted)
        let changed = try #require(try fresh.fetch(FetchRequest(entity: "Work", predicate: .comparison(.keyPath(["title"]), .equal, .constant("Matter"), []))).first)
        try changed.setValue(1000, forKey: "pages")
        let big = try fresh.fetch(FetchRequest(entity: "Work", predicate: .comparison(.keyPath(["pages"]), .greaterOrEqual, .constant(999), []),
                                               sortDescriptors: [SortKey("pages", ascending: false)]))
        #expect(big.map(\.globalID) == [changed.globalID, extra.globalID])
        #expect(try fresh.count(FetchRequest(entity: "Work")) == 21)
        fresh.rollback()
        #expect(try fresh.count(FetchRequest(entity: "Work")) == 21)
        #expect(try changed.value(forKey: "pages") != 1000)
        try h.close(c)
    }
}
