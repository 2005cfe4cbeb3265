import Foundation
@_spi(BackendKit) import StoreAPI
import Synchronization
import Testing

extension ConformanceSuite {
    /// A store with history, custom metadata and sync options, holding the catalog and a few edge samples.
    func makeRichStore(_ h: Harness, name: String = "source") throws -> (url: URL, metadata: StoreMetadata, records: [UUID: Record], history: [HistoryTransaction]) {
        let url = h.storeURL(name)
        var description = h.description(url, options: StoreOptions(historyTracking: true))
        // An unreachable remote: no operation may contact it or wait for it.
        description.syncOptions = SyncOptions(remote: URL(string: "https://sync.invalid/zone")!, containerIdentifier: "iCloud.test", scope: .private)
        let c = StoreCoordinator(schema: h.schema, registry: registry)
        try c.addStore(description)
        let ctx = c.newContext()
        ctx.author = "maker"
        try Self.populateCatalog(ctx)
        for values in Self.edgeSamples().prefix(3) { try ctx.insert("Sample", values) }
        try ctx.save()
        let doomed = try #require(try ctx.fetch(FetchRequest(entity: "Tag")).first)
        try ctx.delete(doomed)
        try ctx.save()
        try h.close(c)
        var metadata = try backend.readMetadata(at: url)
        #expect(metadata.syncOptions == description.syncOptions, "the sync options a store was created with are kept with it")
        metadata.custom["app.cursor"] = .string("token-42")
        try backend.writeMetadata(metadata, at: url)
        let (c2, s2) = try h.coordinator(url)
        let records = try Self.dump(s2.store, schema: h.schema)
        let history = try s2.store.history(after: nil)
        try h.close(c2)
        let kept = try backend.readMetadata(at: url)
        #expect(kept.syncOptions == description.syncOptions, "writing the metadata keeps the sync options")
        return (url, kept, records, history)
    }

    /// Opens the store at `url` (any type) and checks it is the same logical store.
    func expectSameStore(_ h: Harness, at url: URL, type: String, as expected: (metadata: StoreMetadata, records: [UUID: Record], history: [HistoryTransaction]),
                         _ what: String) throws {
        let backend = try registry.backend(for: type)
        let metadata = try backend.readMetadata(at: url)
        #expect(metadata.storeUUID == expected.metadata.storeUUID, "\(what): the store UUID must be preserved")
        #expect(metadata.storeType == type, "\(what): store type")
        #expect(metadata.schema == expected.metadata.schema, "\(what): schema")
        #expect(metadata.custom.filter { !$0.key.hasPrefix("storeapi.") } == expected.metadata.custom, "\(what): custom metadata")
        #expect(metadata.syncOptions == expected.metadata.syncOptions, "\(what): sync options")
        let store = try backend.open(at: url, options: StoreOptions(isReadOnly: true, createIfMissing: false), creating: nil)
        defer { try? store.close() }
        let records = try Self.dump(store, schema: metadata.schema)
        #expect(records.count == expected.records.count, "\(what): record count")
        for (gid, want) in expected.records {
            guard let got = records[gid] else {
                Issue.record("\(what): record \(want.key) is missing")
                continue
            }
            let entity = try #require(metadata.schema.entity(named: want.entity))
            #expect(h.sameRecord(got, want, in: entity), "\(what): record \(want.key) differs")
        }
        if backend.capabilities.contains(.history) {
            #expect(try store.history(after: nil) == expected.history, "\(what): history")
        }
    }

