import Foundation
import StoreAPI
import StoreTestSupport
import Testing

/// Two processes writing one store: SQLite and LMDB interleave their transactions and lose nothing; XML lets one
/// writer at a time hold the store, so a second one waits (then sees the first one's data) or fails clearly.
@Suite("Concurrent writers")
struct ConcurrentWriterTests {
    /// Saves per writer: `STORE_CONCURRENT_SAVES`, or a CI-sized default.
    static let saves: Int = {
        if let text = ProcessInfo.processInfo.environment["STORE_CONCURRENT_SAVES"], let n = Int(text), n > 0 { return n }
        return 40
    }()

    /// Starts `writers` storestress save loops on `store`, waits until every one has opened it, then lets them go.
    func race(_ store: URL, writers: [String], timeout: Double = 30, in scratch: TemporaryDirectory) throws -> [Child] {
        let go = scratch.path("go")
        let children = try writers.map { w in
            try Child.storestress(["saves", store.path, "--writer", w, "--count", "\(Self.saves)", "--history",
                                   "--timeout", "\(timeout)", "--wait-for", go.path])
        }
        return children
    }

    @Test("two processes saving into one store lose no update", arguments: ["sqlite", "lmdb"])
    func incrementalStores(_ type: String) throws {
        let scratch = try TemporaryDirectory("reliability-concurrent-\(type)")
        defer { scratch.remove() }
        let store = scratch.path("shared.\(type)")
        try StoreBytes.copy(try Fixtures.empty(type), to: store)
        let writers = try race(store, writers: ["a", "b"], in: scratch)
        for w in writers { #expect(w.waitForOutput("ready"), "\(w.summary)") }
        _ = FileManager.default.createFile(atPath: scratch.path("go").path, contents: nil)
        for w in writers {
            w.wait()
            #expect(w.status == 0, "\(w.summary)")
            #expect(SaveLog.lastPrinted(w.stdout) == Self.saves)
        }
        let log = SaveLog(store: store, writers: ["a", "b"], history: ["a", "b"])
        #expect(log.problems.isEmpty, "\(log.problems.prefix(10))")
        #expect(log.committed == ["a": Self.saves, "b": Self.saves])
    }

    @Test("a second XML writer waits for the first, then adds to its data")
    func xmlSecondWriterWaits() throws {
        let scratch = try TemporaryDirectory("reliability-concurrent-xml-wait")
        defer { scratch.remove() }
        let store = scratch.path("shared.xml")
        try StoreBytes.copy(try Fixtures.empty("xml"), to: store)
        let first = try Child.storestress(["saves", store.path, "--writer", "a", "--count", "\(Self.saves)", "--history",
                                           "--wait-for", scratch.path("go").path])
        #expect(first.waitForOutput("ready"), "\(first.summary)")
        // The first writer holds the store's lock from its open to its close: the second blocks in its open.
        let second = try Child.storestress(["saves", store.path, "--writer", "b", "--count", "\(Self.saves)", "--history",
                                            "--timeout", "120"])
        _ = FileManager.default.createFile(atPath: scratch.path("go").path, contents: nil)
        first.wait()
        second.wait()
        #expect(first.status == 0, "\(first.summary)")
        #expect(second.status == 0, "\(second.summary)")
        let log = SaveLog(store: store, writers: ["a", "b"], history: ["a", "b"])
        #expect(log.problems.isEmpty, "\(log.problems.prefix(10))")
        #expect(log.committed == ["a": Self.saves, "b": Self.saves])
        // Never interleaved: every transaction of a comes before every transaction of b.
        let store2 = try Backends.open(store)
        defer { try? store2.close() }
        let authors = try store2.history(after: nil).compactMap(\.author)
        #expect(authors == Array(repeating: "a", count: Self.saves) + Array(repeating: "b", count: Self.saves))
    }

    @Test("a second XML writer that cannot wait fails with a clear error and changes nothing")
    func xmlSecondWriterFails() throws {
        let scratch = try TemporaryDirectory("reliability-concurrent-xml-fail")
        defer { scratch.remove() }
        let store = scratch.path("shared.xml")
        try StoreBytes.copy(try Fixtures.other("xml"), to: store)
        let holder = try Child.storestress(["hold", store.path])
        defer { holder.kill() }
        try #require(holder.waitForOutput("holding"), "\(holder.summary)")
        let before = StoreBytes.contents(of: store)

        let second = try Child.storestress(["saves", store.path, "--writer", "b", "--count", "1", "--timeout", "0.3"])
        second.wait()
        #expect(second.status == 1, "\(second.summary)")
        #expect(second.stderr.contains("locked") && second.stderr.contains(store.path + ".lock"), "\(second.summary)")
        #expect(StoreBytes.contents(of: store) == before)
        #expect(StoreBytes.staging(in: scratch.url).isEmpty)

        holder.kill()
        let retry = try Child.storestress(["saves", store.path, "--writer", "b", "--count", "1", "--timeout", "0.3"])
        retry.wait()
        #expect(retry.status == 0, "\(retry.summary)")
        let log = SaveLog(store: store, writers: ["other", "b"])
        #expect(log.problems.isEmpty, "\(log.problems.prefix(10))")
        #expect(log.committed == ["other": 3, "b": 1])
    }
}
