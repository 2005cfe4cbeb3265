import CSQLite
import Foundation
import StoreAPI
import StoreModels
import StoreTestSupport
import Synchronization
import Testing

/// Reads run beside writes: beside a write's closure on every store type, and beside another connection's open
/// write transaction on SQLite in WAL mode; and neither holds a thread of the cooperative pool while it runs.
// Serialized: each case holds reads or writes open for a while. The time limits are generous: they only bound a
// failure, and under a parallel run other suites' synchronous tests can hold the pool's threads for many seconds.
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

    /// A write that inserts a model and holds its closure open (blocking one of the store's threads) until
    /// ``finish()``, or for at most 120 seconds.
    final class HeldWrite: Sendable {
        /// Set to let the closure return.
        private final class Release: Sendable {
            private let flag = Atomic(false)
            var isSet: Bool { flag.load(ordering: .acquiring) }
            func set() { flag.store(true, ordering: .releasing) }
        }

        private let release: Release
        private let task: Task<Void, any Error>

        /// Starts the write and returns once its closure runs.
        init(_ db: ModelStore, inserting tag: Tag) async throws {
            let entered = Atomic<Bool>(false)
            let release = Release()
            self.release = release
            task = Task {
                try await db.write { tx in
                    _ = try tx.insert(tag)
                    entered.store(true, ordering: .releasing)
                    let until = Date().addingTimeInterval(120)
                    while !release.isSet, Date() < until { usleep(1_000) }
                }
            }
            while !entered.load(ordering: .acquiring) { try await Task.sleep(for: .milliseconds(1)) }
        }

        /// Whether ``finish()`` let the closure return.
        var released: Bool { release.isSet }

        /// Lets the closure return and waits for the write to be saved.
        func finish() async throws {
            release.set()
            try await task.value
        }
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

    @Test("Reads and a write run on the store's threads: more of them at once than the cooperative pool has")
    func heldClosuresLeaveThePoolFree() async throws {
        let dir = try TemporaryDirectory("typed-pool-free")
        let db = try StoreKind.sqlite.open(in: dir)
        _ = try await db.write { try $0.insert(Book(title: "Lavinia", pages: 279)) }
        // As many reads as the pool has threads (one per core), and a write: run on the pool, they could never all
        // be open at once, and the process's other tasks would wait behind them.
        let reads = ProcessInfo.processInfo.activeProcessorCount
        let held = HeldClosures()
        let writer = Task {
            try await db.write { tx in
                _ = try tx.insert(Book(title: "The Telling", pages: 264))
                held.hold()
            }
        }
        let readers = (0..<reads).map { _ in
            Task {
                try await db.read { r in
                    let count = try r.count(Book.self)
                    held.hold()
                    return count
                }
            }
        }
        // Waited for on this thread, not by suspending: under a parallel run the pool may be busy for a long time
        // with other suites' synchronous tests, and its threads are what is looked at here.
        let deadline = ContinuousClock.now + .seconds(120)
        while held.entered.load(ordering: .acquiring) < reads + 1, ContinuousClock.now < deadline { usleep(1_000) }
        let allHeld = held.entered.load(ordering: .acquiring) == reads + 1
        held.release.store(true, ordering: .releasing)
        try await writer.value
        for r in readers { #expect(try await r.value == 1, "each read saw what was committed before the held write") }
        #expect(allHeld, "only \(held.entered.load(ordering: .acquiring)) of \(reads + 1) closures ran at once")
        #expect(try await db.read { try $0.count(Book.self) } == 2)
        try db.close()
    }

    @Test("A synchronous write waits for the async write before it, and runs after it")
    func writeNowQueuesBehindAsyncWrite() async throws {
        let db = try StoreKind.memory.open(in: try TemporaryDirectory("typed-write-now"))
        let first = try await HeldWrite(db, inserting: Tag(label: "first"))
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
        try await first.finish()
        let deadline = ContinuousClock.now + .seconds(60)
        while !finished.load(ordering: .acquiring), ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(5))
        }
        let labels = try db.readNow { try $0.fetch(Tag.self, sortedBy: [.ascending(\.label)]).map(\.label) }
        #expect(labels == ["first", "second after 1"])
        try db.close()
    }

    @Test("A write cancelled while it waits for the write before it stops waiting, and its closure never runs")
    func cancelledWaitingWriteLeavesTheLine() async throws {
        let db = try StoreKind.sqlite.open(in: try TemporaryDirectory("typed-write-cancel"))
        let first = try await HeldWrite(db, inserting: Tag(label: "first"))
        let ran = Atomic<Bool>(false)
        let waiting = Task {
            try await db.write { tx in
                ran.store(true, ordering: .releasing)
                _ = try tx.insert(Tag(label: "cancelled"))
            }
        }
        // In line behind the first write by now (were it not, it is refused all the same).
        try await Task.sleep(for: .milliseconds(200))
        waiting.cancel()
        let outcome = Mutex<String>("still waiting")
        let answered = await Self.finishes(within: 60) {
            do {
                try await waiting.value
                outcome.withLock { $0 = "ran" }
            } catch is CancellationError {
                outcome.withLock { $0 = "cancelled" }
            } catch {
                outcome.withLock { $0 = "\(error)" }
            }
        }
        let whileFirstOpen = !first.released
        try await first.finish()
        #expect(answered && whileFirstOpen, "the cancelled write waited for the first one to finish")
        #expect(outcome.withLock { $0 } == "cancelled")
        // The gate is free again: a later write runs, after the first.
        try await db.write { tx in _ = try tx.insert(Tag(label: "later")) }
        let cancelledRan = ran.load(ordering: .acquiring)
        #expect(!cancelledRan, "the cancelled write's closure ran")
        let labels = try await db.read { try $0.fetch(Tag.self, sortedBy: [.ascending(\.label)]).map(\.label) }
        #expect(labels == ["first", "later"])
        try db.close()
    }

    @Test("A read or write of a cancelled task throws CancellationError without running; one that started finishes")
    func cancelledTaskAccesses() async throws {
        let db = try StoreKind.sqlite.open(in: try TemporaryDirectory("typed-cancelled-task"))
        let ran = Atomic<Int>(0)
        let refused = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            var errors: [String] = []
            do { _ = try await db.read { _ in ran.add(1, ordering: .relaxed) } } catch { errors.append("\(type(of: error))") }
            do { try await db.write { _ in ran.add(1, ordering: .relaxed) } } catch { errors.append("\(type(of: error))") }
            return errors
        }
        #expect(await refused.value == ["CancellationError", "CancellationError"])
        let runs = ran.load(ordering: .relaxed)
        #expect(runs == 0)

        // Cancelled while its closure runs: the closure finishes and its changes are saved.
        let entered = Atomic<Bool>(false)
        let release = Atomic<Bool>(false)
        let started = Task {
            try await db.write { tx in
                entered.store(true, ordering: .releasing)
                let until = Date().addingTimeInterval(120)
                while !release.load(ordering: .acquiring), Date() < until { usleep(1_000) }
                _ = try tx.insert(Tag(label: "kept"))
            }
        }
        while !entered.load(ordering: .acquiring) { try await Task.sleep(for: .milliseconds(1)) }
        started.cancel()
        release.store(true, ordering: .releasing)
        try await started.value
        #expect(try await db.read { try $0.fetch(Tag.self).map(\.label) } == ["kept"])
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

/// Closures that, once entered, wait until released.
private final class HeldClosures: Sendable {
    let entered = Atomic<Int>(0)
    let release = Atomic<Bool>(false)

    func hold() {
        entered.add(1, ordering: .acquiringAndReleasing)
        while !release.load(ordering: .acquiring) { usleep(1_000) }
    }
}
