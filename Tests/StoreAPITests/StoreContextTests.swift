import Foundation
import StoreAPI
import StoreTestSupport
import Testing

/// The unit-of-work context: insert, fetch, update, delete and save, both sides of every relationship kept in step,
/// and what a failed save and a rollback leave behind, through the in-memory backend. (Its identity map:
/// IdentityMapTests.)
@Suite struct StoreContextTests {
    /// Authors with an ordered to-many `books` (inverse `author`), books with a unique, required `isbn` and a
    /// many-to-many `shelves`.
    static func schema() throws -> Schema {
        try Schema(entities: [
            EntityDescription(name: "Author", attributes: [AttributeDescription(name: "name", type: .string)], relationships: [
                RelationshipDescription(name: "books", destination: "Book", inverse: "author", isToMany: true, isOrdered: true),
            ]),
            EntityDescription(
                name: "Book",
                attributes: [
                    AttributeDescription(name: "title", type: .string),
                    AttributeDescription(name: "isbn", type: .string, isOptional: false),
                    AttributeDescription(name: "pages", type: .integer32, defaultValue: .integer32(0)),
                ],
                relationships: [
                    RelationshipDescription(name: "author", destination: "Author", inverse: "books"),
                    RelationshipDescription(name: "shelves", destination: "Shelf", inverse: "books", isToMany: true),
                ],
                uniquenessConstraints: [["isbn"]]),
            EntityDescription(name: "Shelf", attributes: [AttributeDescription(name: "label", type: .string)], relationships: [
                RelationshipDescription(name: "books", destination: "Book", inverse: "shelves", isToMany: true),
            ]),
        ])
    }

    /// A coordinator over one anonymous in-memory store (history tracked).
    static func coordinator() throws -> (StoreCoordinator, LoadedStore) {
        let coordinator = StoreCoordinator(schema: try schema(), registry: MemoryStores.registry)
        let loaded = try coordinator.addStore(StoreDescription(
            url: nil, type: InMemoryBackend.typeIdentifier, options: StoreOptions(historyTracking: true)))
        return (coordinator, loaded)
    }

    static func storeError(_ body: () throws -> Void) -> StoreError? {
        do { try body() } catch let error as StoreError { return error } catch { return nil }
        return nil
    }

    /// The stored record with `globalID`, read from the store, not the context.
    static func storedRecord(_ loaded: LoadedStore, _ entity: String, _ globalID: UUID) throws -> Record? {
        try loaded.store.fetch(FetchRequest(entity: entity)).first { $0.globalID == globalID }
    }

