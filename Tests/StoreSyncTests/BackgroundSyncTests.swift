import Foundation
import StoreAPI
@testable import StoreSync
import StoreTestSupport
import Testing

/// Background sync: it retries a failing remote with a growing delay, never holds up saves, and carries changes
/// between peers by itself.
@Suite("Background sync")
struct BackgroundSyncTests {
    /// How long a test waits for the loops: longer than a whole parallel test run, so that only a loop that never
    /// runs fails it.
    static let patience = Duration.seconds(900)

    @Test func backoffDoublesUpToItsLimit() {
        #expect(BackgroundSync.backoff(after: 0, interval: .seconds(1), max: .seconds(10)) == .seconds(1))
        #expect(BackgroundSync.backoff(after: 3, interval: .seconds(1), max: .seconds(10)) == .seconds(8))
        #expect(BackgroundSync.backoff(after: 60, interval: .seconds(1), max: .seconds(10)) == .seconds(10))
    }

    @Test func anUnreachableRemoteIsRetriedWithBackoffAndSavesKeepWorking() async throws {
        let dir = try TemporaryDirectory("sync-background-down")
        let a = try Replica(dir.path("a.sqlite"), type: "sqlite", remote: UnreachableRemote())
        let background = BackgroundSync(engine: a.engine, interval: .milliseconds(20), maxBackoff: .milliseconds(300))
        defer { background.stop() }
        let start = ContinuousClock.now
        for i in 0..<100 { try a.insert("Author", ["name": .string("offline \(i)")]) }
        #expect(try a.count("Author") == 100)
        // The loop runs on the shared cooperative thread pool, which a parallel test run keeps busy with synchronous
        // tests: its rounds may wait until most of the run is done. Wait for a few, however long they take.
        let deadline = ContinuousClock.now + Self.patience
        while background.status.attempts < 4, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(50)) }
        try await Task.sleep(for: .seconds(1))
        let status = background.status
        #expect(status.consecutiveFailures >= 4)
        #expect(status.lastError?.contains("no route to host") == true)
        // Without backoff a 20 ms loop would try 50 times a second; doubling up to 300 ms, a few times.
        let elapsed = ContinuousClock.now - start
        let unbounded = Int(elapsed / .milliseconds(20))
        #expect(status.attempts <= unbounded / 4, "\(status.attempts) attempts in \(elapsed)")
    }

    @Test func changesReachAnotherPeerWithoutAnyoneCallingSync() async throws {
        let dir = try TemporaryDirectory("sync-background-up")
        let remote = InMemoryRemote()
        let a = try Replica(dir.path("a.sqlite"), type: "sqlite", remote: remote)
        let b = try Replica(dir.path("b.lmdb"), type: "lmdb", remote: remote)
        let ba = BackgroundSync(engine: a.engine, interval: .milliseconds(50))
        let bb = BackgroundSync(engine: b.engine, interval: .milliseconds(50))
        defer { ba.stop(); bb.stop() }
        let id = try a.insert("Author", ["name": "travels alone"])
        // Generous, as above: the loops may wait for the pool until most of the test run is done.
        let deadline = ContinuousClock.now + Self.patience
        while try b.value(id, "name") == nil, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(20)) }
        #expect(try b.value(id, "name") == .string("travels alone"))
        #expect(bb.status.lastError == nil)
    }

    /// A remote whose calls block the thread they run on, as a synchronous client stuck on a dead connection does,
    /// until the test releases them: with calls on the shared pool, a few of them would stall every task of the
    /// process.
    @Test func savesStayFastWhileRemoteCallsBlockTheirThreads() async throws {
        let dir = try TemporaryDirectory("sync-blocking-remote")
        let remote = BlockingRemote()
        let a = try Replica(dir.path("a.sqlite"), type: "sqlite", remote: remote, timeout: 600)
        // Each save runs in a task of the pool, as an app's would. The replica is used by one task at a time.
        let shared = UncheckedBox(a)
        func timedSaves(_ label: String) async throws -> Duration {
            let start = ContinuousClock.now
            for i in 0..<20 {
                try await Task.detached { _ = try shared.value.insert("Author", ["name": .string("\(label) \(i)")]) }.value
            }
            return ContinuousClock.now - start
        }
        let quiet = try await timedSaves("quiet")
        // More blocked calls than the pool has threads: one sync per store, since the syncs of one store take turns.
        let blocked = ProcessInfo.processInfo.activeProcessorCount * 2 + 2
        let others = try (1..<blocked).map { try Replica(dir.path("peer\($0).sqlite"), type: "sqlite", remote: remote, timeout: 600) }
        let engines = [a.engine] + others.map(\.engine)
        let syncs = engines.map { engine in Task { _ = try? await engine.sync() } }
        let deadline = ContinuousClock.now + .seconds(20)
        while remote.waiting < blocked, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(10)) }
        #expect(remote.waiting == blocked, "the blocking calls did not all start")
        let hung = try await timedSaves("hung")
        remote.release()
        for s in syncs { await s.value }
        #expect(try a.count("Author") == 40)
        // Generous: a parallel test run keeps the machine busy; a stalled pool waits for the release instead.
        #expect(hung < quiet * 20 + .seconds(5), "saves took \(hung) with blocked remote calls, \(quiet) without")
    }
}

/// A value handed to another task by a test that uses it from one task at a time.
final class UncheckedBox<T>: @unchecked Sendable {
    let value: T
    init(_ value: T) { self.value = value }
}

/// A remote whose every call blocks its thread until ``release()`` (or 30 seconds), then fails.
final class BlockingRemote: SyncRemote, @unchecked Sendable {
    private var released = false
    private var count = 0
    private let gate = NSCondition()

    var displayName: String { "blocking" }

    /// Calls blocked now.
    var waiting: Int { gate.withLock { count } }

    func release() {
        gate.withLock {
            released = true
            gate.broadcast()
        }
    }

    private func block<T>() throws -> T {
        gate.withLock {
            count += 1
            let until = Date().addingTimeInterval(30)
            while !released, gate.wait(until: until) {}
            count -= 1
        }
        throw SyncError.remote(displayName, reason: "released")
    }

    func identity() async throws -> String { try block() }
    func list(after cursor: SyncCursor?) async throws -> RemoteListing { try block() }
    func fetch(_ name: ChangeFileName) async throws -> Data { try block() }
    func put(_ data: Data, as name: ChangeFileName) async throws -> PutOutcome { try block() }
}
