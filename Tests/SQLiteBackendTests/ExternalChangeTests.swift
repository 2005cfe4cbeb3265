import Foundation
import SQLiteBackend
import StoreAPI
import StoreTestSupport
import Testing

/// Saves made through another coordinator on the same files (as another process makes them) are found by
/// `checkForExternalChanges()` through SQLite's `data_version`, without reading a record.
@Suite struct ExternalChangeTests {
    static let registry = BackendRegistry(backends: [SQLiteStoreBackend()])

    static func open(_ url: URL) throws -> StoreCoordinator {
        let schema = try Schema(entities: [
            EntityDescription(name: "Note", attributes: [AttributeDescription(name: "text", type: .string, isOptional: true)]),
        ])
        let coordinator = StoreCoordinator(schema: schema, registry: registry)
        try coordinator.addStore(StoreDescription(url: url, type: "sqlite"))
        return coordinator
    }

    @Test("Another connection's save is found once; this coordinator's own saves are not reported again")
    func probeFindsOtherWriters() throws {
        let dir = try TemporaryDirectory("external-changes")
        let url = dir.path("notes.sqlite")
        let watcher = try Self.open(url)
        let other = try Self.open(url)
        #expect(try watcher.checkForExternalChanges().isEmpty, "the first check notes where the store stands")

        let own = watcher.newContext()
        let note = try own.insert("Note", ["text": "mine"])
        try own.save()
        #expect(try watcher.checkForExternalChanges().isEmpty, "its own save was reported when it committed")

        let merging = watcher.newContext()
        merging.automaticallyMergesChanges = true
        let seen = try merging.object(with: note.objectID)

        let writer = other.newContext()
        try writer.object(with: note.objectID).setValue("theirs", forKey: "text")
        try writer.save()
        let found = try watcher.checkForExternalChanges()
        #expect(found.count == 1 && found.first?.origin == .otherProcess && found.first?.isComplete == false)
        #expect(try watcher.checkForExternalChanges().isEmpty, "a change is reported once")

        merging.mergeChanges()
        #expect(try seen.value(forKey: "text") == "theirs")
    }
}
