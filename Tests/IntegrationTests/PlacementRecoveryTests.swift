import Foundation
import LMDBBackend
import SQLiteBackend
@_spi(BackendKit) import StoreAPI
import StoreTestSupport
import Testing
import XMLBackend

/// A copy, convert, replace or restore killed while placing its new store leaves the old one renamed aside and
/// nothing at its path. The next operation on that path, and the next open, must find the old store there — not
/// clear it away as stale staging, and not create an empty store in its place.
@Suite struct PlacementRecoveryTests {
    static func schema() throws -> Schema {
        try Schema(entities: [EntityDescription(name: "Note", attributes: [AttributeDescription(name: "n", type: .integer64)])])
    }

    /// A store of `type` at `url` with `count` records, closed.
    static func makeStore(_ type: String, at url: URL, count: Int) throws -> Set<UUID> {
        let schema = try schema()
        let store = try Backends.create(type, at: url, schema: schema)
        let entity = try schema.requireEntity("Note")
        let first = try store.allocatePrimaryKeys(root: "Note", count: count)
        let records = (0..<count).map { i -> Record in
            var r = entity.newRecord(primaryKey: first + Int64(i))
            r.attributes = [.integer64(Int64(i))]
            return r
        }
        try store.save(StoreChanges(inserted: records))
        try store.close()
        return Set(records.map(\.globalID))
    }

    /// Renames every file of the store at `url` aside exactly as a placement does before it moves the new store in,
    /// which is where a kill leaves them.
    static func setAside(_ url: URL, type: String) throws {
        let backend = try Backends.registry.backend(for: type)
        let prefix = AtomicFile.stagingURL(for: url).lastPathComponent + "-old-"
        // Only what sits beside the store (an LMDB store's directory, not the files in it), as a placement does.
        let files = backend.ownedFiles(ofStoreAt: url).filter {
            $0.deletingLastPathComponent().standardizedFileURL == url.deletingLastPathComponent().standardizedFileURL
        }
        #expect(!files.isEmpty)
        for file in files {
            try FileManager.default.moveItem(at: file, to: file.deletingLastPathComponent().appendingPathComponent(prefix + file.lastPathComponent))
        }
        #expect(!FileManager.default.fileExists(atPath: url.path))
    }

    static func globalIDs(at url: URL) throws -> Set<UUID> {
        let store = try Backends.open(url, readOnly: true)
        defer { try? store.close() }
        return Set(try allRecords(of: store).map(\.globalID))
    }

    @Test(arguments: Backends.persistentTypes)
    func aCopyWithoutReplacingFindsTheStoreThatWasSetAside(_ type: String) throws {
        let dir = try TemporaryDirectory("placement-recovery")
        let url = dir.path("dest.\(type)")
        let old = try Self.makeStore(type, at: url, count: 20)
        let other = try Self.makeStore(type, at: dir.path("other.\(type)"), count: 3)
        try Self.setAside(url, type: type)

        let operations = StoreOperations(registry: Backends.registry)
        #expect(throws: StoreError.self) {
            try operations.copyStore(from: dir.path("other.\(type)"), to: url, type: type)
        }
        #expect(try Self.globalIDs(at: url) == old, "the store set aside is back, whole")
        #expect(try Self.globalIDs(at: dir.path("other.\(type)")) == other)

        // Replacing it now is what the user asks for, and leaves no aside file behind.
        try operations.replaceStore(at: url, with: dir.path("other.\(type)"))
        #expect(try Self.globalIDs(at: url) == other)
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: dir.url.path).filter { $0.contains("-old-") }
        #expect(leftovers.isEmpty, "aside files left: \(leftovers)")
    }

    @Test(arguments: Backends.persistentTypes)
    func anOpenFindsTheStoreThatWasSetAside(_ type: String) throws {
        let dir = try TemporaryDirectory("placement-recovery")
        let url = dir.path("app.\(type)")
        let old = try Self.makeStore(type, at: url, count: 12)
        try Self.setAside(url, type: type)

        let coordinator = StoreCoordinator(schema: try Self.schema(), registry: Backends.registry)
        let loaded = try coordinator.addStore(StoreDescription(url: url, type: type))
        let context = coordinator.newContext()
        #expect(try context.count(FetchRequest(entity: "Note")) == old.count,
                "an empty store was created instead of the one set aside")
        try coordinator.removeStore(loaded)
        #expect(try Self.globalIDs(at: url) == old)
    }

    @Test(arguments: Backends.persistentTypes)
    func relocateFindsTheStoreThatWasSetAsideAtItsDestination(_ type: String) throws {
        let dir = try TemporaryDirectory("placement-recovery")
        let new = dir.path("new.\(type)")
        let old = dir.path("old.\(type)")
        let destination = try Self.makeStore(type, at: new, count: 7)
        _ = try Self.makeStore(type, at: old, count: 4)
        try Self.setAside(new, type: type)

        // Two different stores at the two paths: relocate refuses rather than replacing the one it found aside.
        #expect(throws: StoreError.self) {
            try StoreOperations(registry: Backends.registry).relocateStore(from: old, to: new)
        }
        #expect(try Self.globalIDs(at: new) == destination)
    }
}
