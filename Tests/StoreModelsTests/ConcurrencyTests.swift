import CSQLite
import Foundation
import StoreAPI
import StoreModels
import StoreTestSupport
import Synchronization
import Testing

/// Reads run beside writes: beside a write's closure on every store type, and beside another connection's open
/// write transaction on SQLite in WAL mode.
// Serialized: each case blocks a thread of the cooperative pool while its write is held open. The time limits are
// generous: they only bound a failure, and under a parallel run other suites' synchronous tests can hold the pool's
// other threads for many seconds before the read gets one.
@Suite("Concurrency", .serialized)
struct ConcurrencyTests {
    /// Whether `body` finishes within `seconds` (it keeps running in the background when it does not).
    static func finishes(within seconds: Double, _ body: @escaping @Sendable () async throws -> Void) async -> Bool {
        let done = Atomic<Bool>(false)
        let task = Task {
            try? await body()
            done.store(true, ordering: .releasing)
        }
        let deadline = ContinuousClock.now + .seconds(seconds)
        while ContinuousClock.now < deadline, !done.load(ordering: .acquiring) {
            try? await Task.sleep(for: .milliseconds(5))
        }
        _ = task
        return done.load(ordering: .acquiring)
    }

    @Test("A read completes while a write's closure runs", arguments: StoreKind.allCases)
    func readBesideWriteClosure(kind: StoreKind) async throws {
        let dir = try TemporaryDirectory("typed-concurrent-closure")
        let db = try kind.open(in: dir)
        _ = try await db.write { try $0.insert(Book(title: "Lavinia", pages: 279)) }
        let release = Atomic<Bool>(false)
        let entered = Atomic<Bool>(false)
        let writer = Task {
            try await db.write { tx in
                try tx.insert(Book(title: "The Telling", pages: 264))
                entered.store(true, ordering: .releasing)
                // Holds the write open until the test has read (or gave up: it blocks a thread of the pool).
                let until = Date().addingTimeInterval(120)
                while !release.load(ordering: .acquiring), Date() < until { usleep(1_000) }
            }
        }
        while !entered.load(ordering: .acquiring) { try await Task.sleep(for: .milliseconds(1)) }
        let titles = Mutex<[String]>([])
        let read = await Self.finishes(within: 60) {
            let found = try await db.read { try $0.fetch(Book.self).map(\.title) }
            titles.withLock { $0 = found }
        }
        release.store(true, ordering: .releasing)
        try await writer.value
        #expect(read, "the read waited for the write")
        #expect(titles.withLock { $0 } == ["Lavinia"], "the read sees what was committed before the write")
        #expect(try await db.read { try $0.count(Book.self) } == 2)
        try db.close()
    }

    @Test("A synchronous write waits for the async write before it, and runs after it")
    func writeNowQueuesBehindAsyncWrite() async throws {
        let db = try StoreKind.memory.open(in: try TemporaryDirectory("typed-write-now"))
        let release = Atomic<Bool>(false)
        let entered = Atomic<Bool>(false)
        let writer = Task {
            try await db.write { tx in
                _ = try tx.insert(Tag(label: "first"))
                entered.store(true, ordering: .releasing)
                let until = Date().addingTimeInterval(120)
                while !release.load(ordering: .acquiring), Date() < until { usleep(1_000) }
            }
        }
        while !entered.load(ordering: .acquiring) { try await Task.sleep(for: .milliseconds(1)) }
        let finished = Atomic<Bool>(false)
        let thread = Thread {
            // Its insert sees the first write's tag: it ran after that write was saved.
            _ = try? db.writeNow { tx in
                let before = try tx.count(Tag.self)
                _ = try tx.insert(Tag(label: "second after \(before)"))
            }
            finished.store(true, ordering: .releasing)
        }
        thread.start()
        try await Task.sleep(for: .milliseconds(200))
        let ranEarly = finished.load(ordering: .acquiring)
        #expect(!ranEarly, "the synchronous write ran while the async one was open")
        release.store(true, ordering: .releasing)
        try await writer.value
        let deadline = ContinuousClock.now + .seconds(60)
        while !finished.load(ordering: .acquiring), ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(5))
        }
        let labels = try db.readNow { try $0.fetch(Tag.self, sortedBy: [.ascending(\.label)]).map(\.label) }
        #expect(labels == ["first", "second after 1"])
        try db.close()
    }

    @Test("On SQLite in WAL mode a read completes while another connection holds a write transaction open")
    func readBesideOpenSQLiteTransaction() async throws {
        let dir = try TemporaryDirectory("typed-concurrent-sqlite")
        let db = try StoreKind.sqlite.open(in: dir)
        _ = try await db.write { try $0.insert(Book(title: "Lavinia", pages: 279)) }

        var raw: OpaquePointer?
        try #require(sqlite3_open_v2(dir.path("books.sqlite").path, &raw, SQLITE_OPEN_READWRITE, nil) == SQLITE_OK)
        defer { sqlite3_close_v2(raw) }
        // A write transaction with a change in it, left open while the store reads.
        try #require(sqlite3_exec(raw, "BEGIN IMMEDIATE; CREATE TABLE scratch(x); INSERT INTO scratch VALUES (1);",
                                  nil, nil, nil) == SQLITE_OK)
        let read = await Self.finishes(within: 60) {
            _ = try await db.read { try $0.fetch(Book.self) }
        }
        #expect(read, "the read waited for the other connection's transaction")
        #expect(sqlite3_exec(raw, "ROLLBACK", nil, nil, nil) == SQLITE_OK)
        #expect(try await db.read { try $0.fetch(Book.self).map(\.title) } == ["Lavinia"])
        try db.close()
    }
}
