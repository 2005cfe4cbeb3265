import Foundation
import StoreAPI
import Testing

extension ConformanceSuite {
    func checkDeleteRules(_ h: Harness) throws {
        let url = h.storeURL()
        let (c, _) = try h.coordinator(url)
        let ctx = c.newContext()
        let author = try ctx.insert("Author", ["name": "Doomed"])
        let other = try ctx.insert("Author", ["name": "Other"])
        let agent = try ctx.insert("Agent", ["name": "G"])
        let tag = try ctx.insert("Tag", ["name": "kept"])
        let fav = try ctx.insert("Tag", ["name": "fav"])
        let b1 = try ctx.insert("Book", ["title": "B1"])
        let b2 = try ctx.insert("Novel", ["title": "B2"])
        let survivor = try ctx.insert("Book", ["title": "Survivor"])
        try author.setObjects([b1, b2], forKey: "works")
        try other.setObjects([survivor], forKey: "works")
        try author.setObject(agent, forKey: "agent")
        try b1.setObjects([tag], forKey: "tags")
        try survivor.setObjects([tag], forKey: "tags")
        try other.setObjects([fav], forKey: "favorites")
        try ctx.save()

        // Deny: the agent still has a client, so nothing changes.
        #expect(throws: StoreError.self) { try ctx.delete(agent) }
        #expect(!agent.isDeleted)
        #expect(try author.object(forKey: "agent")?.globalID == agent.globalID)
        #expect(!ctx.hasChanges, "a denied delete changes nothing")

        // Cascade (works), nullify (agent's client, the tag's works).
        try ctx.delete(author)
        #expect(author.isDeleted && b1.isDeleted && b2.isDeleted)
        #expect(try agent.object(forKey: "client") == nil)
        #expect(try tag.objects(forKey: "works").map(\.globalID) == [survivor.globalID])
        // No action: deleting an author leaves the tags it listed as favorites alone.
        try ctx.delete(other)
        #expect(!fav.isDeleted && survivor.isDeleted)
        try ctx.save()
        #expect(throws: StoreError.self) { _ = try b1.value(forKey: "title") }

        // Now that the agent has no client, deny no longer applies.
        try ctx.delete(agent)
        try ctx.save()
        try h.close(c)

        let (c2, _) = try h.coordinator(url)
        let r = c2.newContext()
        #expect(try r.count(FetchRequest(entity: "Author")) == 0)
        #expect(try r.count(FetchRequest(entity: "Work")) == 0)
        #expect(try r.count(FetchRequest(entity: "Agent")) == 0)
        let tags = try r.fetch(FetchRequest(entity: "Tag", sortDescriptors: [SortKey("name")]))
        #expect(try tags.map { try $0.value(forKey: "name") } == ["fav", "kept"])
        #expect(try tags.allSatisfy { try $0.objects(forKey: "works").isEmpty })
        try h.close(c2)
    }
}
