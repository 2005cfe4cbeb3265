import Foundation
import StoreAPI
import StoreModels
import StoreTestSupport
import Testing

/// Aggregates from key paths on every store type: sums, averages, minimums, maximums, distinct values and grouped
/// counts and sums, with the Swift types the properties have.
@Suite struct ModelAggregateTests {
    static let books: [(String, Int, Genre, String)] = [
        ("The Dispossessed", 387, .fiction, "Le Guin"), ("The Lathe of Heaven", 184, .fiction, "Le Guin"),
        ("The Wave in the Mind", 304, .essay, "Le Guin"), ("Excession", 451, .fiction, "Banks"),
        ("Finding My Elegy", 212, .poetry, "Le Guin"),
    ]

    @Test(arguments: StoreKind.allCases)
    func aggregatesFromKeyPaths(_ kind: StoreKind) async throws {
        let dir = try TemporaryDirectory("model-aggregates")
        let db = try kind.open(in: dir)
        defer { try? db.close() }
        let empty = try await db.read { tx in
            (try tx.sum(\Book.pages), try tx.average(\Book.pages), try tx.max(\Book.title), try tx.count(Book.self, groupedBy: \.genre))
        }
        #expect(empty.0 == 0 && empty.1 == nil && empty.2 == nil && empty.3.isEmpty, "no books: zero, nil, nil, no groups")

        try await db.write { tx in
            var authors: [String: ModelRef<Author>] = [:]
            for name in ["Le Guin", "Banks"] { authors[name] = try tx.insert(Author(name: name, born: name == "Banks" ? 1954 : nil)).ref }
            for (title, pages, genre, author) in Self.books {
                try tx.insert(Book(title: title, pages: pages, genre: genre, author: authors[author]))
            }
        }
        let pages = Self.books.map(\.1)
        let results = try await db.read { tx in
            (sum: try tx.sum(\Book.pages), long: try tx.sum(\Book.pages, where: \.pages > 300),
             average: try tx.average(\Book.pages), shortest: try tx.min(\Book.pages), last: try tx.max(\Book.title),
             born: try tx.max(\Author.born), genres: try tx.distinct(\Book.genre),
             perGenre: try tx.count(Book.self, groupedBy: \.genre), pagesPerGenre: try tx.sum(\Book.pages, groupedBy: \.genre, where: \.pages < 400))
        }
        #expect(results.sum == pages.reduce(0, +))
        #expect(results.long == pages.filter { $0 > 300 }.reduce(0, +))
        #expect(results.average == Double(pages.reduce(0, +)) / Double(pages.count))
        #expect(results.shortest == 184)
        #expect(results.last == "The Wave in the Mind")
        #expect(results.born == 1954, "an optional property's maximum skips nil")
        #expect(results.genres == [.essay, .fiction, .poetry], "stored raw values in ascending order")
        #expect(results.perGenre == [ModelGroup(key: .essay, value: 1), ModelGroup(key: .fiction, value: 3), ModelGroup(key: .poetry, value: 1)])
        #expect(results.pagesPerGenre == [ModelGroup(key: .essay, value: 304), ModelGroup(key: .fiction, value: 571),
                                          ModelGroup(key: .poetry, value: 212)])
    }
}
