import Foundation
import StoreAPI
import StoreTestSupport
import Testing

/// Merge policies over many inserts at once (the lookups of stored records go a chunk at a time), and a stored
/// record this context changed away from the values, which is no longer in the way.
@Suite struct MergePolicyTests {
    @Test func manyCollidingInsertsMergeInOneSave() throws {
        let (coordinator, _) = try StoreContextTests.coordinator()
        let setup = coordinator.newContext()
        var storedIDs: [String: ObjectID] = [:]
        for i in 0..<1_200 {
            let book = try setup.insert("Book", ["isbn": .string("isbn-\(i)"), "title": "old", "pages": 10])
            storedIDs["isbn-\(i)"] = book.objectID
        }
        try setup.save()

        // 1 500 inserts: every stored ISBN again, in another order, and 300 new ones; one save.
        let ctx = coordinator.newContext()
        ctx.mergePolicy = .mergeByPropertyObjectTrump
        for i in (0..<1_500).reversed() {
            _ = try ctx.insert("Book", ["isbn": .string("isbn-\(i)"), "title": "new"])
        }
        try ctx.save()

        let check = coordinator.newContext()
        let books = try check.fetch(FetchRequest(entity: "Book"))
        #expect(books.count == 1_500)
        var kept = 0
        for b in books {
            guard case .string(let isbn) = try b.value(forKey: "isbn") else { continue }
            if let id = storedIDs[isbn] {
                kept += b.objectID == id ? 1 : 0
                #expect(try b.value(forKey: "pages") == .integer32(0), "the insert's default value wins under object trump")
            }
            #expect(try b.value(forKey: "title") == "new")
        }
        #expect(kept == 1_200, "every stored record kept its identity")
    }

    @Test func aRecordChangedAwayIsNotInTheWay() throws {
        let (coordinator, _) = try StoreContextTests.coordinator()
        let setup = coordinator.newContext()
        _ = try setup.insert("Book", ["isbn": "x"])
        try setup.save()
        // The stored record is changed away from the value in this context, so nothing is in the way.
        let ctx = coordinator.newContext()
        ctx.mergePolicy = .overwrite
        let stored = try #require(try ctx.fetch(FetchRequest(entity: "Book")).first)
        try stored.setValue("y", forKey: "isbn")
        let fresh = try ctx.insert("Book", ["isbn": "x", "title": "fresh"])
        try ctx.save()
        #expect(fresh.state == .clean, "no collision: a plain insert")
        #expect(try coordinator.newContext().count(FetchRequest(entity: "Book")) == 2)
        // A policy for one object is refused on an object that is not an insert.
        #expect(throws: StoreError.self) { try ctx.setMergePolicy(.rollback, for: stored) }
        withExtendedLifetime(ctx) {}
    }
}
