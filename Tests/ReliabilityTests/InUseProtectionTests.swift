import Foundation
@_spi(BackendKit) import StoreAPI
import StoreTestSupport
import Testing

/// Destroy and replace refuse a store someone has open — in another process or through another connection in
/// this one — unless forced, and the probe that finds out disturbs no one.
@Suite("In-use protection")
struct InUseProtectionTests {
    /// A small store of `type` at `name` in `scratch`.
    func smallStore(_ type: String, _ name: String, in scratch: TemporaryDirectory) throws -> URL {
        let url = scratch.path("\(name).\(type)")
        try StoreBytes.copy(try Fixtures.other(type), to: url)
        return url
    }

    /// Starts `storestress hold` on `store` and waits until it has the store open.
    func hold(_ store: URL, readOnly: Bool = false) throws -> Child {
        let holder = try Child.storestress(["hold", store.path] + (readOnly ? ["--read-only"] : []))
        try #require(holder.waitForOutput("holding"), "\(holder.summary)")
        return holder
    }

    func expectLocked(_ error: StoreError?, _ store: URL) {
        guard case .locked(let url, let reason)? = error else {
            Issue.record("expected StoreError.locked, got \(String(describing: error))")
            return
        }
        #expect(url.path == store.path)
        #expect(reason.contains("another process"), "\(reason)")
    }

