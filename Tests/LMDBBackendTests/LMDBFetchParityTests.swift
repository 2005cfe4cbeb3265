import Foundation
import LMDBBackend
@_spi(BackendKit) import StoreAPI
import StoreTestSupport
import Testing

/// Fetches, counts and scans return exactly what the reference ``MemoryStore`` returns for the same data — also
/// when the uniqueness indexes answer them.
@Suite struct LMDBFetchParityTests {
    /// Deterministic data with nils, NaN, negative zero, duplicates and every work sub-entity.
    static func data(_ schema: Schema) throws -> [Record] {
        var out: [Record] = []
        var seed: UInt64 = 0x9E37_79B9_7F4A_7C15
        func next(_ n: Int) -> Int {
            seed = seed &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Int(seed >> 33) % n
        }
        let countries: [StoreValue] = ["UK", "FR", "JP", .null]
        for a in 1...40 {
            out.append(schema.record("Author", Int64(a), [
                "name": .string("author \(a % 25)"), "country": countries[a % 4],
                "born": a % 7 == 0 ? .null : .integer16(Int16(1900 + next(120))),
            ], ["works": .toMany([])]))
        }
        for t in 1...12 { out.append(schema.record("Tag", Int64(t), ["name": t == 12 ? .null : .string("tag-\(t)")])) }
        let entities = ["Book", "Novel", "Article"]
        let ratings: [StoreValue] = [.double(.nan), .double(-0.0), .double(0.0), .null, .double(4.5), .double(-1.25), .double(3)]
        let titles = ["alpha", "Beta", "gamma", "délta", "Épsilon", "zeta", "", "alpha"]
        for w in 1...260 {
            let entity = entities[w % 3]
            var values: [String: StoreValue] = [
                "title": .string(titles[next(titles.count)] + (w % 5 == 0 ? "" : " \(w % 17)")),
                "isbn": w % 9 == 0 ? .null : .string("isbn-\(w)"),
                "pages": w % 11 == 0 ? .null : .integer32(Int32(next(900)) - 20),
                "rating": ratings[next(ratings.count)],
                "published": w % 13 == 0 ? .null : .date(Date(timeIntervalSinceReferenceDate: Double(next(10_000)) * 86_400 - 3e8)),
            ]
            if entity == "Novel" { values["genre"] = .string(["drama", "crime", "sf"][next(3)]) }
            if entity == "Article" { values["journal"] = next(2) == 0 ? .null : .string("J\(next(4))") }
            let tagCount = next(4)
            let tags = (0..<tagCount).map { _ in Int64(1 + next(12)) }
            out.append(schema.record(entity, Int64(1000 + w), values, [
                "author": w % 10 == 0 ? .toOne(nil) : .toOne(Int64(1 + next(40))),
                "tags": .toMany(Array(Set(tags)).sorted()),
            ]))
        }
        return out
    }

