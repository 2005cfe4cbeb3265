import Foundation
import Logging
@_spi(BackendKit) import StoreAPI
@testable import StoreSync
import StoreTestSupport
import Testing

/// The write-ups' scenarios (MISSION.md, "What goes wrong today"), each a test named for it.
@Suite("Sync scenarios")
struct SyncScenarioTests {
    /// Three authors with a book each, the book tagged.
    private func seed(_ r: Replica) throws -> [UUID] {
        let c = r.context()
        var ids: [UUID] = []
        let tag = try c.insert("Tag", ["name": "classic"])
        for (i, name) in ["Le Guin", "Lem", "Tiptree"].enumerated() {
            let a = try c.insert("Author", ["name": .string(name), "born": .integer32(Int32(1920 + i))])
            let b = try c.insert("Book", ["title": .string("Book \(i)"), "pages": .integer64(Int64(100 * (i + 1)))])
            try b.setObject(a, forKey: "author")
            try b.addObject(tag, forKey: "tags")
            ids.append(a.globalID)
        }
        try c.save()
        return ids
    }

    @Test(arguments: SyncFixtures.remoteKinds)
    func turningSyncOnForExistingDataPushesItExactlyOnce(remote kind: RemoteKind) async throws {
        let dir = try TemporaryDirectory("sync-attach")
        let remote = try kind.make()
        // Data written before sync was ever turned on (no history of it).
        do {
            let coordinator = StoreCoordinator(schema: SyncFixtures.schema, registry: SyncFixtures.registry)
            let store = try coordinator.addStore(StoreDescription(url: dir.path("a.sqlite"), type: "sqlite"))
            let c = coordinator.newContext()
            for i in 0..<10 { try c.insert("Author", ["name": .string("author \(i)")]) }
            try c.save()
            try coordinator.removeStore(store)
        }
        let a = try Replica(dir.path("a.sqlite"), type: "sqlite", remote: remote)
        let first = try await a.sync()
        #expect(first.attached)
        #expect(first.pushedRecords == 10)
        let files = try await SyncFixtures.fileCount(remote)
        let again = try await a.sync()
        #expect(again.pushedRecords == 0, "nothing is pushed twice")
        #expect(try await SyncFixtures.fileCount(remote) == files)

        let b = try Replica(dir.path("b.lmdb"), type: "lmdb", remote: remote)
        let pulled = try await b.sync()
        #expect(pulled.insertedRecords == 10)
        #expect(pulled.pushedRecords == 0, "what it pulled is not pushed back")
        #expect(try a.differences(from: b).isIdentical)
        let a3 = try await a.sync()
        #expect(a3.insertedRecords == 0 && a3.updatedRecords == 0)
    }

    @Test(arguments: SyncFixtures.remoteKinds)
    func secondDeviceHoldingTheSameRecordsAttachesWithoutDuplicates(remote kind: RemoteKind) async throws {
        let dir = try TemporaryDirectory("sync-second-device")
        let remote = try kind.make()
        let a = try Replica(dir.path("a.sqlite"), type: "sqlite", remote: remote)
        _ = try seed(a)
        // The second device starts from a backup of the same store: the same records, the same global IDs.
        _ = try a.coordinator.backupStore(a.loaded, to: dir.path("backup.sqlite"))
        _ = try SyncFixtures.registry.backend(for: "sqlite")
        try StoreOperations(registry: SyncFixtures.registry).copyStore(from: dir.path("backup.sqlite"), to: dir.path("b.xml"), type: "xml")
        let first = try await a.sync()
        let b = try Replica(dir.path("b.xml"), type: "xml", remote: remote)
        let report = try await b.sync()
        #expect(report.pushedRecords == 0, "the remote already has every value")
        #expect(report.insertedRecords == 0)
        #expect(report.attached && report.peer != first.peer)
        #expect(try b.count("Author") == 3 && b.count("Book") == 3 && b.count("Tag") == 1)
        #expect(try a.differences(from: b).isIdentical)
        // And changes still flow both ways.
        let tag = try b.insert("Tag", ["name": "new"])
        try await b.sync()
        try await a.sync()
        #expect(try a.value(tag, "name") == .string("new"))
        #expect(try a.count("Author") == 3)
    }

