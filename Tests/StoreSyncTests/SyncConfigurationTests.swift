import Foundation
import StoreAPI
import StoreSync
import StoreTestSupport
import Testing

/// Only the entities of a store's configuration sync (Core Data's "Cloud" and "Local" configurations).
@Suite("Sync configurations")
struct SyncConfigurationTests {
    static let schema: Schema = {
        do {
            return try Schema(entities: [
                EntityDescription(name: "Note", attributes: [AttributeDescription(name: "title", type: .string)]),
                EntityDescription(name: "Draft", attributes: [AttributeDescription(name: "text", type: .string)]),
            ], configurations: ["Cloud": ["Note"], "Local": ["Draft"]])
        } catch {
            preconditionFailure("the configuration test schema is invalid: \(error)")
        }
    }()

    /// A device: a synced Cloud store and an unsynced Local store in one coordinator.
    private func device(_ dir: TemporaryDirectory, _ name: String, remote: any SyncRemote) throws -> (StoreCoordinator, SyncEngine) {
        let coordinator = StoreCoordinator(schema: Self.schema, registry: SyncFixtures.registry)
        var cloud = StoreDescription(url: dir.path("\(name)-cloud.sqlite"), type: "sqlite", configuration: "Cloud",
                                     syncOptions: SyncFixtures.options)
        cloud.options.historyTracking = true
        let loaded = try coordinator.addStore(cloud)
        var local = StoreDescription(url: dir.path("\(name)-local.lmdb"), type: "lmdb", configuration: "Local")
        local.options.historyTracking = true
        try coordinator.addStore(local)
        return (coordinator, try SyncEngine(store: loaded, coordinator: coordinator, remote: remote))
    }

    @Test func onlyTheConfigurationsEntitiesSync() async throws {
        let dir = try TemporaryDirectory("sync-configurations")
        let remote = InMemoryRemote()
        let (a, engineA) = try device(dir, "a", remote: remote)
        let (b, engineB) = try device(dir, "b", remote: remote)
        let c = a.newContext()
        try c.insert("Note", ["title": "shared"])
        try c.insert("Draft", ["text": "stays on this device"])
        try c.save()
        let pushed = try await engineA.sync()
        #expect(pushed.pushedRecords == 1)
        let pulled = try await engineB.sync()
        #expect(pulled.insertedRecords == 1)
        #expect(try b.newContext().count(FetchRequest(entity: "Note")) == 1)
        #expect(try b.newContext().count(FetchRequest(entity: "Draft")) == 0)

        // A peer that syncs every entity (no configuration): its drafts are ignored by the Cloud stores.
        let everything = StoreCoordinator(schema: Self.schema, registry: SyncFixtures.registry)
        var all = StoreDescription(url: dir.path("all.sqlite"), type: "sqlite", syncOptions: SyncFixtures.options)
        all.options.historyTracking = true
        let loaded = try everything.addStore(all)
        let e = everything.newContext()
        try e.insert("Draft", ["text": "from a peer without configurations"])
        try e.save()
        _ = try await SyncEngine(store: loaded, coordinator: everything, remote: remote).sync()
        let ignoring = try await engineB.sync()
        #expect(ignoring.ignoredChanges == 1 && ignoring.insertedRecords == 0)
        #expect(try b.newContext().count(FetchRequest(entity: "Draft")) == 0)
    }
}
