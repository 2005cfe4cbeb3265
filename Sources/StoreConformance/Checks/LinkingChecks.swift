import Foundation
import StoreAPI
import Testing

extension ConformanceSuite {
    /// Linking new records to stored ones, save after save, in fresh contexts: the stored records change only on
    /// their derived sides (an author's `works`, a tag's `works`), which a backend may write without rewriting the
    /// records themselves (see ``StoreChanges/updatedProperties``). Both sides must come back, in order; the stored
    /// records' indexed values must still be enforced and still be freed when they change; and a record deleted
    /// elsewhere in the meantime must still fail the save, with nothing written.
    func checkLinkingToStoredRecords(_ h: Harness) throws {
        let url = h.storeURL("linking")
        let (c, _) = try h.coordinator(url)
        let setup = c.newContext()
        let authorID = try setup.insert("Author", ["name": "Linker", "country": "NZ"]).objectID
        let tagIDs = try ["first", "second"].map { try setup.insert("Tag", ["name": .string($0)]).objectID }
        try setup.save()

        var expectedWorks: [String] = []
        for round in 0..<3 {
            let ctx = c.newContext()
            let author = try ctx.object(with: authorID)
            let books = try (0..<3).map { try ctx.insert("Book", ["title": .string("r\(round) b\($0)")]) }
            // Linked last to first, so the author's order is not the books' key order.
            for (i, book) in books.enumerated().reversed() {
                try book.setObject(author, forKey: "author")
                try book.setObjects(try tagIDs.prefix(i % 2 + 1).map { try ctx.object(with: $0) }, forKey: "tags")
                expectedWorks.append("r\(round) b\(i)")
            }
            try ctx.save()
        }

        let reader = c.newContext()
        let works = try reader.object(with: authorID).objects(forKey: "works").map { try $0.value(forKey: "title") }
        if backend.capabilities.contains(.orderedRelationships) {
            #expect(works == expectedWorks.map(StoreValue.string), "the author's works in the order they were linked")
        } else {
            #expect(Set(works) == Set(expectedWorks.map(StoreValue.string)))
        }
        #expect(try reader.object(with: tagIDs[0]).objects(forKey: "works").count == 9)
        #expect(try reader.object(with: tagIDs[1]).objects(forKey: "works").count == 3)

        // The stored records' uniqueness-constrained values are still taken...
        let clash = c.newContext()
        try clash.insert("Tag", ["name": "first"])
        #expect(throws: StoreError.self, "a linked tag's name is still unique") { try clash.save() }
        clash.rollback()
        // ...and freed when they change.
        let rename = c.newContext()
        try rename.object(with: tagIDs[0]).setValue("renamed", forKey: "name")
        try rename.save()
        let reuse = c.newContext()
        try reuse.insert("Tag", ["name": "first"])
        try reuse.save()

        // A record deleted elsewhere fails a save that only links to it.
        let writer = c.newContext()
        let author = try writer.object(with: authorID)
        let deleter = c.newContext()
        let doomed = try deleter.object(with: authorID)
        for work in try doomed.objects(forKey: "works") { try work.setObject(nil, forKey: "author") }
        try deleter.delete(doomed)
        try deleter.save()
        let orphan = try writer.insert("Book", ["title": "orphan"])
        try orphan.setObject(author, forKey: "author")
        #expect(throws: StoreError.self, "linking to a record deleted elsewhere") { try writer.save() }
        #expect(try c.newContext().count(FetchRequest(entity: "Book", predicate: try FetchPredicate("title == 'orphan'"))) == 0,
                "the failed save wrote nothing")
        try h.close(c)
    }
}
