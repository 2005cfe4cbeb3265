import Foundation
@testable import PostgresBackend
import StoreAPI
import StoreTestSupport
import Synchronization
import Testing

/// Reads run beside a save in progress on the same store: they take a reader connection instead of waiting for the
/// store's own, and see what was committed when they began.
@Suite(.enabled(if: PostgresTestServer.isAvailable, PostgresTestServer.skipReason))
struct PostgresConcurrentReadTests {
    static func coordinator(_ url: URL) throws -> StoreCoordinator {
        let schema = try Schema(entities: [
            EntityDescription(name: "Note", attributes: [
                AttributeDescription(name: "title", type: .string), AttributeDescription(name: "rank", type: .integer64),
            ]),
        ])
        let c = StoreCoordinator(schema: schema, registry: BackendRegistry(backends: [PostgresStoreBackend()]))
        try c.addStore(StoreDescription(url: url, type: PostgresStoreBackend.typeIdentifier))
        return c
    }

    @Test func aFetchRunsBesideASaveInProgress() throws {
        let url = try PostgresTestServer.shared().storeURL("readbeside")
        defer { try? PostgresStoreBackend().destroyStore(at: url) }
        let c = try Self.coordinator(url)
        let first = c.newContext()
        try first.insert("Note", ["title": "committed", "rank": 0])
        try first.save()

        // Each inserted row sleeps in a trigger, so the save below holds the store's connection for seconds.
        let schema = try PostgresLocation(url).schema
        let admin = try PostgresConnection(PostgresLocation(url), connectTimeout: 5)
        defer { admin.close() }
        try admin.execute("CREATE FUNCTION \"\(schema)\".slow() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_sleep(0.05); RETURN NEW; END $$")
        try admin.execute("CREATE TRIGGER slow BEFORE INSERT ON \"\(schema)\".\"E_Note\" FOR EACH ROW EXECUTE FUNCTION \"\(schema)\".slow()")
        let store = try #require(c.stores.first?.store as? PostgresPersistentStore)
        let pid = store.backendPID
        try #require(pid > 0)

        let outcome = SaveOutcome()
        let done = DispatchSemaphore(value: 0)
        Thread {
            do {
                let saving = c.newContext()
                for i in 1...100 { try saving.insert("Note", ["title": .string("n\(i)"), "rank": .integer64(Int64(i))]) }
                try saving.save()
            } catch {
                outcome.error.withLock { $0 = "\(error)" }
            }
            outcome.finished.withLock { $0 = true }
            done.signal()
        }.start()
        // Waits until the save's rows are going in (its process is running something other than BEGIN).
        let deadline = Date().addingTimeInterval(20)
        var running = false
        while Date() < deadline, !running {
            let rows = try admin.execute(
                "SELECT 1 FROM pg_stat_activity WHERE pid = $1 AND state = 'active' AND query NOT LIKE 'BEGIN%'", [String(pid)])
            running = rows.count > 0
            if !running { usleep(2_000) }
        }
        try #require(running, "the save started")

        let reader = c.newContext()
        let seen = try reader.fetch(FetchRequest(entity: "Note"))
        let counted = try reader.count(FetchRequest(entity: "Note"))
        let finishedBeforeTheReads = outcome.finished.withLock { $0 }
        #expect(!finishedBeforeTheReads, "the reads did not wait for the save")
        #expect(seen.count == 1 && counted == 1, "the reads see what was committed, not the save in progress")

        done.wait()
        let failure = outcome.error.withLock { $0 }
        #expect(failure == nil)
        #expect(try c.newContext().count(FetchRequest(entity: "Note")) == 101, "the next read sees the committed save")
    }
}

/// What the saving thread reports.
private final class SaveOutcome: Sendable {
    let finished = Mutex(false)
    let error = Mutex<String?>(nil)
}
