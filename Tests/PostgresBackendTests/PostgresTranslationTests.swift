import Foundation
@testable import PostgresBackend
@_spi(BackendKit) import StoreAPI
import Testing

/// What the PostgreSQL translator takes into SQL and what it leaves to the evaluator (no server needed: the
/// parity suite checks the results against the evaluator on a server).
@Suite struct PostgresTranslationTests {
    static func translates(_ text: String, entity: String = "Item") throws -> Bool {
        let schema = try PostgresFetchParityTests.schema()
        let e = try #require(schema.entity(named: entity))
        var q = PostgresQueryTranslator(layout: PostgresLayout(schema: schema))
        return q.translateWithinLimits(try FetchPredicate(text), entity: e) != nil
    }

    @Test func quantifiersAndLikeRunInSQL() throws {
        for text in [
            "ANY tags.name == 'owner 1'", "ALL tags.rank > 0", "NONE tags.name BEGINSWITH 'o'", "ANY tags == 3",
            "'owner 1' IN tags.name", "tags.name CONTAINS 'owner 2'", "ANY tags.items.str LIKE 'a*'",
            "ANY tags.items.owner.name == 'x'", "str LIKE 'a*b'", "str LIKE '100%_\\\\*'", "NOT str LIKE ''",
        ] {
            #expect(try Self.translates(text), "\(text)")
        }
        #expect(try Self.translates("ANY items.str ENDSWITH 'b'", entity: "Owner"))
    }

    /// PostgreSQL has no exact twin of Foundation's folding nor of `?` over UTF-8 bytes: the evaluator runs.
    @Test func foldingMatchesAndSingleWildcardsStayInMemory() throws {
        for text in ["str ==[c] 'a'", "str BEGINSWITH[d] 'e'", "str LIKE 'a?'", "str MATCHES 'a.*'", "ANY tags.name ==[cd] 'x'",
                     "ALL tags.name LIKE[c] 'o*'", "ANY owner.items.str == 'a'"] {
            #expect(try !Self.translates(text), "\(text)")
        }
    }
}