    @Test("destroy and replace of a store another process holds open are refused; nothing changes", arguments: Backends.types)
    func refusedWhileHeld(_ type: String) throws {
        let scratch = try TemporaryDirectory("reliability-inuse-\(type)")
        defer { scratch.remove() }
        let store = try smallStore(type, "held", in: scratch)
        let replacement = try smallStore(type, "replacement", in: scratch)
        let backend = try Backends.backend(type)
        #expect(try backend.isInUse(at: store) == false)

        let holder = try hold(store)
        defer { holder.kill() }
        let before = StoreBytes.contents(of: store)
        #expect(try backend.isInUse(at: store))
        // What a save in flight looks like beside the store (an atomic backend stages its next file there): the
        // refusals below must leave it alone.
        let inFlight = AtomicFile.stagingURL(for: store)
        try Data("a save in flight".utf8).write(to: inFlight)

        expectLocked(#expect(throws: StoreError.self) { try Backends.operations.destroyStore(at: store) }, store)
        expectLocked(#expect(throws: StoreError.self) {
            try Backends.operations.replaceStore(at: store, with: replacement)
        }, store)
        let coordinator = StoreCoordinator(schema: try #require(Fixtures.schema), registry: Backends.registry)
        expectLocked(#expect(throws: StoreError.self) { try coordinator.destroyStore(at: store) }, store)
        expectLocked(#expect(throws: StoreError.self) { try coordinator.replaceStore(at: store, withStoreAt: replacement) }, store)
        expectLocked(#expect(throws: StoreError.self) {
            try Backends.operations.relocateStore(from: store, to: scratch.path("moved.\(type)"))
        }, store)

        for arguments in [["destroy", store.path], ["replace", store.path, "--with", replacement.path],
                          ["convert", replacement.path, store.path, "--force"],
                          ["relocate", store.path, scratch.path("moved.\(type)").path]] {
            let run = try Child.storectl(arguments)
            #expect(run.status == 2, "\(run.summary)")
            #expect(run.stderr.contains(store.path) && run.stderr.contains("locked") && run.stderr.contains("another process"),
                    "\(run.summary)")
        }
        #expect(StoreBytes.contents(of: store) == before)
        #expect(StoreBytes.staging(in: scratch.url) == [inFlight.lastPathComponent])
        #expect(holder.isRunning)
        holder.kill()
        #expect(try backend.isInUse(at: store) == false)
        #expect(try Child.storectl(["destroy", store.path]).status == 0)
        // With the store gone, the writer's leftover is gone too.
        #expect(StoreBytes.staging(in: scratch.url).isEmpty)
    }

    @Test("--force replaces and destroys a store another process holds open", arguments: Backends.types)
    func forcedWhileHeld(_ type: String) throws {
        let scratch = try TemporaryDirectory("reliability-inuse-force-\(type)")
        defer { scratch.remove() }
        let store = try smallStore(type, "held", in: scratch)
        let library = try Fixtures.library(type)

        let first = try hold(store)
        defer { first.kill() }
        let replace = try Child.storectl(["replace", store.path, "--with", library.path, "--force", "-q"])
        #expect(replace.status == 0, "\(replace.summary)")
        #expect(StoreChecks.problems(at: store, type: type, identicalTo: library) == nil)
        first.kill()

        let second = try hold(store)
        defer { second.kill() }
        let destroy = try Child.storectl(["destroy", store.path, "--force", "-q"])
        #expect(destroy.status == 0, "\(destroy.summary)")
        #expect(!FileManager.default.fileExists(atPath: store.path))
        #expect(StoreBytes.staging(in: scratch.url).isEmpty)
        #expect(try Backends.operations.replaceStore(at: store, with: library, force: true).storeType == type)
    }

    @Test("a reader counts as a user (SQLite, LMDB)", arguments: ["sqlite", "lmdb"])
    func readerHolds(_ type: String) throws {
        let scratch = try TemporaryDirectory("reliability-inuse-reader-\(type)")
        defer { scratch.remove() }
        let store = try smallStore(type, "read", in: scratch)
        let reader = try hold(store, readOnly: true)
        defer { reader.kill() }
        #expect(try Backends.backend(type).isInUse(at: store))
        let run = try Child.storectl(["destroy", store.path])
        #expect(run.status == 2, "\(run.summary)")
        #expect(Backends.storeType(at: store) == type)
    }

    @Test("a store open in this process is in use, and probing it keeps this process's locks", arguments: Backends.types)
    func probingDisturbsNoOne(_ type: String) throws {
        let scratch = try TemporaryDirectory("reliability-inuse-self-\(type)")
        defer { scratch.remove() }
        let url = try smallStore(type, "mine", in: scratch)
        let backend = try Backends.backend(type)
        let store = try backend.open(at: url, options: StoreOptions(createIfMissing: false), creating: nil)
        defer { try? store.close() }
        _ = try StoreTransfer.countRecords(store)
        for _ in 0..<20 { #expect(try backend.isInUse(at: url)) }
        // Another process still sees this one's locks (a probe that closed a descriptor of a locked file would
        // have dropped them), so it refuses to destroy the store.
        let run = try Child.storectl(["destroy", url.path])
        #expect(run.status == 2, "\(run.summary)")
        #expect(run.stderr.contains("locked"), "\(run.summary)")
        // And this process can still write.
        try store.save(StoreChanges(metadata: { var m = store.metadata; m.custom["probed"] = .string("yes"); return m }()))
        try store.close()
        #expect(try backend.isInUse(at: url) == false)
        #expect(try backend.readMetadata(at: url).custom["probed"] == .string("yes"))
    }

    @Test("a coordinator destroys and replaces the stores it has loaded itself", arguments: Backends.types)
    func ownStoreIsNotInUse(_ type: String) throws {
        let scratch = try TemporaryDirectory("reliability-inuse-own-\(type)")
        defer { scratch.remove() }
        let url = try smallStore(type, "own", in: scratch)
        let library = try Fixtures.library(type)
        let coordinator = StoreCoordinator(schema: try #require(Fixtures.schema), registry: Backends.registry)
        try coordinator.addStore(StoreDescription(url: url, type: type))
        let replaced = try coordinator.replaceStore(at: url, withStoreAt: library)
        #expect(replaced != nil)
        #expect(try coordinator.newContext().count(FetchRequest(entity: "Book")) > 2_000)
        try coordinator.destroyStore(at: url)
        #expect(Backends.storeType(at: url) == nil)
        #expect(coordinator.stores.isEmpty)
    }
}
