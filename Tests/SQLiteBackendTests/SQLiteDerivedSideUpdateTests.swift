import Foundation
import StoreAPI
import StoreTestSupport
import Testing
import SQLiteBackend

/// Saves that change only the derived side of a relationship of a stored record (a book added to a shelf changes
/// the shelf's `books`, which lives in the books' rows and an order table) skip rewriting that record's row: the
/// relationship data must still be written, and a record deleted elsewhere must still fail the save.
@Suite struct SQLiteDerivedSideUpdateTests {
    static let registry = BackendRegistry(backends: [SQLiteStoreBackend()])

    static func schema() throws -> Schema {
        try Schema(entities: [
            EntityDescription(name: "Shelf", attributes: [AttributeDescription(name: "name", type: .string)], relationships: [
                RelationshipDescription(name: "books", destination: "Book", inverse: "shelf", isToMany: true, isOrdered: true),
                RelationshipDescription(name: "loose", destination: "Book", inverse: "bin", isToMany: true),
            ]),
            EntityDescription(name: "Label", attributes: [AttributeDescription(name: "name", type: .string)], relationships: [
                RelationshipDescription(name: "books", destination: "Book", inverse: "labels", isToMany: true),
            ]),
            EntityDescription(name: "Book", attributes: [AttributeDescription(name: "title", type: .string)], relationships: [
                RelationshipDescription(name: "shelf", destination: "Shelf", inverse: "books"),
                RelationshipDescription(name: "bin", destination: "Shelf", inverse: "loose"),
                RelationshipDescription(name: "labels", destination: "Label", inverse: "books", isToMany: true),
            ]),
        ])
    }

    @Test func linkingNewRecordsToStoredOnesKeepsBothSides() throws {
        let dir = try TemporaryDirectory("sqlitestore-tests")
        let url = dir.path("library.sqlite")
        let schema = try Self.schema()
        var shelfID: ObjectID
        var labelIDs: [ObjectID]
        var expectedOrder: [String] = []
        do {
            let coordinator = StoreCoordinator(schema: schema, registry: Self.registry)
            try coordinator.addStore(StoreDescription(url: url, type: "sqlite"))
            let context = coordinator.newContext()
            shelfID = try context.insert("Shelf", ["name": "fiction"]).objectID
            labelIDs = try ["old", "new"].map { try context.insert("Label", ["name": .string($0)]).objectID }
            try context.save()
            // Three rounds, each in a fresh context: the shelf and labels are stored records whose only change is
            // the books added to them from the books' side.
            for round in 0..<3 {
                let c = coordinator.newContext()
                let shelf = try c.object(with: shelfID)
                let books = try (0..<4).map { try c.insert("Book", ["title": .string("r\(round) b\($0)")]) }
                // Linked last to first, so the shelf's order is not the books' key order.
                for (i, book) in books.enumerated().reversed() {
                    try book.setObject(shelf, forKey: round == 1 ? "bin" : "shelf")
                    try book.setObjects(try labelIDs.prefix(i % 2 + 1).map { try c.object(with: $0) }, forKey: "labels")
                    if round != 1 { expectedOrder.append("r\(round) b\(i)") }
                }
                // An attribute change of its own in the last round: this time the row is rewritten too.
                if round == 2 { try shelf.setValue("fiction & more", forKey: "name") }
                try c.save()
            }
            for s in coordinator.stores { try coordinator.removeStore(s) }
        }
        let coordinator = StoreCoordinator(schema: schema, registry: Self.registry)
        try coordinator.addStore(StoreDescription(url: url, type: "sqlite"))
        let context = coordinator.newContext()
        let shelf = try context.object(with: shelfID)
        #expect(try shelf.value(forKey: "name") == .string("fiction & more"))
        #expect(try shelf.objects(forKey: "books").map { try $0.value(forKey: "title") } == expectedOrder.map(StoreValue.string),
                "the ordered side keeps the order books were added in")
        #expect(try shelf.objects(forKey: "loose").count == 4)
        #expect(try context.object(with: labelIDs[0]).objects(forKey: "books").count == 12)
        #expect(try context.object(with: labelIDs[1]).objects(forKey: "books").count == 6)
        for book in try context.fetch(FetchRequest(entity: "Book")) {
            #expect(try book.object(forKey: "shelf") === shelf || book.object(forKey: "bin") === shelf)
        }
    }

    @Test func aRecordDeletedElsewhereStillFailsTheSave() throws {
        let dir = try TemporaryDirectory("sqlitestore-tests")
        let url = dir.path("library.sqlite")
        let coordinator = StoreCoordinator(schema: try Self.schema(), registry: Self.registry)
        try coordinator.addStore(StoreDescription(url: url, type: "sqlite"))
        let setup = coordinator.newContext()
        let shelfID = try setup.insert("Shelf", ["name": "doomed"]).objectID
        try setup.save()

        let writer = coordinator.newContext()
        let shelf = try writer.object(with: shelfID)
        let deleter = coordinator.newContext()
        try deleter.delete(try deleter.object(with: shelfID))
        try deleter.save()

        let book = try writer.insert("Book", ["title": "orphan"])
        try book.setObject(shelf, forKey: "bin")  // the shelf's only change: its derived `loose` side
        #expect(throws: StoreError.self) { try writer.save() }
        #expect(try coordinator.newContext().count(FetchRequest(entity: "Book")) == 0, "the failed save wrote nothing")
    }
}
