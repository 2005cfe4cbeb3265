import Foundation
import StoreAPI
@testable import StoreSync
import StoreTestSupport
import Testing
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The syncs of one store take turns: in one process through the API here, across processes in
/// ``StorectlConcurrentSyncTests``.
@Suite("Sync lock")
struct SyncLockTests {
    /// A file store and a store without a file.
    static let types = ["sqlite", "memory"]

    @Test(arguments: types)
    func aSyncWaitsForTheOtherThenSaysWhoHoldsTheStore(type: String) async throws {
        let dir = try TemporaryDirectory("sync-lock")
        let url: URL? = type == "memory" ? nil : dir.path("a.sqlite")
        let a = try Replica(url, type: type, remote: InMemoryRemote(), timeout: 0.3)
        try await a.sync()

        let holder = try await SyncLock.acquire(for: a.loaded, timeout: 1)
        // Saves never wait for the lock.
        try a.insert("Tag", ["name": "saved while a sync runs"])
        let start = ContinuousClock.now
        do {
            try await a.sync()
            Issue.record("a sync ran while another held the store")
        } catch let error as SyncError {
            guard case .syncInProgress(_, let pid, let waited) = error else { throw error }
            #expect(pid == getpid() && waited == 0.3, "\(error)")
            #expect(error.description.contains("sync already running (in this process)"), "\(error)")
        }
        #expect(ContinuousClock.now - start >= .milliseconds(300), "it gave up before its timeout")
        let status = try a.engine.status()
        #expect(status.pendingTransactions == 1, "the refused sync pushed nothing")

        holder.release()
        let report = try await a.sync()
        #expect(report.pushedRecords == 1)
    }

    /// A detach takes the lock as a sync does: while a sync holds the store it waits, then refuses, leaving the
    /// store attached; once the sync is over it detaches. (Without the lock, a sync ending after the detach wrote
    /// its state back: the store stayed attached although the detach had said it was done.)
    @Test(arguments: types)
    func aDetachWaitsForTheRunningSync(type: String) async throws {
        let dir = try TemporaryDirectory("sync-lock-detach")
        let url: URL? = type == "memory" ? nil : dir.path("a.sqlite")
        let a = try Replica(url, type: type, remote: InMemoryRemote())
        try await a.sync()
        let holder = try await SyncLock.acquire(for: a.loaded, timeout: 1)
        let start = ContinuousClock.now
        #expect { try SyncEngine.detach(a.loaded.store, timeout: 0.3) } throws: { error in
            guard case SyncError.syncInProgress(_, _, let waited) = error else { return false }
            return waited == 0.3
        }
        #expect(ContinuousClock.now - start >= .milliseconds(300), "it gave up before its timeout")
        #expect(try a.engine.status().isAttached, "the refused detach changed nothing")
        holder.release()
        try SyncEngine.detach(a.loaded.store, timeout: 1)
        #expect(try a.engine.status().isAttached == false)
        #expect(a.loaded.store.metadata.syncOptions == nil)
        if let url {
            for file in [url.path + ".storesync", url.path + ".storesync.lock"] {
                #expect(!FileManager.default.fileExists(atPath: file), "a detached store keeps no sync file: \(file)")
            }
            // A sync after the detach takes a fresh lock file (it attaches again when given options).
            let lock = try await SyncLock.acquire(for: a.loaded, timeout: 1)
            #expect(FileManager.default.fileExists(atPath: url.path + ".storesync.lock"))
            lock.release()
        }
    }

    @Test func twoEnginesOnOneFileTakeTurnsAndPullEachChangeOnce() async throws {
        let dir = try TemporaryDirectory("sync-lock-engines")
        // Each answer of the remote takes a while, so that two syncs running at once would both list and pull
        // before either wrote its state.
        let remote = DelayedRemote(base: InMemoryRemote())
        let a = try Replica(dir.path("a.sqlite"), type: "sqlite", remote: remote)
        try await a.sync()
        // The same file loaded a second time, as a second process would: its lock is the file's, not the engine's.
        let again = try Replica(dir.path("a.sqlite"), type: "sqlite", remote: remote)
        let other = try Replica(dir.path("b.lmdb"), type: "lmdb", remote: remote)
        try await other.sync()
        for round in 0..<5 {
            for i in 0..<50 { try other.insert("Author", ["name": .string("r\(round) \(i)")]) }
            try await other.sync()
            for i in 0..<10 { try a.insert("Book", ["title": .string("r\(round) \(i)")]) }
            let (first, second) = (a.engine, again.engine)
            async let x = first.sync()
            async let y = second.sync()
            let (p, q) = try await (x, y)
            #expect(p.insertedRecords + q.insertedRecords == 50, "round \(round): each change applied once")
            #expect(p.pushedRecords + q.pushedRecords == 10, "round \(round): each local change pushed once")
            #expect(try a.count("Author") == 50 * (round + 1))
        }
        // Two calls on one engine take turns as well.
        for i in 0..<20 { try other.insert("Tag", ["name": .string("tag \(i)")]) }
        try await other.sync()
        let engine = a.engine
        async let x = engine.sync()
        async let y = engine.sync()
        let (p, q) = try await (x, y)
        #expect(p.insertedRecords + q.insertedRecords == 20)
        try await other.sync()
        let d = try a.differences(from: other)
        #expect(d.isIdentical, "\(d.summary)")
    }

    @Test func theLockFileIsTheStoresButNeverCarried() async throws {
        let dir = try TemporaryDirectory("sync-lock-file")
        let url = dir.path("a.sqlite")
        let lockFile = dir.path("a.sqlite.storesync.lock")
        let remote = InMemoryRemote()
        do {
            let a = try Replica(url, type: "sqlite", remote: remote)
            try a.insert("Tag", ["name": "one"])
            try await a.sync()
            try a.coordinator.removeStore(a.loaded)
        }
        #expect(FileManager.default.fileExists(atPath: lockFile.path))
        let operations = StoreOperations(registry: SyncFixtures.registry)
        #expect(try operations.relocateStore(from: url, to: dir.path("moved.sqlite")) == .moved)
        let listing = dir.listing()
        #expect(!listing.contains("a.sqlite.storesync.lock"), "relocate leaves no lock file behind: \(listing)")
        #expect(!listing.contains("moved.sqlite.storesync.lock"), "a lock belongs to its path: \(listing)")
        #expect(listing.contains("moved.sqlite.storesync"), "the sync state log moved: \(listing)")

        let moved = try Replica(dir.path("moved.sqlite"), type: "sqlite", remote: remote)
        #expect(try await moved.sync().pushedRecords == 0, "a relocated store re-uploads nothing")
        try moved.coordinator.removeStore(moved.loaded)
        #expect(dir.listing().contains("moved.sqlite.storesync.lock"))
        try operations.destroyStore(at: dir.path("moved.sqlite"))
        #expect(dir.listing().isEmpty, "destroy removes the lock file with the store: \(dir.listing())")
    }
}

/// A remote whose every answer takes a moment, as a network's does.
struct DelayedRemote: SyncRemote {
    let base: InMemoryRemote
    var displayName: String { base.displayName }
    func identity() async throws -> String { try await pause(); return try await base.identity() }
    func list(after cursor: SyncCursor?) async throws -> RemoteListing { try await pause(); return try await base.list(after: cursor) }
    func fetch(_ name: ChangeFileName) async throws -> Data { try await pause(); return try await base.fetch(name) }
    func put(_ data: Data, as name: ChangeFileName) async throws -> PutOutcome { try await pause(); return try await base.put(data, as: name) }
    private func pause() async throws { try await Task.sleep(for: .milliseconds(30)) }
}
