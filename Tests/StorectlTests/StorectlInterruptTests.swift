import Foundation
@_spi(BackendKit) import StoreAPI
import StoreTestSupport
import Testing
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A convert killed or interrupted half-way leaves no partial destination, the source intact, and a re-run works.
@Suite("storectl interrupted", .serialized)
struct StorectlInterruptTests {
    /// A store with enough records that a convert in small pages takes a while.
    func largeStore(at url: URL, records: Int) throws {
        let store = try Backends.create("sqlite", at: url, schema: EdgeFixtures.schema)
        let label = try #require(EdgeFixtures.schema.entity(named: "Label"))
        var next = try store.allocatePrimaryKeys(root: "Label", count: records)
        for start in stride(from: 0, to: records, by: 10_000) {
            var page: [Record] = []
            for i in start..<min(start + 10_000, records) {
                var r = label.newRecord(primaryKey: next)
                r.attributes[0] = .string("label \(i) with some text to make the record a little bigger")
                page.append(r)
                next += 1
            }
            try store.save(StoreChanges(inserted: page))
        }
        try store.close()
    }

    /// Starts a slow convert, waits until it is writing its staged copy, then sends `signal`.
    func interruptedConvert(signal: Int32) throws -> (dir: TemporaryDirectory, result: Child) {
        let dir = try TemporaryDirectory("storectl-tests")
        try largeStore(at: dir.path("big.sqlite"), records: 40_000)
        let running = try Storectl.start(["convert", "big.sqlite", "big.lmdb", "--batch-size", "10"], in: dir)
        let deadline = Date().addingTimeInterval(120)
        var staging = false
        while running.process.isRunning && Date() < deadline {
            if dir.entries().contains(where: { $0.hasPrefix(AtomicFile.stagingPrefix) }) {
                staging = true
                break
            }
            usleep(5_000)
        }
        try #require(staging && running.process.isRunning, "the convert finished before it could be interrupted; make the store larger")
        usleep(200_000)
        kill(running.process.processIdentifier, signal)
        running.process.waitUntilExit()
        return (dir, running)
    }

    @Test("SIGKILL mid-convert leaves no destination and the source intact; a re-run succeeds")
    func killed() throws {
        let (dir, result) = try interruptedConvert(signal: SIGKILL)
        defer { dir.remove() }
        #expect(result.killedBySignal)
        #expect(!FileManager.default.fileExists(atPath: dir.path("big.lmdb").path), "no partial destination")
        #expect((try? Backends.registry.detectBackend(at: dir.path("big.lmdb"))) == nil)
        let verify = try Storectl.run(["verify", "big.sqlite"], in: dir)
        #expect(verify.status == 0, "the source is intact: \(verify.stdout)")
        // Nothing is at the destination, so no --force is needed; the re-run also clears the killed run's staging.
        let rerun = try Storectl.run(["convert", "big.sqlite", "big.lmdb"], in: dir)
        #expect(rerun.status == 0, "\(rerun.stderr)")
        #expect(try Storectl.run(["diff", "big.sqlite", "big.lmdb"], in: dir).status == 0)
        #expect(dir.entries() == ["big.lmdb", "big.sqlite"])
    }

    @Test("Ctrl-C mid-convert cancels cleanly with exit code 130")
    func interrupted() throws {
        let (dir, result) = try interruptedConvert(signal: SIGINT)
        defer { dir.remove() }
        #expect(!result.killedBySignal)
        #expect(result.status == 130, "\(result.stderr)")
        #expect(result.stderr.contains("interrupted; nothing was left behind"))
        #expect(dir.entries() == ["big.sqlite"], "staged files were removed")
    }
}
