import Foundation
import StoreAPI
import StoreSync
@testable import StoreSyncPostgres
import StoreTestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// The server process serving a peer stops (`SIGSTOP`: its statement timeout cannot fire and TCP keepalives are
/// still answered by its kernel) in the middle of a push and of a pull: the sync fails within the remote's own
/// deadline — the statement timeout plus a grace period, well before the engine's call timeout — with a typed error
/// naming the server's host and port, the store is unchanged, and once the process runs again the next sync
/// completes with every record once.
@Suite("PostgreSQL remote deadline", .enabled(if: PostgresTestServer.isAvailable, PostgresTestServer.skipReason))
struct PostgresRemoteDeadlineTests {
    /// The remote's URL with a 1 s statement timeout and an application name to find its server processes by.
    static func url(_ application: String) throws -> URL {
        let base = try PostgresTestServer.shared().storeURL("deadline")
        var c = try #require(URLComponents(url: base, resolvingAgainstBaseURL: false))
        c.queryItems = (c.queryItems ?? []) + [URLQueryItem(name: "statement_timeout", value: "1"),
                                               URLQueryItem(name: "application_name", value: application)]
        return try #require(c.url)
    }

    static func isDeadlineError(_ error: any Error, port: Int) -> Bool {
        guard case SyncError.remote(_, let reason) = error else { return false }
        return reason.contains("did not answer") && reason.contains("127.0.0.1 port \(port)")
    }

    @Test func aStoppedServerFailsPushAndPullInBoundedTimeAndTheNextSyncCompletes() async throws {
        let port = try PostgresTestServer.shared().port
        let dir = try TemporaryDirectory("sync-pg-stopped")
        let application = "stoptest_\(UUID().uuidString.prefix(8).lowercased())"
        let url = try Self.url(application)
        let admin = try RemoteConnection(RemoteLocation(try PostgresTestServer.shared().storeURL("deadline-admin")), connectTimeout: 10)
        // Stops every server process of the peers' connections.
        let stop: () throws -> [Int32] = {
            let rows = try admin.execute("SELECT pid FROM pg_stat_activity WHERE application_name = $1", [.text(application)])
            let pids = (0..<rows.count).compactMap { rows.int64($0, 0).map(Int32.init) }
            for pid in pids { kill(pid, SIGSTOP) }
            return pids
        }

        let pushing = StoppingRemote(try PostgresRemote(url: url, container: "c"), stopBeforePut: true)
        let a = try Replica(dir.path("a.sqlite"), type: "sqlite", remote: pushing, timeout: 120)
        let ctx = a.context()
        for i in 0..<3_000 { try ctx.insert("Author", ["name": .string("author \(i)"), "born": .integer32(Int32(i))]) }
        try ctx.save()
        defer { for pid in pushing.stopped { kill(pid, SIGCONT) } }
        pushing.stop = stop
        let pushError = await #expect(throws: SyncError.self) { try await a.sync() }
        // From the server's stop, not the sync's start: the local work before it is not the remote's wait.
        let pushWaited = Date().timeIntervalSince(try #require(pushing.stoppedAt))
        #expect(pushError.map { Self.isDeadlineError($0, port: port) } == true, "\(String(describing: pushError))")
        #expect(pushWaited < 60, "the remote gave up at its own deadline, not the engine's")
        #expect(!pushing.stopped.isEmpty)
        for pid in pushing.stopped { kill(pid, SIGCONT) }
        #expect(try a.count("Author") == 3_000, "the store is unchanged")
        pushing.stop = nil
        let pushed = try await a.sync()
        #expect(pushed.pushedRecords == 3_000)

        let pulling = StoppingRemote(try PostgresRemote(url: url, container: "c"), stopBeforePut: false)
        let b = try Replica(dir.path("b.sqlite"), type: "sqlite", remote: pulling, timeout: 120)
        defer { for pid in pulling.stopped { kill(pid, SIGCONT) } }
        pulling.stop = stop
        let pullError = await #expect(throws: SyncError.self) { try await b.sync() }
        #expect(pullError.map { Self.isDeadlineError($0, port: port) } == true, "\(String(describing: pullError))")
        #expect(Date().timeIntervalSince(try #require(pulling.stoppedAt)) < 60)
        #expect(!pulling.stopped.isEmpty)
        for pid in pulling.stopped { kill(pid, SIGCONT) }
        #expect(try b.count("Author") == 0, "nothing of the failed pull is in the store")
        pulling.stop = nil
        let pulled = try await b.sync()
        #expect(pulled.insertedRecords == 3_000)
        let ids = try b.context().fetch(FetchRequest(entity: "Author")).map(\.globalID)
        #expect(ids.count == 3_000 && Set(ids).count == 3_000, "every record once")
        #expect(try a.differences(from: b).isIdentical)
    }
}

/// A remote that runs `stop` once before the first put (or fetch), keeping the process IDs it stopped, then passes
/// every call on.
final class StoppingRemote: SyncRemote, @unchecked Sendable {
    private let inner: any SyncRemote
    private let stopBeforePut: Bool
    private let lock = NSLock()
    private var pending: (() throws -> [Int32])?
    private var pids: [Int32] = []
    private var stopTime: Date?

    init(_ inner: any SyncRemote, stopBeforePut: Bool) {
        self.inner = inner
        self.stopBeforePut = stopBeforePut
    }

    /// Runs once, before the next put (or fetch); `nil`: none.
    var stop: (() throws -> [Int32])? {
        get { lock.withLock { pending } }
        set { lock.withLock { pending = newValue } }
    }

    /// The server processes `stop` stopped.
    var stopped: [Int32] { lock.withLock { pids } }

    /// When `stop` ran.
    var stoppedAt: Date? { lock.withLock { stopTime } }

    private func stopOnce() throws {
        let run = lock.withLock { () -> (() throws -> [Int32])? in
            defer { pending = nil }
            return pending
        }
        guard let run else { return }
        let stopped = try run()
        lock.withLock {
            pids += stopped
            stopTime = Date()
        }
    }

    var displayName: String { inner.displayName }
    func identity() async throws -> String { try await inner.identity() }
    func list(after cursor: SyncCursor?) async throws -> RemoteListing { try await inner.list(after: cursor) }
    func fetch(_ name: ChangeFileName) async throws -> Data { try await fetch([name]).first ?? Data() }
    func fetch(_ names: [ChangeFileName]) async throws -> [Data] {
        if !stopBeforePut { try stopOnce() }
        return try await inner.fetch(names)
    }
    func put(_ data: Data, as name: ChangeFileName) async throws -> PutOutcome {
        try await put([(name: name, data: data)]).first ?? .alreadyExists
    }
    func put(_ files: [(name: ChangeFileName, data: Data)]) async throws -> [PutOutcome] {
        if stopBeforePut { try stopOnce() }
        return try await inner.put(files)
    }
}
