import Foundation
import StoreAPI
import StoreTestSupport
import Testing

/// SQLite's locks are per-process POSIX locks that any `close(2)` of the file drops. A process that inspects a
/// store it has open (sniffing it, reading its metadata, probing whether it is in use — as every store operation
/// does first) must keep them; otherwise other processes take it for gone, delete the `-wal` it still writes to,
/// and its later commits and theirs overwrite each other.
@Suite("Lock keeping")
struct LockKeepingTests {
    @Test("inspecting an open SQLite store keeps this process's locks, so no process's commits are lost")
    func inspectingOwnStore() throws {
        let scratch = try TemporaryDirectory("reliability-locks-sqlite")
        defer { scratch.remove() }
        let url = scratch.path("live.sqlite")
        try StoreBytes.copy(try Fixtures.other("sqlite"), to: url)
        let backend = try Backends.backend("sqlite")
        let coordinator = StoreCoordinator(schema: try #require(Fixtures.schema), registry: Backends.registry)
        let loaded = try coordinator.addStore(StoreDescription(url: url, type: "sqlite"))
        let context = coordinator.newContext()
        try SaveLog.save(1, writer: "a", in: context)

        // Everything an operation does before it touches a store.
        #expect(backend.sniff(url) == .store)
        _ = try Backends.registry.detectBackend(at: url)
        _ = try backend.readMetadata(at: url)
        _ = backend.ownedFiles(ofStoreAt: url)
        #expect(try backend.isInUse(at: url))

        // Another process writes and exits. Were this process's locks gone, it would think itself the last user,
        // checkpoint and delete the -wal and -shm this process still uses.
        let b = try Child.storestress(["saves", url.path, "--writer", "b", "--count", "2"])
        b.wait()
        #expect(b.status == 0, "\(b.summary)")
        try SaveLog.save(2, writer: "a", in: context)
        // A third process would then start a fresh -wal beside the orphaned one, and the two logs would later be
        // checkpointed over each other.
        let c = try Child.storestress(["saves", url.path, "--writer", "c", "--count", "2"])
        c.wait()
        #expect(c.status == 0, "\(c.summary)")
        try SaveLog.save(3, writer: "a", in: context)
        try coordinator.removeStore(loaded)

        let log = SaveLog(store: url, writers: ["other", "a", "b", "c"])
        #expect(log.problems.isEmpty, "\(log.problems.prefix(5))")
        #expect(log.committed == ["other": 3, "a": 3, "b": 2, "c": 2])
    }
}
