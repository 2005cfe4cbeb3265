import Foundation
@_spi(BackendKit) import StoreAPI
import StoreTestSupport
import Testing

/// Records inserted without objects (BackendKit SPI): written by the next save with the context's other changes, in
/// one store save and one history transaction; checked as they are staged; dropped by a rollback.
@Suite struct InsertWithoutObjectsTests {
    /// `Note` links nothing; `Book` (from the context tests' schema) has a unique, required `isbn`.
    static func coordinator() throws -> (StoreCoordinator, LoadedStore) {
        var entities = try StoreContextTests.schema().entities.map(\.definition)
        entities.append(EntityDescription(name: "Note", attributes: [
            AttributeDescription(name: "text", type: .string, isOptional: false),
            AttributeDescription(name: "rank", type: .integer64, defaultValue: .integer64(7)),
        ]))
        let coordinator = StoreCoordinator(schema: try Schema(entities: entities), registry: MemoryStores.registry)
        let loaded = try coordinator.addStore(StoreDescription(
            url: nil, type: InMemoryBackend.typeIdentifier, options: StoreOptions(historyTracking: true)))
        return (coordinator, loaded)
    }

    @Test func stagedRecordsAreSavedWithTheOtherChangesInOneTransaction() throws {
        let (coordinator, loaded) = try Self.coordinator()
        let context = coordinator.newContext()
        context.author = "importer"
        let ids = [UUID(), UUID()]
        try context.insertWithoutObjects("Note", attributeValues: [[.string("a"), nil], [.string("b"), .integer32(3)]],
                                         globalIDs: ids, into: loaded)
        #expect(context.hasChanges)
        #expect(context.insertedObjects.isEmpty, "no object is made")
        let author = try context.insert("Author", ["name": "Le Guin"])
        let before = try loaded.store.history(after: nil).last?.token
        try context.save()
        #expect(!context.hasChanges)

        let notes = try loaded.store.fetch(FetchRequest(entity: "Note"))
        #expect(Set(notes.map(\.globalID)) == Set(ids))
        let a = try #require(notes.first { $0.globalID == ids[0] })
        let b = try #require(notes.first { $0.globalID == ids[1] })
        #expect(a.attributes == [.string("a"), .integer64(7)], "a value left out takes its default")
        #expect(b.attributes == [.string("b"), .integer64(3)], "values are converted to their attribute's type")
        #expect(a.primaryKey != b.primaryKey)
        let saves = try loaded.store.history(after: before)
        #expect(saves.count == 1, "one save, one history transaction")
        let inserted = Set((saves.first?.changes ?? []).filter { $0.kind == .insert }.map(\.globalID))
        #expect(inserted == Set(ids + [author.globalID]))
        #expect(saves.first?.author == "importer")
        // Saved like any record: another context finds them, and a later save of the same context writes nothing again.
        #expect(try coordinator.newContext().count(FetchRequest(entity: "Note")) == 2)
        try context.save()
        #expect(try loaded.store.fetch(FetchRequest(entity: "Note")).count == 2)
    }