    static func requests() throws -> [FetchRequest] {
        let p = { (s: String, args: [StoreValue]) throws -> FetchPredicate in try FetchPredicate(s, arguments: args) }
        var out: [FetchRequest] = []
        let predicates: [FetchPredicate?] = [
            nil,
            try p("pages > %@", [200]),
            try p("pages >= 100 AND pages < 400", []),
            try p("rating == 0", []),
            try p("rating < 3.5", []),
            try p("rating == nil OR pages == nil", []),
            try p("NOT (title BEGINSWITH %@)", ["alpha"]),
            try p("title BEGINSWITH[c] %@", ["a"]),
            try p("title CONTAINS[cd] %@", ["e"]),
            try p("title LIKE %@", ["*a ?"]),
            try p("title MATCHES %@", ["[a-z]+ [0-9]+"]),
            .comparison(.keyPath(["pages"]), .in, .list([.integer64(5), .integer64(100), .integer64(-3)]), []),
            try p("pages BETWEEN {10, 50}", []),
            try p("author.name == %@", ["author 3"]),
            try p("author.country == nil", []),
            try p("author == nil", []),
            try p("ANY tags.name == %@", ["tag-3"]),
            try p("tags.@count >= 2", []),
            try p("published > %@", [.date(Date(timeIntervalSinceReferenceDate: 0))]),
            // Answered by the uniqueness index on isbn (and must still agree with the reference).
            try p("isbn == %@", ["isbn-42"]),
            try p("isbn == %@", ["no such isbn"]),
            .comparison(.keyPath(["isbn"]), .in, .list(["isbn-7", "isbn-8", "isbn-9", "isbn-200", "nope", .null]), []),
            try p("isbn == %@ AND pages > 1000", ["isbn-42"]),
            try p("%@ == isbn", ["isbn-43"]),
            try p("isbn == %@", [.integer64(42)]),
            try p("isbn == nil", []),
            try p("isbn ==[c] %@", ["ISBN-44"]),
        ]
        let sorts: [[SortKey]] = [
            [], [SortKey("title")], [SortKey("rating", ascending: false), SortKey("title")],
            [SortKey("pages"), SortKey("published", ascending: false)], [SortKey("author.name")],
        ]
        for (i, predicate) in predicates.enumerated() {
            for entity in ["Work", "Book"] {
                let sort = sorts[i % sorts.count]
                out.append(FetchRequest(entity: entity, predicate: predicate, sortDescriptors: sort))
                out.append(FetchRequest(entity: entity, predicate: predicate, sortDescriptors: sort, offset: 3, limit: 5))
                out.append(FetchRequest(entity: entity, predicate: predicate, sortDescriptors: sort, offset: 0, limit: 0))
                out.append(FetchRequest(entity: entity, predicate: predicate, sortDescriptors: sorts[(i + 1) % sorts.count], offset: 250, limit: 10, includesSubentities: false))
            }
        }
        // Authors: the compound uniqueness index on (name, country), with IN and nil.
        for s in ["name == 'author 3' AND country == 'UK'", "country == 'FR' AND name == 'author 5'",
                  "name IN {'author 1', 'author 2', 'author 13'} AND country IN {'UK', 'FR', 'JP'}",
                  "name == 'author 4' AND country == nil", "born > 1950", "born == nil"] {
            out.append(FetchRequest(entity: "Author", predicate: try FetchPredicate(s), sortDescriptors: [SortKey("born")]))
        }
        out.append(FetchRequest(entity: "Tag", predicate: try FetchPredicate("name == 'tag-5'")))
        out.append(FetchRequest(entity: "Tag", sortDescriptors: [SortKey("name", ascending: false)], offset: 1, limit: 4))
        return out
    }

    @Test func fetchCountAndScanMatchTheMemoryStore() throws {
        let dir = try TemporaryDirectory("lmdb-tests")
        let schema = try LMDBFixture.schema()
        let data = try Self.data(schema)
        let reference = MemoryStore(url: nil, metadata: LMDBFixture.metadata(schema))
        try reference.save(StoreChanges(inserted: data))
        let url = dir.path("parity.lmdb")
        let created = try LMDBFixture.create(url, schema: schema)
        // Saved in a few batches, out of key order, to exercise non-append inserts.
        let shuffled = data.reversed().map { $0 }
        for chunk in stride(from: 0, to: shuffled.count, by: 97) {
            try created.save(StoreChanges(inserted: Array(shuffled[chunk..<min(chunk + 97, shuffled.count)])))
        }
        try created.close()
        let store = try LMDBFixture.open(url)
        defer { try? store.close() }

        var compared = 0
        for request in try Self.requests() {
            let expected = try reference.fetch(request)
            let actual = try store.fetch(request)
            #expect(actual == expected, "fetch differs for \(request)")
            #expect(try store.count(request) == reference.count(request), "count differs for \(request)")
            compared += expected.count
        }
        #expect(compared > 500, "the requests must actually return records")
        for e in schema.entities where !e.isAbstract {
            #expect(try LMDBFixture.allRecords(store, schema: schema).filter { $0.entity == e.name }
                == LMDBFixture.allRecords(reference, schema: schema).filter { $0.entity == e.name })
        }
        #expect(try store.records(withKeys: [1001, 5, 1002, 999_999], root: "Work").map(\.primaryKey) == [1001, 1002])
    }
}
