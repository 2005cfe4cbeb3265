import Foundation
import StoreAPI
import StoreTestSupport
import Testing

/// The coordinator: loading and removing stores, finding them, and routing entities to stores by configuration,
/// through the in-memory backend.
@Suite struct StoreCoordinatorTests {
    /// Books and authors in configuration `Catalog`, notes in `Notes`.
    static func schema() throws -> Schema {
        try Schema(entities: [
            EntityDescription(name: "Author", attributes: [AttributeDescription(name: "name", type: .string)], relationships: [
                RelationshipDescription(name: "books", destination: "Book", inverse: "author", isToMany: true),
            ]),
            EntityDescription(name: "Book", attributes: [AttributeDescription(name: "title", type: .string)], relationships: [
                RelationshipDescription(name: "author", destination: "Author", inverse: "books"),
            ]),
            EntityDescription(name: "Note", attributes: [AttributeDescription(name: "text", type: .string)]),
        ], configurations: ["Catalog": ["Author", "Book"], "Notes": ["Note"]])
    }

    static func coordinator() throws -> StoreCoordinator {
        StoreCoordinator(schema: try schema(), registry: MemoryStores.registry)
    }

    static func memory(_ url: URL? = nil, configuration: String? = nil) -> StoreDescription {
        StoreDescription(url: url, type: InMemoryBackend.typeIdentifier, configuration: configuration)
    }

    /// `body`'s `StoreError`, or `nil` when it throws none.
    static func storeError(_ body: () throws -> Void) -> StoreError? {
        do { try body() } catch let error as StoreError { return error } catch { return nil }
        return nil
    }

    @Test func addedStoresAreListedInOrderAndFoundByIdentifierAndURL() throws {
        let coordinator = try Self.coordinator()
        let url = MemoryStores.newURL("named")
        defer { MemoryStores.destroy(url) }
        let anonymous = try coordinator.addStore(Self.memory())
        let named = try coordinator.addStore(Self.memory(url))
        #expect(coordinator.stores.map(\.identifier) == [anonymous.identifier, named.identifier])
        #expect(anonymous.identifier != named.identifier)
        #expect(coordinator.store(withIdentifier: named.identifier) === named)
        #expect(coordinator.store(withIdentifier: UUID()) == nil)
        #expect(coordinator.store(at: url) === named)
        #expect(coordinator.store(at: MemoryStores.newURL()) == nil)
        #expect(named.identifier == named.store.metadata.storeUUID)
    }

    @Test func aRemovedStoreIsGoneAndCannotBeRemovedTwice() throws {
        let coordinator = try Self.coordinator()
        let url = MemoryStores.newURL()
        defer { MemoryStores.destroy(url) }
        let loaded = try coordinator.addStore(Self.memory(url))
        try coordinator.removeStore(loaded)
        #expect(coordinator.stores.isEmpty)
        #expect(coordinator.store(at: url) == nil)
        #expect(loaded.invalidationReason != nil)
        #expect(Self.storeError { try coordinator.removeStore(loaded) }?.caseName == "refused")
        // The store itself survives its removal from the coordinator: it can be loaded again.
        let again = try coordinator.addStore(Self.memory(url))
        #expect(again.identifier == loaded.identifier)
    }

    @Test func theSameStoreIsNotLoadedTwice() throws {
        let coordinator = try Self.coordinator()
        let url = MemoryStores.newURL()
        defer { MemoryStores.destroy(url) }
        try coordinator.addStore(Self.memory(url))
        #expect(Self.storeError { try coordinator.addStore(Self.memory(url)) }?.caseName == "refused")
        #expect(coordinator.stores.count == 1)
    }

    @Test func aStoreWrittenWithAnotherSchemaIsRefused() throws {
        let url = MemoryStores.newURL()
        defer { MemoryStores.destroy(url) }
        let other = try Schema(entities: [
            EntityDescription(name: "Note", attributes: [AttributeDescription(name: "body", type: .string)]),
        ])
        try InMemoryBackend().open(at: url, options: StoreOptions(), creating: StoreMetadata(storeType: "memory", schema: other)).close()
        let coordinator = try Self.coordinator()
        let error = Self.storeError { try coordinator.addStore(Self.memory(url, configuration: "Notes")) }
        guard case .incompatibleSchema(_, let entities) = error else {
            Issue.record("expected incompatibleSchema, got \(String(describing: error))")
            return
        }
        #expect(entities == ["Note"])
        #expect(coordinator.stores.isEmpty)
    }