    func checkOperations(_ h: Harness) throws {
        let source = try makeRichStore(h)
        let expected = (source.metadata, source.records, source.history)
        let before = Self.fingerprint(backend, source.url)
        let operations = StoreOperations(registry: registry)

        // Convert to every type and back; the source is never written.
        for peer in [backend] + peers {
            let there = h.storeURL("to-\(peer.typeIdentifier)", of: peer)
            let back = h.storeURL("back-from-\(peer.typeIdentifier)")
            try operations.copyStore(from: source.url, to: there, type: peer.typeIdentifier)
            try expectSameStore(h, at: there, type: peer.typeIdentifier, as: expected, "\(backend.typeIdentifier) → \(peer.typeIdentifier)")
            try operations.copyStore(from: there, to: back, type: backend.typeIdentifier)
            try expectSameStore(h, at: back, type: backend.typeIdentifier, as: expected, "\(backend.typeIdentifier) → \(peer.typeIdentifier) → back")
            // An existing destination is refused, and left as it was.
            let peerPrint = Self.fingerprint(peer, there)
            #expect(throws: StoreError.self) { try operations.copyStore(from: source.url, to: there, type: peer.typeIdentifier) }
            #expect(Self.fingerprint(peer, there) == peerPrint)
            // Replacing is an atomic swap, never a merge: the records are not doubled.
            try operations.copyStore(from: back, to: there, type: peer.typeIdentifier, options: .init(replacingExisting: true))
            try expectSameStore(h, at: there, type: peer.typeIdentifier, as: expected, "replace of a \(peer.typeIdentifier) store")
            try peer.destroyStore(at: there)
            try backend.destroyStore(at: back)
        }
        #expect(Self.fingerprint(backend, source.url) == before, "converting must not touch the source")

        // Replace from a missing or invalid source is an error, and the destination stays.
        let target = h.storeURL("target")
        try operations.copyStore(from: source.url, to: target)
        let targetPrint = Self.fingerprint(backend, target)
        #expect(throws: StoreError.self) { try operations.replaceStore(at: target, with: h.storeURL("nothing-here")) }
        let junk = h.directory.appendingPathComponent("junk.bin")
        try Data(repeating: 0xAB, count: 4096).write(to: junk)
        #expect(throws: StoreError.self) { try operations.replaceStore(at: target, with: junk) }
        #expect(Self.fingerprint(backend, target) == targetPrint)
        try backend.destroyStore(at: target)

        try checkCoordinatorOperations(h, source: source)
        try checkBackupRestore(h)
        try checkRelocation(h, source: source)
        let leftovers = h.listing().filter { $0.hasPrefix(AtomicFile.stagingPrefix) }
        #expect(leftovers.isEmpty, "operations left staging files behind: \(leftovers)")
    }

    private func checkCoordinatorOperations(_ h: Harness, source: (url: URL, metadata: StoreMetadata, records: [UUID: Record], history: [HistoryTransaction])) throws {
        let work = h.storeURL("work")
        try StoreOperations(registry: registry).copyStore(from: source.url, to: work)
        // Compare the source closed before and closed after: an open SQLite store has transient -wal/-shm files.
        let workPrint = Self.fingerprint(backend, work)
        let c = StoreCoordinator(schema: h.schema, registry: registry)
        let loaded = try c.addStore(h.description(work, options: StoreOptions(historyTracking: true)))
        let ctx = c.newContext()
        let book = try #require(try ctx.fetch(FetchRequest(entity: "Book", sortDescriptors: [SortKey("title")])).first)
        let id = book.objectID
        for peer in peers + [backend] {
            let current = try #require(c.stores.first)
            let destination = h.storeURL("migrated-\(peer.typeIdentifier)", of: peer)
            let migrated = try c.migrateStore(current, to: destination, type: peer.typeIdentifier)
            #expect(c.stores.count == 1 && c.stores.first === migrated)
            #expect(migrated.identifier == loaded.identifier, "migrate keeps the store UUID, so object IDs stay valid")
            #expect(throws: StoreError.self, "objects of the migrated-away store must fail clearly") { _ = try book.value(forKey: "title") }
            let again = c.newContext()
            let same = try again.object(with: id)
            #expect(same.globalID == book.globalID)
            #expect(migrated.storeDescription.syncOptions == current.storeDescription.syncOptions, "sync options carry over")
        }
        #expect(Self.fingerprint(backend, work) == workPrint, "migrate leaves the source's files untouched")
        try h.close(c)
    }

