import Foundation
import JSONStoreBackend
import StoreAPI
import StoreConformance

/// A temporary directory for one test, removed when the test ends.
final class TemporaryDirectory {
    let url: URL

    init() throws {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("json-backend-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(at: url) }

    func file(_ name: String) -> URL { url.appendingPathComponent(name) }
}

/// Creates a JSON store at `url` holding `tags` tags and an author, through the coordinator as an app would; with
/// `history`, two history transactions (inserts, then the delete of a third tag).
func makeStore(at url: URL, backend: JSONStoreBackend = JSONStoreBackend(), tags: Int = 3, history: Bool = false) throws {
    let coordinator = StoreCoordinator(schema: try ConformanceSchema.make(), registry: BackendRegistry(backends: [backend]))
    let options = StoreOptions(historyTracking: history)
    try coordinator.addStore(StoreDescription(url: url, type: JSONStoreBackend.typeIdentifier, options: options))
    let context = coordinator.newContext()
    for i in 0..<tags { try context.insert("Tag", ["name": .string("tag \(i)")]) }
    try context.insert("Author", ["name": "Ann", "country": "NZ"])
    if history {
        // A second transaction, with a tombstone.
        let doomed = try context.insert("Tag", ["name": "doomed"])
        try context.save()
        try context.delete(doomed)
    }
    try context.save()
    for store in coordinator.stores { try coordinator.removeStore(store) }
}

/// Opens the store at `url` directly through the backend, as operations and tools do.
func openStore(at url: URL, backend: JSONStoreBackend = JSONStoreBackend(), readOnly: Bool = true) throws -> any PersistentStore {
    try backend.open(at: url, options: StoreOptions(isReadOnly: readOnly, createIfMissing: false), creating: nil)
}
