import Foundation
import StoreAPI
import StoreTestSupport
import Testing

/// The transfer engine between in-memory stores: records keep their keys, global IDs and relationships, history and
/// metadata come along, progress is reported, and a transfer that fails or is cancelled leaves no destination.
@Suite struct StoreTransferTests {
    struct Cancel: Error {}

    /// A named in-memory store with an owner, four samples (the one with the highest key was deleted: the key it
    /// returns), history and custom metadata; destroyed by the caller.
    static func sourceWithDeletedKey() throws -> (url: URL, deletedKey: Int64) {
        let url = MemoryStores.newURL("source")
        try InMemoryBackend().open(at: url, options: StoreOptions(historyTracking: true), creating: StoreMetadata(
            storeType: "memory", schema: EdgeFixtures.schema, custom: ["app": .string("transfer"), "n": .integer(7)])).close()
        let coordinator = StoreCoordinator(schema: EdgeFixtures.schema, registry: MemoryStores.registry)
        var description = StoreDescription(url: url, type: InMemoryBackend.typeIdentifier)
        description.options.historyTracking = true
        let loaded = try coordinator.addStore(description)
        let context = coordinator.newContext()
        context.author = "fixture"
        let owner = try context.insert("Owner", ["name": "o"])
        for i in 0..<5 { try owner.addObject(try context.insert("Sample", ["name": .string("s\(i)"), "i32": .integer32(Int32(i))]), forKey: "samples") }
        try context.save()
        // The last key handed out is deleted: a copy must not hand it out again.
        let last = try #require(try context.fetch("Sample", where: "name == %@", "s4").first)
        try context.delete(last)
        try context.save()
        try coordinator.removeStore(loaded)
        return (url, last.objectID.primaryKey)
    }

    static func source() throws -> URL { try sourceWithDeletedKey().url }

    /// An empty destination with the source's metadata, as the store operations create it.
    static func emptyCopy(of source: any PersistentStore) throws -> any PersistentStore {
        try InMemoryBackend().open(at: nil, options: StoreOptions(), creating: source.metadata)
    }

    static func byGlobalID(_ store: any PersistentStore) throws -> [UUID: Record] {
        Dictionary(uniqueKeysWithValues: try allRecords(of: store).map { ($0.globalID, $0) })
    }

    @Test func aCopyKeepsKeysGlobalIDsRelationshipsAndHistory() throws {
        let (url, deletedKey) = try Self.sourceWithDeletedKey()
        defer { MemoryStores.destroy(url) }
        let source = try MemoryStores.open(url, readOnly: true)
        let destination = try Self.emptyCopy(of: source)
        try StoreTransfer(batchSize: 2).copy(from: source, to: destination)

        let before = try Self.byGlobalID(source)
        #expect(before.count == 5, "the fixture: an owner and four samples")
        #expect(try Self.byGlobalID(destination) == before)
        #expect(try destination.history(after: nil) == (try source.history(after: nil)))
        #expect(try source.history(after: nil).count == 2)
        let differences = try StoreComparison().compare(source, destination)
        #expect(differences.isIdentical, "\(differences.summary)")
        #expect(before.values.allSatisfy { $0.primaryKey < deletedKey || $0.entity != "Sample" })
        // The key of the deleted record is not handed out again in the copy.
        let next = try destination.allocatePrimaryKeys(root: "Thing", count: 1)
        #expect(next > deletedKey)
    }

    @Test(arguments: [1, 2, 3, 100])
    func progressCountsUpToTheTotal(batchSize: Int) throws {
        let url = try Self.source()
        defer { MemoryStores.destroy(url) }
        let source = try MemoryStores.open(url, readOnly: true)
        var reports: [TransferProgress] = []
        try StoreTransfer(batchSize: batchSize) { reports.append($0) }.copy(from: source, to: try Self.emptyCopy(of: source))
        let total = try StoreTransfer.countRecords(source)
        #expect(total == 5)
        #expect(!reports.isEmpty)
        #expect(reports.allSatisfy { $0.recordsTotal == total })
        #expect(reports.last?.recordsDone == total)
        #expect(zip(reports, reports.dropFirst()).allSatisfy { $0.recordsDone <= $1.recordsDone })
        #expect(reports.count >= (total + batchSize - 1) / batchSize, "at least one report per page")
    }