    private func checkBackupRestore(_ h: Harness) throws {
        let url = h.storeURL("live")
        let c = StoreCoordinator(schema: h.schema, registry: registry)
        let store = try c.addStore(h.description(url))
        let seed = c.newContext()
        for i in 0..<20 { try seed.insert("Tag", ["name": .string("seed \(i)")]) }
        try seed.save()
        // Writers keep saving batches of 10 while the backup runs.
        let backupURL = h.storeURL("backup")
        let failures = Mutex<[String]>([])
        let stop = Mutex(false)
        let backupInfo = Mutex<BackupInfo?>(nil)
        DispatchQueue.concurrentPerform(iterations: 2) { worker in
            do {
                if worker == 0 {
                    let ctx = c.newContext()
                    var b = 0
                    while !stop.withLock({ $0 }) && b < 200 {
                        for i in 0..<10 { try ctx.insert("Tag", ["name": .string("w\(b)-\(i)")]) }
                        try ctx.save()
                        b += 1
                    }
                } else {
                    let info = try c.backupStore(store, to: backupURL, label: "nightly")
                    backupInfo.withLock { $0 = info }
                    stop.withLock { $0 = true }
                }
            } catch {
                failures.withLock { $0.append("\(error)") }
                stop.withLock { $0 = true }
            }
        }
        #expect(failures.withLock { $0 } == [])
        let info = try #require(backupInfo.withLock { $0 })
        #expect(info.label == "nightly" && info.sourceStoreUUID == store.identifier)
        if isPersistentBackend, h.suite.storeLocation == nil {  // backups(in:) lists a directory; in-memory and server stores have none
            #expect(c.backups(in: h.directory).contains { $0.url.lastPathComponent == backupURL.lastPathComponent })
        }
        let backupStore = try backend.open(at: backupURL, options: StoreOptions(isReadOnly: true, createIfMissing: false), creating: nil)
        let backedUp = try backupStore.count(FetchRequest(entity: "Tag"))
        try backupStore.close()
        #expect(backedUp >= 20 && backedUp % 10 == 0, "a backup is a consistent snapshot (saw \(backedUp) tags)")
        #expect(c.stores.count == 1, "backup leaves the coordinator as it was")

        // Restore: live objects fail clearly, the store holds exactly the backup's records.
        let ctx = c.newContext()
        let live = try #require(try ctx.fetch(FetchRequest(entity: "Tag")).first)
        let backupPrint = Self.fingerprint(backend, backupURL)
        let restored = try c.restoreStore(try #require(c.stores.first), fromBackupAt: backupURL)
        #expect(throws: StoreError.self) { _ = try live.value(forKey: "name") }
        #expect(try c.newContext().count(FetchRequest(entity: "Tag")) == backedUp)
        #expect(restored.store.metadata.custom[BackupInfo.Key.date] == nil, "the restored store drops the backup stamp")
        #expect(Self.fingerprint(backend, backupURL) == backupPrint, "restore leaves the backup untouched")
        try h.close(c)
    }

    private func checkRelocation(_ h: Harness, source: (url: URL, metadata: StoreMetadata, records: [UUID: Record], history: [HistoryTransaction])) throws {
        let operations = StoreOperations(registry: registry)
        let old = h.storeURL("old")
        let sharedDir = h.directory.appendingPathComponent("shared folder ü", isDirectory: true)
        try FileManager.default.createDirectory(at: sharedDir, withIntermediateDirectories: true)
        let new = h.suite.storeLocation.map { _ in h.storeURL("moved") }
            ?? sharedDir.appendingPathComponent("moved." + (backend.fileExtensions.first ?? "store"))
        let expected = (source.metadata, source.records, source.history)
        try operations.copyStore(from: source.url, to: old)
        #expect(try operations.relocateStore(from: old, to: new) == .moved)
        #expect(backend.ownedFiles(ofStoreAt: old).isEmpty && backend.sniff(old) == .none, "relocate removes the old store")
        try expectSameStore(h, at: new, type: backend.typeIdentifier, as: expected, "relocated")
        #expect(try operations.relocateStore(from: old, to: new) == .alreadyDone, "relocate is idempotent")
        // Interrupted after the copy was placed but before the old store was removed: resume.
        try operations.copyStore(from: new, to: old)
        #expect(try operations.relocateStore(from: old, to: new) == .resumed)
        #expect(backend.sniff(old) == .none)
        try expectSameStore(h, at: new, type: backend.typeIdentifier, as: expected, "resumed relocation")
        // Two different stores at both paths are never merged or overwritten.
        let stranger = h.storeURL("stranger")
        let (c, _) = try h.coordinator(stranger)
        try h.close(c)
        #expect(throws: StoreError.self) { try operations.relocateStore(from: stranger, to: new) }
        try expectSameStore(h, at: new, type: backend.typeIdentifier, as: expected, "after a refused relocation")
    }
}

extension ConformanceSuite {
    /// Converts a rich store of the backend under test through every type in `chain` (type identifiers of the
    /// suite's peers or the backend itself), one after the other, and checks that each step — and the end, back in
    /// the first type — is the same logical store: records, relationships and their order, IDs, metadata, history.
    public func runConversionChain(_ chain: [String]) throws {
        let h = try Harness(suite: self)
        defer { h.cleanUp() }
        let source = try makeRichStore(h)
        let expected = (source.metadata, source.records, source.history)
        let operations = StoreOperations(registry: registry)
        var current = source.url
        for (i, type) in chain.enumerated() {
            let peer = try registry.backend(for: type)
            let next = h.storeURL("chain-\(i)-\(type)", of: peer)
            try operations.copyStore(from: current, to: next, type: type)
            try expectSameStore(h, at: next, type: type, as: expected, "step \(i + 1) of \(chain.joined(separator: " → "))")
            current = next
        }
    }
}
