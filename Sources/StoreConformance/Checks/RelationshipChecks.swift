import Foundation
import StoreAPI
import Testing

extension ConformanceSuite {
    func checkRelationships(_ h: Harness) throws {
        let url = h.storeURL()
        let (c, _) = try h.coordinator(url)
        let ctx = c.newContext()
        let a1 = try ctx.insert("Author", ["name": "A1"])
        let a2 = try ctx.insert("Author", ["name": "A2"])
        let agent = try ctx.insert("Agent", ["name": "G"])
        let t1 = try ctx.insert("Tag", ["name": "t1"])
        let t2 = try ctx.insert("Tag", ["name": "t2"])
        let t3 = try ctx.insert("Tag", ["name": "t3"])
        let book = try ctx.insert("Book", ["title": "B"])
        let novel = try ctx.insert("Novel", ["title": "N", "genre": "sf"])
        let article = try ctx.insert("Article", ["title": "R", "journal": "J"])

        // One-to-many, ordered, with sub-entities as destinations.
        try book.setObject(a1, forKey: "author")
        try novel.setObject(a1, forKey: "author")
        #expect(try a1.objects(forKey: "works").map(\.globalID) == [book.globalID, novel.globalID])
        try a1.insertObject(article, at: 0, forKey: "works")
        #expect(try article.object(forKey: "author")?.globalID == a1.globalID, "inserting into works sets the inverse")
        #expect(try a1.objects(forKey: "works").map(\.globalID) == [article.globalID, book.globalID, novel.globalID])
        try book.setObject(a2, forKey: "author")
        #expect(try a1.objects(forKey: "works").map(\.globalID) == [article.globalID, novel.globalID], "moving a work removes it from its old author")
        #expect(try a2.objects(forKey: "works").map(\.globalID) == [book.globalID])

        // One-to-one: giving the agent to A2 takes it from A1.
        try a1.setObject(agent, forKey: "agent")
        #expect(try agent.object(forKey: "client")?.globalID == a1.globalID)
        try a2.setObject(agent, forKey: "agent")
        #expect(try a1.object(forKey: "agent") == nil)
        #expect(try agent.object(forKey: "client")?.globalID == a2.globalID)

        // Many-to-many.
        try book.setObjects([t1, t2], forKey: "tags")
        try novel.setObjects([t2, t3], forKey: "tags")
        #expect(Set(try t2.objects(forKey: "works").map(\.globalID)) == [book.globalID, novel.globalID])
        #expect(try t1.objects(forKey: "works").map(\.globalID) == [book.globalID])

        // Inverse-less to-many (unordered).
        try a1.setObjects([t3, t1], forKey: "favorites")
        // Self-referential: one-to-many and one-to-one.
        try a2.setObject(a1, forKey: "mentor")
        #expect(try a1.objects(forKey: "students").map(\.globalID) == [a2.globalID])
        try book.setObject(novel, forKey: "sequel")
        #expect(try novel.object(forKey: "prequel")?.globalID == book.globalID)
        try ctx.save()
        try h.close(c)

        // Everything survives a reopen, seen from both sides. Order is checked where it means something: ordered
        // relationships of backends that declare `orderedRelationships` (others are compared as sets).
        let keepsOrder = backend.capabilities.contains(.orderedRelationships)
        func sameOrdered<T: Hashable>(_ got: [T], _ want: [T]) -> Bool { keepsOrder ? got == want : Set(got) == Set(want) && got.count == want.count }
        let (c2, s2) = try h.coordinator(url)
        let r = c2.newContext()
        func one(_ entity: String, _ name: String, key: String = "name") throws -> ManagedObject {
            try #require(try r.fetch(FetchRequest(entity: entity, predicate: .comparison(.keyPath([key]), .equal, .constant(.string(name)), []))).first)
        }
        let ra1 = try one("Author", "A1"), ra2 = try one("Author", "A2")
        let rb = try one("Work", "B", key: "title"), rn = try one("Work", "N", key: "title"), rr = try one("Work", "R", key: "title")
        #expect(rb.entity.name == "Book" && rn.entity.name == "Novel" && rr.entity.name == "Article")
        #expect(sameOrdered(try ra1.objects(forKey: "works").map(\.globalID), [rr.globalID, rn.globalID]), "ordered to-many keeps its order")
        #expect(try ra2.objects(forKey: "works").map(\.globalID) == [rb.globalID])
        #expect(try rb.object(forKey: "author")?.globalID == ra2.globalID)
        #expect(try ra2.object(forKey: "agent")?.value(forKey: "name") == "G")
        #expect(try ra1.object(forKey: "agent") == nil)
        #expect(Set(try rb.objects(forKey: "tags").map { try $0.value(forKey: "name") }) == ["t1", "t2"])
        #expect(Set(try (try one("Tag", "t2")).objects(forKey: "works").map(\.globalID)) == [rb.globalID, rn.globalID])
        #expect(Set(try ra1.objects(forKey: "favorites").map { try $0.value(forKey: "name") }) == ["t3", "t1"], "unordered: compared as a set")
        #expect(try ra2.object(forKey: "mentor")?.globalID == ra1.globalID)
        #expect(try ra1.objects(forKey: "students").map(\.globalID) == [ra2.globalID])
        #expect(try rn.object(forKey: "prequel")?.globalID == rb.globalID)

        // The store itself returns both sides of every relationship.
        let rawAuthors = try s2.store.fetch(FetchRequest(entity: "Author", sortDescriptors: [SortKey("name")]))
        let author = try #require(h.schema.entity(named: "Author"))
        let worksIndex = try #require(author.relationshipIndex("works"))
        #expect(sameOrdered(rawAuthors.first?.relationships[worksIndex].keys ?? [], [rr.objectID.primaryKey, rn.objectID.primaryKey]))

        // Key paths through to-one relationships.
        let byAuthor = try r.fetch(FetchRequest(entity: "Work", predicate: .comparison(.keyPath(["author", "name"]), .equal, .constant("A1"), []),
                                                sortDescriptors: [SortKey("title")]))
        #expect(byAuthor.map(\.globalID) == [rn.globalID, rr.globalID])
        try h.close(c2)
    }
}