    @Test func aCancelledCopyLeavesNoDestinationAndTheSourceAsItWas() throws {
        let url = try Self.source()
        defer { MemoryStores.destroy(url) }
        let destination = MemoryStores.newURL("copy")
        defer { MemoryStores.destroy(destination) }
        let before = try Self.byGlobalID(try MemoryStores.open(url, readOnly: true))
        var reports = 0
        let options = StoreOperations.CopyOptions(batchSize: 1, progress: { _ in
            reports += 1
            if reports == 2 { throw Cancel() }
        }, allowFastCopy: false)
        #expect(throws: StoreError.self) {
            try StoreOperations(registry: MemoryStores.registry).copyStore(from: url, to: destination, options: options)
        }
        #expect(reports == 2, "the copy stopped at the cancelling report")
        #expect(InMemoryBackend().sniff(destination) == .none, "nothing is left at the destination")
        #expect(try Self.byGlobalID(try MemoryStores.open(url, readOnly: true)) == before)
    }

    @Test func aCompletedCopyIsTheSameStoreUnderAnotherURL() throws {
        let url = try Self.source()
        defer { MemoryStores.destroy(url) }
        let destination = MemoryStores.newURL("copy")
        defer { MemoryStores.destroy(destination) }
        let metadata = try StoreOperations(registry: MemoryStores.registry).copyStore(
            from: url, to: destination, options: StoreOperations.CopyOptions(batchSize: 2, allowFastCopy: false))
        let source = try MemoryStores.open(url, readOnly: true)
        let copy = try MemoryStores.open(destination, readOnly: true)
        #expect(metadata.storeUUID == source.metadata.storeUUID)
        #expect(copy.metadata.custom["app"] == .string("transfer"))
        #expect(copy.metadata.custom["n"] == .integer(7))
        #expect(try Self.byGlobalID(copy) == (try Self.byGlobalID(source)))
        #expect(try copy.history(after: nil) == (try source.history(after: nil)))
    }

    @Test func migratingALoadedStoreKeepsIdentitiesMetadataAndHistory() throws {
        let url = try Self.source()
        defer { MemoryStores.destroy(url) }
        let target = MemoryStores.newURL("migrated")
        defer { MemoryStores.destroy(target) }
        let coordinator = StoreCoordinator(schema: EdgeFixtures.schema, registry: MemoryStores.registry)
        let loaded = try coordinator.addStore(StoreDescription(url: url, type: InMemoryBackend.typeIdentifier))
        let context = coordinator.newContext()
        let sample = try #require(try context.fetch("Sample", where: "name == %@", "s1").first)
        let records = try Self.byGlobalID(loaded.store)
        let history = try loaded.store.history(after: nil)

        let migrated = try coordinator.migrateStore(loaded, to: target)
        #expect(coordinator.stores.map(\.identifier) == [migrated.identifier])
        #expect(migrated.url == target)
        #expect(migrated.identifier == loaded.identifier, "the store UUID carries over")
        #expect(loaded.invalidationReason != nil)
        #expect(migrated.store.metadata.custom["app"] == .string("transfer"))
        #expect(try Self.byGlobalID(migrated.store) == records)
        #expect(try migrated.store.history(after: nil) == history)
        let again = try #require(try coordinator.newContext().fetch("Sample", where: "name == %@", "s1").first)
        #expect(again.objectID == sample.objectID, "object IDs carry over")
        #expect(InMemoryBackend().sniff(url) == .store, "the source is left in place")
    }

    @Test func aRefusedMigrationLeavesTheSourceLoadedAndTheDestinationAsItWas() throws {
        let url = try Self.source()
        defer { MemoryStores.destroy(url) }
        let target = MemoryStores.newURL("occupied")
        defer { MemoryStores.destroy(target) }
        let occupant = try InMemoryBackend().open(at: target, options: StoreOptions(), creating: StoreMetadata(
            storeType: "memory", schema: EdgeFixtures.schema))
        try occupant.close()
        let coordinator = StoreCoordinator(schema: EdgeFixtures.schema, registry: MemoryStores.registry)
        let loaded = try coordinator.addStore(StoreDescription(url: url, type: InMemoryBackend.typeIdentifier))
        var error: StoreError?
        do { try coordinator.migrateStore(loaded, to: target) } catch let e as StoreError { error = e }
        #expect(error?.caseName == "storeExists", "an existing destination is refused, never merged")
        #expect(try InMemoryBackend().readMetadata(at: target).storeUUID == occupant.metadata.storeUUID)
        #expect(try MemoryStores.open(target, readOnly: true).count(FetchRequest(entity: "Thing")) == 0)
        #expect(coordinator.stores.map(\.identifier) == [loaded.identifier])
        #expect(loaded.invalidationReason == nil)
        #expect(try coordinator.newContext().count(FetchRequest(entity: "Sample")) == 4, "the source still holds its records")
    }
}