    @Test func stagedRecordsAloneAreSavedInTheOrderStagedAndKeptByAFailedSave() throws {
        let (coordinator, loaded) = try Self.coordinator()
        let context = coordinator.newContext()
        let first = [UUID(), UUID()]
        let second = [UUID()]
        try context.insertWithoutObjects("Note", attributeValues: [[.string("a"), nil], [.string("b"), .integer64(2)]],
                                         globalIDs: first, into: loaded)
        try context.insertWithoutObjects("Note", attributeValues: [[.string("c"), .integer64(3)]], globalIDs: second,
                                         into: loaded)
        // A save that fails its checks writes nothing and keeps what was staged.
        let book = try context.insert("Book", ["title": "Untitled"])
        #expect(throws: StoreError.self) { try context.save() }
        #expect(try loaded.store.fetch(FetchRequest(entity: "Note")).isEmpty)
        #expect(context.hasChanges)
        try context.delete(book)
        let before = try loaded.store.history(after: nil).last?.token
        try context.save()

        let notes = try loaded.store.fetch(FetchRequest(entity: "Note", sortDescriptors: [SortKey("text")]))
        #expect(notes.map(\.globalID) == first + second)
        #expect(notes.map(\.attributes) == [[.string("a"), .integer64(7)], [.string("b"), .integer64(2)],
                                            [.string("c"), .integer64(3)]])
        let saves = try loaded.store.history(after: before)
        #expect(saves.count == 1)
        #expect(saves.first?.changes.map(\.globalID) == first + second, "one insert per record, in the order staged")
        #expect(saves.first?.changes.map(\.primaryKey) == notes.map(\.primaryKey))
        try context.save()
        #expect(try loaded.store.fetch(FetchRequest(entity: "Note")).count == 3, "nothing is written twice")
    }

    @Test func stagingChecksTheRecordsAndRollbackDropsThem() throws {
        let (coordinator, loaded) = try Self.coordinator()
        let context = coordinator.newContext()
        // A required value missing, a value of the wrong type, a count of IDs other than the rows', a constrained entity.
        #expect(throws: StoreError.self) {
            try context.insertWithoutObjects("Note", attributeValues: [[nil, nil]], globalIDs: [UUID()], into: loaded)
        }
        #expect(throws: StoreError.self) {
            try context.insertWithoutObjects("Note", attributeValues: [[.string("x"), .string("not a number")]],
                                             globalIDs: [UUID()], into: loaded)
        }
        #expect(throws: StoreError.self) {
            try context.insertWithoutObjects("Note", attributeValues: [[.string("x"), nil]], globalIDs: [], into: loaded)
        }
        #expect(throws: StoreError.self) {
            try context.insertWithoutObjects("Book", attributeValues: [[.string("t"), .string("isbn"), nil]],
                                             globalIDs: [UUID()], into: loaded)
        }
        #expect(!context.hasChanges, "nothing is staged by a refused call")

        try context.insertWithoutObjects("Note", attributeValues: [[.string("x"), nil]], globalIDs: [UUID()], into: loaded)
        context.rollback()
        #expect(!context.hasChanges)
        try context.save()
        #expect(try loaded.store.fetch(FetchRequest(entity: "Note")).isEmpty, "a rollback drops staged records")
    }

    /// Complete rows (every attribute's value, the defaults from `newRecordAttributeValues`) are stored as rows of
    /// optionals are: values converted to their attributes' types, the same checks, the same records.
    @Test func completeRowsAreStoredAsRowsOfOptionals() throws {
        let (coordinator, loaded) = try Self.coordinator()
        let context = coordinator.newContext()
        let note = try #require(coordinator.schema.entity(named: "Note"))
        #expect(note.newRecordAttributeValues == [.null, .integer64(7)])
        var converted = note.newRecordAttributeValues
        converted[0] = .string("b")
        converted[1] = .integer32(3)
        var defaulted = note.newRecordAttributeValues
        defaulted[0] = .string("a")
        let ids = [UUID(), UUID()]
        try context.insertWithoutObjects("Note", completeAttributeValues: [defaulted, converted], globalIDs: ids, into: loaded)
        try context.save()
        let notes = try loaded.store.fetch(FetchRequest(entity: "Note", sortDescriptors: [SortKey("text")]))
        #expect(notes.map(\.globalID) == ids)
        #expect(notes.map(\.attributes) == [[.string("a"), .integer64(7)], [.string("b"), .integer64(3)]])

        // The refusals of rows of optionals: a required value missing, a value of the wrong type, a row of another
        // length, a count of IDs other than the rows'.
        var wrongType = defaulted
        wrongType[1] = .string("not a number")
        for rows in [[note.newRecordAttributeValues], [wrongType], [[.string("x")]]] {
            #expect(throws: StoreError.self, "\(rows)") {
                try context.insertWithoutObjects("Note", completeAttributeValues: rows, globalIDs: [UUID()], into: loaded)
            }
        }
        #expect(throws: StoreError.self) {
            try context.insertWithoutObjects("Note", completeAttributeValues: [defaulted], globalIDs: [], into: loaded)
        }
        #expect(!context.hasChanges, "nothing is staged by a refused call")
    }
}