    @Test func unknownTypesAndConfigurationsAreRefused() throws {
        let coordinator = try Self.coordinator()
        let type = Self.storeError { try coordinator.addStore(StoreDescription(url: nil, type: "no-such-type")) }
        #expect(type?.caseName == "unknownStoreType")
        let configuration = Self.storeError { try coordinator.addStore(Self.memory(configuration: "Nope")) }
        #expect(configuration?.caseName == "unknownConfiguration")
        #expect(coordinator.stores.isEmpty)
    }

    @Test func entitiesAreRoutedToTheStoreOfTheirConfiguration() throws {
        let coordinator = try Self.coordinator()
        let catalog = try coordinator.addStore(Self.memory(configuration: "Catalog"))
        let notes = try coordinator.addStore(Self.memory(configuration: "Notes"))
        #expect(catalog.entityNames == ["Author", "Book"])
        #expect(notes.entityNames == ["Note"])
        #expect(try coordinator.store(for: "Book") === catalog)
        #expect(try coordinator.store(for: "Note") === notes)
        #expect(coordinator.stores(for: "Author").map(\.identifier) == [catalog.identifier])

        let context = coordinator.newContext()
        let book = try context.insert("Book", ["title": "Left Hand"])
        let note = try context.insert("Note", ["text": "read it"])
        #expect(book.loadedStore === catalog)
        #expect(note.loadedStore === notes)
        try context.save()
        #expect(try catalog.store.count(FetchRequest(entity: "Book")) == 1)
        #expect(try notes.store.count(FetchRequest(entity: "Note")) == 1)
        #expect(notes.store.metadata.schema.entity(named: "Book") != nil, "the schema is whole; only the routing differs")
        #expect(try context.fetch(FetchRequest(entity: "Note")).map { try $0.value(forKey: "text") } == [.string("read it")])
    }

    @Test func anEntityInSeveralStoresGoesToTheFirstUnlessAStoreIsNamed() throws {
        let coordinator = try Self.coordinator()
        let first = try coordinator.addStore(Self.memory())
        let second = try coordinator.addStore(Self.memory(configuration: "Notes"))
        #expect(coordinator.stores(for: "Note").map(\.identifier) == [first.identifier, second.identifier])
        let context = coordinator.newContext()
        #expect(try context.insert("Note").loadedStore === first)
        #expect(try context.insert("Note", into: second).loadedStore === second)
        try context.save()
        #expect(try first.store.count(FetchRequest(entity: "Note")) == 1)
        #expect(try second.store.count(FetchRequest(entity: "Note")) == 1)
        #expect(try context.count(FetchRequest(entity: "Note")) == 2, "a fetch reads every store holding the entity")
    }

    @Test func storeForAnEntityNobodyHoldsOrNobodyKnowsThrows() throws {
        let coordinator = try Self.coordinator()
        #expect(Self.storeError { _ = try coordinator.store(for: "Book") }?.caseName == "noStoreForEntity")
        try coordinator.addStore(Self.memory(configuration: "Notes"))
        #expect(Self.storeError { _ = try coordinator.store(for: "Book") }?.caseName == "noStoreForEntity")
        #expect(coordinator.stores(for: "Book").isEmpty)
        #expect(Self.storeError { _ = try coordinator.store(for: "Nothing") }?.caseName == "unknownEntity")
        #expect(Self.storeError { _ = try coordinator.newContext().insert("Book") }?.caseName == "noStoreForEntity")
    }

    @Test func objectsOfARemovedStoreCannotBeSaved() throws {
        let coordinator = try Self.coordinator()
        let loaded = try coordinator.addStore(Self.memory())
        let context = coordinator.newContext()
        let note = try context.insert("Note", ["text": "orphan"])
        try coordinator.removeStore(loaded)
        #expect(Self.storeError { try context.save() }?.caseName == "objectInvalidated")
        #expect(note.loadedStore.invalidationReason != nil)
    }
}
