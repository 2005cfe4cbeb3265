import Foundation
import StoreAPI
import StoreModels
import StoreTestSupport
import Testing

/// Typed `MATCHES` and folded `IN` give the same books on every store type (SQLite runs them in SQL, the others
/// in memory).
@Suite struct ModelPredicateMatchingTests {
    @Test("MATCHES and IN[cd] from key paths", arguments: StoreKind.allCases)
    func matchingPredicates(kind: StoreKind) async throws {
        let dir = try TemporaryDirectory("typed-matching")
        let db = try kind.open(in: dir)
        defer { try? db.close() }
        try await db.write { tx in
            for (title, pages) in [("Straße", 10), ("STRASSE", 20), ("The Word", 30), ("Élan", 40), ("elan", 50)] {
                try tx.insert(Book(title: title, pages: pages))
            }
        }
        let pages = try await db.read { tx in
            (
                matched: try tx.fetch(Book.self, where: .matches(\.title, "str.*e", options: .caseInsensitive), sortedBy: [.ascending(\.pages)]).map(\.pages),
                folded: try tx.fetch(Book.self, where: .isIn(\.title, ["strasse", "ELAN"], options: [.caseInsensitive, .diacriticInsensitive]),
                                     sortedBy: [.ascending(\.pages)]).map(\.pages),
                negated: try tx.fetch(Book.self, where: !ModelPredicate<Book>.matches(\.title, "[A-Z].*"), sortedBy: [.ascending(\.pages)]).map(\.pages)
            )
        }
        #expect(pages.matched == [10, 20])
        #expect(pages.folded == [10, 20, 40, 50])
        #expect(pages.negated == [40, 50])
    }
}
