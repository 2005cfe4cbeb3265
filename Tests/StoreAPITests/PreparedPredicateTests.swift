import Foundation
@_spi(BackendKit) import StoreAPI
import Testing

@Suite("Prepared predicates and the keys a predicate reads")
struct PreparedPredicateTests {
    let lib: PredicateLibrary

    init() throws { lib = try PredicateLibrary.standard() }

    @Test("keyPathRoots names the first component of every key path, on either side and inside ANY, ALL, NOT, OR")
    func keyPathRoots() throws {
        let p = try FetchPredicate(
            "(pages > 300 AND NOT (author.name BEGINSWITH 'U')) OR ANY tags.name == 'sf' OR ALL tags.rank < 3 OR rating == price "
                + "OR tags.@count == 2 OR self == 3 OR 'x' IN tags.name")
        #expect(p.keyPathRoots == ["pages", "author", "tags", "rating", "price", "self"])
        #expect(try FetchPredicate("TRUEPREDICATE").keyPathRoots.isEmpty)
        #expect(try FetchPredicate("pages IN {1, 2}").keyPathRoots == ["pages"])
    }

    @Test("a prepared predicate matches exactly what execute keeps, on every book and predicate")
    func matchesAgreeWithExecute() throws {
        let sources = [
            "pages > 300", "pages == nil", "title BEGINSWITH[c] 'the'", "title MATCHES '[A-Z].*'", "author.name == 'Frank Herbert'",
            "ANY tags.name == 'classic'", "tags.@count >= 2", "NOT (rating < 4.2)", "self == 2", "inPrint == YES AND price > 8",
        ]
        let candidates = try lib.candidates("Book")
        for source in sources {
            let predicate = try FetchPredicate(source)
            let prepared = try lib.evaluator.prepare(predicate, entity: "Book")
            let kept = try lib.evaluator.execute(FetchRequest(entity: "Book", predicate: predicate), candidates: candidates)
            #expect(try candidates.filter { try prepared.matches($0) }.map(\.primaryKey) == kept.map(\.primaryKey), "\(source)")
        }
    }

    @Test("a record needs only the values the predicate reads: the others are never looked at")
    func unreadValuesDoNotMatter() throws {
        let predicate = try FetchPredicate("pages >= 300 AND author.name == 'Ursula K. Le Guin'")
        let prepared = try lib.evaluator.prepare(predicate, entity: "Book")
        let book = try lib.record("Book", 1)
        #expect(try prepared.matches(book))
        // Everything but pages and author blanked out, as a backend's partial decode leaves it.
        let entity = try lib.schema.requireEntity("Book")
        var probe = entity.newRecord(primaryKey: book.primaryKey)
        let roots = predicate.keyPathRoots
        for (i, a) in entity.attributes.enumerated() where roots.contains(a.name) { probe.attributes[i] = book.attributes[i] }
        for (i, r) in entity.relationships.enumerated() where roots.contains(r.name) { probe.relationships[i] = book.relationships[i] }
        #expect(probe.attributes.filter { !$0.isNull }.count == 1, "only pages is carried over")
        #expect(try prepared.matches(probe))
        probe.attributes[try #require(entity.attributeIndex("pages"))] = .integer32(299)
        #expect(try !prepared.matches(probe))
    }

    @Test("prepare checks the predicate against the schema and compiles its patterns before any record is seen")
    func prepareRefusesBadPredicates() throws {
        do {
            _ = try lib.evaluator.prepare(try FetchPredicate("colour == 'red'"), entity: "Book")
            Issue.record("an unknown key was accepted")
        } catch let e as StoreError {
            guard case .unknownProperty(entity: "Book", property: "colour") = e else { Issue.record("wrong error \(e)"); return }
        }
        do {
            _ = try lib.evaluator.prepare(try FetchPredicate("title MATCHES '(unclosed'"), entity: "Book")
            Issue.record("an invalid pattern was accepted")
        } catch let e as StoreError {
            guard case .invalidPredicate(let message) = e else { Issue.record("wrong error \(e)"); return }
            #expect(message.contains("(unclosed"))
        }
        do {
            _ = try lib.evaluator.prepare(try FetchPredicate("tags.name == 'sf'"), entity: "Book")
            Issue.record("a plain key path through a to-many relationship was accepted")
        } catch let e as StoreError {
            guard case .invalidPredicate = e else { Issue.record("wrong error \(e)"); return }
        }
    }
}
