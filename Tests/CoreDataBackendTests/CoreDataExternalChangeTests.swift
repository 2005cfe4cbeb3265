import CoreDataBackend
import Foundation
import StoreAPI
import StoreTestSupport
import Testing

/// A store that cannot probe for changes (`coredata` keeps no counter to ask) has other writers' saves found
/// through its history: with the records they changed, once each.
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
}
