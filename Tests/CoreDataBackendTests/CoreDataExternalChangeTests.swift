import CoreDataBackend
import Foundation
import StoreAPI
import StoreTestSupport
import Testing

/// Other writers' saves to a Core Data store are found by SQLite's `data_version` and, where the store keeps
/// history, reported with the records they changed, once each; without history, as a change of unknown records.
@Suite struct CoreDataExternalChangeTests {
    @Test func otherWritersAreFoundThroughHistory() throws {
        let dir = try TemporaryDirectory("coredata-external-changes")
        defer { dir.remove() }
        let url = dir.path("Library.sqlite")
        let schema = try CoreDataWriteTests.schema()
        let registry = BackendRegistry(backends: [CoreDataStoreBackend()])
        func open() throws -> StoreCoordinator {
            let coordinator = StoreCoordinator(schema: schema, registry: registry)
            try coordinator.addStore(StoreDescription(url: url, type: "coredata", options: StoreOptions(historyTracking: true)))
            return coordinator
        }
        let watcher = try open()
        let seed = watcher.newContext()
        let author = try seed.insert("Author", ["name": .string("Ada")])
        try seed.save()
        #expect(try watcher.checkForExternalChanges().isEmpty, "the first check notes where the history stands")

        let other = try open()
        let writer = other.newContext()
        try writer.object(with: author.objectID).setValue(.string("Ada Lovelace"), forKey: "name")
        let book = try writer.insert("Book", ["title": .string("Notes")])
        try writer.save()

        let found = try watcher.checkForExternalChanges()
        try #require(found.count == 1)
        #expect(found[0].isComplete && found[0].origin == .otherProcess)
        #expect(found[0].updated == [author.objectID] && found[0].inserted == [book.objectID])
        #expect(found[0].entities.isSuperset(of: ["Author", "Book"]))
        #expect(try watcher.checkForExternalChanges().isEmpty, "a change is reported once")
    }

    /// An app's store watched read-only and without history (as a dashboard or a Linux tool would): the app's save
    /// is found, the watcher's next fetch sees it, and the store's files are not changed by watching.
    @Test func otherWritersAreFoundByProbingWithoutHistory() throws {
        let dir = try TemporaryDirectory("coredata-external-probe")
        defer { dir.remove() }
        let url = dir.path("Library.sqlite")
        let schema = try CoreDataWriteTests.schema()
        let registry = BackendRegistry(backends: [CoreDataStoreBackend()])
        let app = StoreCoordinator(schema: schema, registry: registry)
        try app.addStore(StoreDescription(url: url, type: "coredata"))
        let appContext = app.newContext()
        _ = try appContext.insert("Author", ["name": .string("Ada")])
        try appContext.save()

        let watcher = StoreCoordinator(schema: schema, registry: registry)
        try watcher.addStore(StoreDescription(url: url, type: "coredata", options: StoreOptions(isReadOnly: true)))
        #expect(try watcher.checkForExternalChanges().isEmpty, "the first check notes where the store stands")
        #expect(try watcher.checkForExternalChanges().isEmpty, "nothing changed")

        _ = try appContext.insert("Author", ["name": .string("Grace")])
        try appContext.save()
        let found = try watcher.checkForExternalChanges()
        #expect(found.count == 1 && found.allSatisfy { $0.origin == .otherProcess && !$0.isComplete }, "\(found)")
        #expect(try watcher.checkForExternalChanges().isEmpty, "a change is reported once")
        let reader = watcher.newContext()
        let names = try reader.fetch(FetchRequest(entity: "Author")).compactMap { try $0.value(forKey: "name").stringValue }
        #expect(Set(names) == ["Ada", "Grace"])
    }
}