    @Test(arguments: SyncFixtures.remoteKinds)
    func relocatedStoreKeepsSyncStateAndReuploadsNothing(remote kind: RemoteKind) async throws {
        let dir = try TemporaryDirectory("sync-relocate")
        let remote = try kind.make()
        _ = try dir.directory("old")
        _ = try dir.directory("shared")
        let a = try Replica(dir.path("old/a.sqlite"), type: "sqlite", remote: remote)
        _ = try seed(a)
        let before = try await a.sync()
        let files = try await SyncFixtures.fileCount(remote)
        try a.coordinator.relocateStore(from: dir.path("old/a.sqlite"), to: dir.path("shared/a.sqlite"))
        try a.adopt(try #require(a.coordinator.store(at: dir.path("shared/a.sqlite"))))
        let after = try await a.sync()
        #expect(after.pushedRecords == 0)
        #expect(!after.becameNewPeer && after.peer == before.peer, "a moved store stays the same peer")
        #expect(try await SyncFixtures.fileCount(remote) == files)
    }

    /// The App Group move: the store is relocated, the old container is emptied, and a change made before the move
    /// but not yet pushed must still reach the other peers. The per-record sync state beside the store moves with
    /// it; a destroy removes it.
    @Test(arguments: SyncFixtures.remoteKinds)
    func relocatedStoreWhoseOldFolderIsRemovedKeepsItsUnpushedChanges(remote kind: RemoteKind) async throws {
        let dir = try TemporaryDirectory("sync-relocate-rm")
        let remote = try kind.make()
        _ = try dir.directory("old")
        _ = try dir.directory("shared")
        let a = try Replica(dir.path("old/a.sqlite"), type: "sqlite", remote: remote)
        let authors = try seed(a)
        try await a.sync()
        let b = try Replica(dir.path("b.sqlite"), type: "sqlite", remote: remote)
        try await b.sync()
        try a.update(authors[0]) { o, _ in try o.setValue(.string("Ursula K. Le Guin"), forKey: "name") }

        let oldLog = StoreCompanionFiles.syncStateLog(beside: dir.path("old/a.sqlite"))
        let newLog = StoreCompanionFiles.syncStateLog(beside: dir.path("shared/a.sqlite"))
        #expect(FileManager.default.fileExists(atPath: oldLog.path))
        try a.coordinator.backupStore(a.loaded, to: dir.path("backup.sqlite"))
        #expect(FileManager.default.fileExists(atPath: StoreCompanionFiles.syncStateLog(beside: dir.path("backup.sqlite")).path),
                "a backup carries the log")
        try a.coordinator.relocateStore(from: dir.path("old/a.sqlite"), to: dir.path("shared/a.sqlite"))
        #expect(!FileManager.default.fileExists(atPath: oldLog.path), "the log left the old folder with the store")
        #expect(FileManager.default.fileExists(atPath: newLog.path))
        try FileManager.default.removeItem(at: dir.path("old"))
        try a.adopt(try #require(a.coordinator.store(at: dir.path("shared/a.sqlite"))))

        let after = try await a.sync()
        #expect(!after.becameNewPeer)
        try await b.sync()
        #expect(try a.value(authors[0], "name") == .string("Ursula K. Le Guin"))
        #expect(try b.value(authors[0], "name") == .string("Ursula K. Le Guin"))
        #expect(try a.differences(from: b).isIdentical)

        try a.coordinator.destroyStore(at: dir.path("shared/a.sqlite"))
        #expect(!FileManager.default.fileExists(atPath: newLog.path), "destroy removes the log beside the store")
    }

    @Test(arguments: SyncFixtures.remoteKinds)
    func convertedStoreKeepsSyncStateReuploadsNothingAndBecomesANewPeer(remote kind: RemoteKind) async throws {
        let dir = try TemporaryDirectory("sync-convert")
        let remote = try kind.make()
        let a = try Replica(dir.path("a.sqlite"), type: "sqlite", remote: remote)
        let authors = try seed(a)
        let before = try await a.sync()
        let files = try await SyncFixtures.fileCount(remote)
        // Core Data's migratePersistentStore is where every record used to be uploaded again.
        let migrated = try a.coordinator.migrateStore(a.loaded, to: dir.path("a.lmdb"), type: "lmdb")
        try a.adopt(migrated)
        let after = try await a.sync()
        #expect(after.pushedRecords == 0)
        #expect(try await SyncFixtures.fileCount(remote) == files)
        #expect(after.becameNewPeer && after.peer != before.peer, "the original still exists: the copy is a new peer")

        // The original, opened again, and the converted store both keep syncing without duplicates.
        let original = try Replica(dir.path("a.sqlite"), type: "sqlite", remote: remote)
        try original.update(authors[0]) { o, _ in try o.setValue(.string("Ursula K. Le Guin"), forKey: "name") }
        let o1 = try await original.sync()
        #expect(!o1.becameNewPeer && o1.peer == before.peer)
        try a.update(authors[1]) { o, _ in try o.setValue(.string("Stanisław Lem"), forKey: "name") }
        try await a.sync()
        try await original.sync()
        #expect(try a.count("Author") == 3 && original.count("Author") == 3)
        #expect(try a.differences(from: original).isIdentical)
    }

    @Test(arguments: SyncFixtures.remoteKinds)
    func copyOfASyncedStoreBecomesANewPeer(remote kind: RemoteKind) async throws {
        let dir = try TemporaryDirectory("sync-copy")
        let remote = try kind.make()
        let a = try Replica(dir.path("a.sqlite"), type: "sqlite", remote: remote)
        let authors = try seed(a)
        let first = try await a.sync()
        // The same store UUID at another place: a copy (a backup restored on another machine looks the same).
        try StoreOperations(registry: SyncFixtures.registry).copyStore(from: dir.path("a.sqlite"), to: dir.path("copy.sqlite"))
        let copy = try Replica(dir.path("copy.sqlite"), type: "sqlite", remote: remote)
        #expect(copy.loaded.store.metadata.storeUUID == a.loaded.store.metadata.storeUUID)
        try copy.update(authors[2]) { o, _ in try o.setValue(.integer32(1915), forKey: "born") }
        let report = try await copy.sync()
        #expect(report.becameNewPeer && report.peer != first.peer)
        #expect(report.pushedRecords == 1)
        let again = try await a.sync()
        #expect(again.peer == first.peer && !again.becameNewPeer)
        #expect(try a.value(authors[2], "born") == .integer32(1915))
        #expect(try a.differences(from: copy).isIdentical)
    }

    @Test(arguments: SyncFixtures.remoteKinds)
    func backupRestoredInPlaceBecomesANewPeerAndLosesNothing(remote kind: RemoteKind) async throws {
        let dir = try TemporaryDirectory("sync-restore")
        let remote = try kind.make()
        let a = try Replica(dir.path("a.sqlite"), type: "sqlite", remote: remote)
        let authors = try seed(a)
        try await a.sync()
        let backup = try a.coordinator.backupStore(a.loaded, to: dir.path("nightly.sqlite"))
        try a.update(authors[0]) { o, _ in try o.setValue(.string("after the backup"), forKey: "name") }
        try await a.sync()
        // The backup goes back in place: same place, same peer identity, an older sync state.
        let restored = try a.coordinator.restoreStore(a.loaded, fromBackupAt: backup.url)
        try a.adopt(restored)
        try a.update(authors[1]) { o, _ in try o.setValue(.string("after the restore"), forKey: "name") }
        let report = try await a.sync()
        #expect(report.becameNewPeer, "its next file name is taken: another replica wrote as this peer")
        let b = try Replica(nil, type: "memory", remote: remote)
        try await b.sync()
        try await a.sync()
        #expect(try b.value(authors[1], "name") == .string("after the restore"))
        #expect(try a.value(authors[0], "name") == .string("after the backup"), "the change made before the restore comes back")
        #expect(try a.differences(from: b).isIdentical)
    }

    @Test func unreachableRemoteLeavesSavesWorking() async throws {
        let dir = try TemporaryDirectory("sync-unreachable")
        let a = try Replica(dir.path("a.sqlite"), type: "sqlite", remote: UnreachableRemote())
        _ = try seed(a)
        await #expect(throws: SyncError.self) { try await a.sync() }
        let start = ContinuousClock.now
        for i in 0..<20 { try a.insert("Author", ["name": .string("offline \(i)")]) }
        #expect(try a.count("Author") == 23)
        #expect(ContinuousClock.now - start < .seconds(10))
        #expect(try a.engine.status().isAttached == false)

        // A remote that never answers: the sync call gives up within its timeout and the store is untouched.
        let hanging = try Replica(dir.path("h.sqlite"), type: "sqlite", remote: HangingRemote(), timeout: 0.3)
        try hanging.insert("Author", ["name": "x"])
        let t0 = ContinuousClock.now
        await #expect(throws: SyncError.timedOut("hanging", seconds: 0.3)) { try await hanging.sync() }
        // The timeout ended the call (the error says so), not the remote's hour-long hang. The sync waits for a
        // thread of the cooperative pool to resume on, which tests that block their threads can hold for minutes on a
        // loaded two-core machine: the bound is half the hang, not a measure of the timeout's precision.
        #expect(ContinuousClock.now - t0 < .seconds(1_800))
        try hanging.insert("Author", ["name": "y"])
        #expect(try hanging.count("Author") == 2)

        // Once a remote answers, everything saved offline goes out.
        let remote = InMemoryRemote()
        let online = try Replica(dir.path("a.sqlite"), type: "sqlite", remote: remote)
        let report = try await online.sync()
        #expect(report.pushedRecords == 3 + 3 + 1 + 20)
    }

    @Test func syncLogsCountsNeverValues() async throws {
        let dir = try TemporaryDirectory("sync-logging")
        let capture = LogCapture()
        let remote = InMemoryRemote()
        let a = try Replica(dir.path("a.sqlite"), type: "sqlite", remote: remote, logger: capture.logger(level: .trace))
        let secret = "Secret title \(UUID().uuidString)"
        try a.insert("Book", ["title": .string(secret), "pages": .integer64(4_242_424)])
        try await a.sync()
        let b = try Replica(nil, type: "memory", remote: remote, logger: capture.logger(level: .trace))
        try await b.sync()
        let lines = capture.all
        #expect(lines.contains { $0.message == "sync finished" && $0.level == .info && $0.metadata["pushedRecords"] == "1" })
        #expect(lines.contains { $0.message == "sync finished" && $0.level == .info && $0.metadata["inserted"] == "1" })
        // Routine syncs with nothing to do log only at debug; the push and the pull of the new book at info.
        let before = capture.all.count
        try await a.sync()
        try await b.sync()
        _ = try a.insert("Book", ["title": "pushed"])
        try await a.sync()
        try await b.sync()
        let routine = capture.all.dropFirst(before)
        #expect(routine.filter { $0.level >= .info }.count == 2, "\(routine.map { "\($0.level) \($0.message)" })")
        for line in lines {
            let text = line.message + " " + line.metadata.values.joined(separator: " ")
            #expect(!text.contains("Secret title") && !text.contains("4242424"), "\(text)")
        }
    }

    @Test func changedRemoteIdentityDetachesInsteadOfMerging() async throws {
        let dir = try TemporaryDirectory("sync-identity")
        let a = try Replica(dir.path("a.sqlite"), type: "sqlite", remote: InMemoryRemote(identity: "account-1"))
        _ = try seed(a)
        try await a.sync()
        let other = try Replica(dir.path("a.sqlite"), type: "sqlite", remote: InMemoryRemote(identity: "account-2"))
        await #expect(throws: SyncError.remoteIdentityChanged(store: dir.path("a.sqlite").path, expected: "account-1", found: "account-2")) {
            try await other.sync()
        }
        try SyncEngine.detach(other.loaded.store)
        #expect(try SyncEngine.status(of: other.loaded.store, options: nil).isAttached == false)
    }
}