    /// The stored value of attribute `key` of the record with `globalID` (`nil` when there is no such record).
    static func stored(_ loaded: LoadedStore, _ entity: String, _ globalID: UUID, _ key: String) throws -> StoreValue? {
        let e = try #require(loaded.store.metadata.schema.entity(named: entity))
        guard let r = try storedRecord(loaded, entity, globalID) else { return nil }
        return r.attributes[try #require(e.attributeIndex(key))]
    }

    /// The stored keys of relationship `key` of the record with `globalID`.
    static func storedKeys(_ loaded: LoadedStore, _ entity: String, _ globalID: UUID, _ key: String) throws -> [Int64]? {
        let e = try #require(loaded.store.metadata.schema.entity(named: entity))
        guard let r = try storedRecord(loaded, entity, globalID) else { return nil }
        return r.relationships[try #require(e.relationshipIndex(key))].keys
    }

    @Test func insertedObjectsAreSavedAndFetchedByAnotherContext() throws {
        let (coordinator, loaded) = try Self.coordinator()
        let context = coordinator.newContext()
        #expect(!context.hasChanges)
        let book = try context.insert("Book", ["title": "Solaris", "isbn": "1"])
        #expect(context.hasChanges && context.insertedObjects.count == 1)
        #expect(try book.value(forKey: "pages") == .integer32(0), "an attribute not given takes its default")
        #expect(try loaded.store.count(FetchRequest(entity: "Book")) == 0, "nothing is written before save")
        try context.save()
        #expect(!context.hasChanges && context.insertedObjects.isEmpty)
        #expect(try loaded.store.count(FetchRequest(entity: "Book")) == 1)

        let reader = coordinator.newContext()
        let found = try reader.fetch("Book", where: "title == %@", "Solaris")
        #expect(found.count == 1)
        #expect(found.first?.globalID == book.globalID)
        #expect(found.first?.objectID == book.objectID)
        #expect(try found.first?.value(forKey: "isbn") == .string("1"))
        #expect(try reader.fetch("Book", where: "title == %@", "Eden").isEmpty)
    }

    @Test func updatesAndDeletesAreWrittenOnSave() throws {
        let (coordinator, loaded) = try Self.coordinator()
        let context = coordinator.newContext()
        let keep = try context.insert("Book", ["title": "Draft", "isbn": "1"])
        let drop = try context.insert("Book", ["title": "Gone", "isbn": "2"])
        try context.save()

        try keep.setValue("Final", forKey: "title")
        #expect(context.updatedObjects.map(\.objectID) == [keep.objectID])
        try context.delete(drop)
        #expect(drop.isDeleted && context.deletedObjects.count == 1)
        #expect(try Self.stored(loaded, "Book", keep.globalID, "title") == .string("Draft"))
        try context.save()
        #expect(try Self.stored(loaded, "Book", keep.globalID, "title") == .string("Final"))
        #expect(try Self.stored(loaded, "Book", drop.globalID, "title") == nil)
        #expect(try loaded.store.count(FetchRequest(entity: "Book")) == 1)
        #expect(Self.storeError { _ = try drop.value(forKey: "title") } != nil, "a deleted and saved object is no longer usable")
    }

    @Test func settingOneSideOfARelationshipSetsTheInverse() throws {
        let (coordinator, loaded) = try Self.coordinator()
        let context = coordinator.newContext()
        let author = try context.insert("Author", ["name": "Lem"])
        let a = try context.insert("Book", ["title": "A", "isbn": "a"])
        let b = try context.insert("Book", ["title": "B", "isbn": "b"])
        let c = try context.insert("Book", ["title": "C", "isbn": "c"])
        try a.setObject(author, forKey: "author")
        try author.addObject(b, forKey: "books")
        try author.insertObject(c, at: 0, forKey: "books")
        #expect(try author.objects(forKey: "books").map(\.objectID) == [c, a, b].map(\.objectID))
        #expect(try b.object(forKey: "author")?.objectID == author.objectID)
        #expect(try c.object(forKey: "author")?.objectID == author.objectID)

        let shelf = try context.insert("Shelf", ["label": "sf"])
        try a.setObjects([shelf], forKey: "shelves")
        #expect(try shelf.objects(forKey: "books").map(\.objectID) == [a.objectID])
        try context.save()
        // Both sides were written, in order.
        #expect(try Self.storedKeys(loaded, "Author", author.globalID, "books") == [c, a, b].map(\.objectID.primaryKey))
        #expect(try Self.storedKeys(loaded, "Shelf", shelf.globalID, "books") == [a.objectID.primaryKey])
        #expect(try Self.storedKeys(loaded, "Book", a.globalID, "author") == [author.objectID.primaryKey])

        // Moving a book to another author takes it off the first author's list.
        let other = try context.insert("Author", ["name": "Strugatsky"])
        try c.setObject(other, forKey: "author")
        #expect(try author.objects(forKey: "books").map(\.objectID) == [a, b].map(\.objectID))
        #expect(try other.objects(forKey: "books").map(\.objectID) == [c.objectID])
        try author.removeObject(a, forKey: "books")
        #expect(try a.object(forKey: "author") == nil)
        try context.save()
        let fresh = coordinator.newContext()
        let reread = try #require(try fresh.fetch("Author", where: "name == %@", "Lem").first)
        #expect(try reread.objects(forKey: "books").map(\.globalID) == [b.globalID])
    }

    @Test func aFailedSaveWritesNothingAndKeepsTheChanges() throws {
        let (coordinator, loaded) = try Self.coordinator()
        let context = coordinator.newContext()
        let good = try context.insert("Book", ["title": "Fine", "isbn": "1"])
        let missing = try context.insert("Book", ["title": "No ISBN"])
        guard case .missingValue(let entity, let property, _) = Self.storeError({ try context.save() }) else {
            Issue.record("a required attribute left empty must fail the save")
            return
        }
        #expect(entity == "Book" && property == "isbn")
        #expect(try loaded.store.count(FetchRequest(entity: "Book")) == 0, "nothing of a failed save is written")
        #expect(context.hasChanges && context.insertedObjects.count == 2)
        try missing.setValue("2", forKey: "isbn")
        try context.save()
        #expect(try loaded.store.count(FetchRequest(entity: "Book")) == 2)
        #expect(try Self.stored(loaded, "Book", good.globalID, "isbn") == .string("1"))
    }

    @Test func rollbackAfterAFailedSaveReturnsToTheSavedState() throws {
        let (coordinator, loaded) = try Self.coordinator()
        let context = coordinator.newContext()
        let saved = try context.insert("Book", ["title": "Original", "isbn": "1"])
        try context.save()
        let historyBefore = try loaded.store.history(after: nil).count

        try saved.setValue("Edited", forKey: "title")
        let clash = try context.insert("Book", ["title": "Clash", "isbn": "1"])
        #expect(Self.storeError { try context.save() }?.caseName == "uniquenessViolation")
        #expect(try Self.stored(loaded, "Book", saved.globalID, "title") == .string("Original"))
        #expect(try loaded.store.history(after: nil).count == historyBefore, "a failed save records no history")

        context.rollback()
        #expect(!context.hasChanges)
        #expect(try saved.value(forKey: "title") == .string("Original"), "a changed object returns to its saved values")
        #expect(Self.storeError { _ = try clash.value(forKey: "title") }?.caseName == "objectInvalidated",
                "an object whose insertion was rolled back is invalid")
        try context.save()  // nothing left to write
        #expect(try loaded.store.count(FetchRequest(entity: "Book")) == 1)
    }

    @Test func aSaveRecordsHistoryWithTheContextsAuthor() throws {
        let (coordinator, loaded) = try Self.coordinator()
        let context = coordinator.newContext()
        context.author = "importer"
        let book = try context.insert("Book", ["title": "T", "isbn": "1"])
        try context.save()
        try book.setValue("U", forKey: "title")
        try context.save()
        let history = try loaded.store.history(after: nil)
        #expect(history.count == 2)
        #expect(history.allSatisfy { $0.author == "importer" })
        #expect(history.first?.changes.map(\.kind) == [.insert])
        #expect(history.last?.changes.first?.kind == .update)
        #expect(history.last?.changes.first?.globalID == book.globalID)
        #expect(history.last?.changes.first?.changedKeys == ["title"])
    }
}
