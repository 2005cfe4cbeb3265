import Foundation
import LMDBBackend
import StoreAPI
import StoreTestSupport
import Testing

/// A writer kept waiting by another process's write transaction gives up after ``StoreOptions/timeout``.
///
/// The other process is a small Python program driving the system liblmdb through `ctypes`, as a second program
/// using this framework would: it takes the writer lock the backend documents (an exclusive `flock` on liblmdb's
/// descriptor of the data file), begins a real write transaction, and holds both until told to stop.
@Suite struct LMDBWriterTimeoutTests {
    /// A write transaction held open by another process.
    final class OtherWriter {
        let process = Process()
        private let input = Pipe()

        private static let program = """
            import ctypes, ctypes.util, fcntl, sys
            lib = ctypes.CDLL(ctypes.util.find_library('lmdb') or 'liblmdb.so.0')
            env = ctypes.c_void_p()
            assert lib.mdb_env_create(ctypes.byref(env)) == 0
            lib.mdb_env_set_maxdbs(env, 256)
            rc = lib.mdb_env_open(env, sys.argv[1].encode(), 0, 0o644)
            if rc != 0:
                print('open failed', rc, flush=True)
                sys.exit(1)
            fd = ctypes.c_int()
            assert lib.mdb_env_get_fd(env, ctypes.byref(fd)) == 0
            fcntl.flock(fd.value, fcntl.LOCK_EX)
            txn = ctypes.c_void_p()
            assert lib.mdb_txn_begin(env, None, 0, ctypes.byref(txn)) == 0
            print('writing', flush=True)
            sys.stdin.read()
            lib.mdb_txn_abort(txn)
            fcntl.flock(fd.value, fcntl.LOCK_UN)
            lib.mdb_env_close(env)
            """

        /// Starts the other process on the store at `url`; `nil` (with the reason recorded) when Python or liblmdb
        /// is not available.
        static func start(_ url: URL) -> OtherWriter? {
            let writer = OtherWriter()
            writer.process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            writer.process.arguments = ["python3", "-c", program, url.path]
            let output = Pipe()
            writer.process.standardOutput = output
            writer.process.standardInput = writer.input
            writer.process.standardError = FileHandle.nullDevice
            do { try writer.process.run() } catch {
                Issue.record("python3 is not available; the second-process writer check did not run")
                return nil
            }
            let ready = String(decoding: output.fileHandleForReading.availableDataOrLine(), as: UTF8.self)
            guard ready.contains("writing") else {
                Issue.record("the other process did not begin a write transaction: \(ready)")
                writer.process.terminate()
                writer.process.waitUntilExit()
                return nil
            }
            return writer
        }

        /// Ends the other process's transaction (aborted) and waits for it to exit.
        func finish() {
            try? input.fileHandleForWriting.close()
            process.waitUntilExit()
        }

        deinit {
            if process.isRunning {
                process.terminate()
                process.waitUntilExit()
            }
        }
    }

    @Test func aSaveBlockedByAnotherProcessFailsWithLockedAfterTheTimeout() throws {
        let dir = try TemporaryDirectory("lmdb-tests")
        let schema = try LMDBFixture.schema()
        let url = dir.path("contended.lmdb")
        try LMDBFixture.create(url, schema: schema).close()
        let store = try LMDBFixture.open(url, options: StoreOptions(timeout: 0.3))
        defer { try? store.close() }
        let tag = schema.record("Tag", 1, ["name": "first"])

        guard let other = OtherWriter.start(url) else { return }
        let saveError = storeError { try store.save(StoreChanges(inserted: [tag])) }
        #expect(saveError?.caseName == "locked", "\(String(describing: saveError))")
        #expect(saveError?.description.contains(url.path) == true, "the error names the store: \(String(describing: saveError))")
        #expect(saveError?.description.contains("0.3-second timeout") == true, "\(String(describing: saveError))")
        let keysError = storeError { _ = try store.allocatePrimaryKeys(root: "Tag", count: 10) }
        #expect(keysError?.caseName == "locked", "\(String(describing: keysError))")
        // Readers never wait for writers, and the refused save stored nothing.
        #expect(try store.count(FetchRequest(entity: "Tag")) == 0)
        other.finish()

        // With the other writer gone, the same save goes through.
        try store.save(StoreChanges(inserted: [tag]))
        #expect(try store.count(FetchRequest(entity: "Tag")) == 1)
        #expect(try LMDBFixture.backend.checkIntegrity(at: url).isEmpty)
    }

    @Test func aSaveWaitsForAnotherProcessWithinTheTimeout() throws {
        let dir = try TemporaryDirectory("lmdb-tests")
        let schema = try LMDBFixture.schema()
        let url = dir.path("queued.lmdb")
        try LMDBFixture.create(url, schema: schema).close()
        let store = try LMDBFixture.open(url, options: StoreOptions(timeout: 120))
        defer { try? store.close() }
        let tag = schema.record("Tag", 1, ["name": "after the other writer"])

        guard let other = OtherWriter.start(url) else { return }
        let outcome = SaveOutcome()
        let saver = Thread {
            outcome.set(Result { try store.save(StoreChanges(inserted: [tag])) })
        }
        saver.start()
        // While the other process holds its transaction, the save cannot have gone through (two writers at once).
        Thread.sleep(forTimeInterval: 0.5)
        #expect(outcome.get() == nil, "the save finished while another process was writing")
        other.finish()
        let result = outcome.wait(seconds: 120)
        #expect(result != nil, "the save did not finish after the other writer ended")
        if case .failure(let error) = result { Issue.record("the waiting save failed: \(error)") }
        #expect(try store.count(FetchRequest(entity: "Tag")) == 1)
    }
}

/// The result of a save running on another thread.
private final class SaveOutcome: @unchecked Sendable {
    private let condition = NSCondition()
    private var result: Result<Void, any Error>?

    func set(_ value: Result<Void, any Error>) {
        condition.lock()
        result = value
        condition.broadcast()
        condition.unlock()
    }

    func get() -> Result<Void, any Error>? {
        condition.lock()
        defer { condition.unlock() }
        return result
    }

    /// Waits up to `seconds` for the result.
    func wait(seconds: Double) -> Result<Void, any Error>? {
        let deadline = Date().addingTimeInterval(seconds)
        condition.lock()
        defer { condition.unlock() }
        while result == nil && condition.wait(until: deadline) {}
        return result
    }
}
