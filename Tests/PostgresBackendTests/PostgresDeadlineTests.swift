import Foundation
@testable import PostgresBackend
import StoreAPI
import StoreTestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// A server that stops answering in the middle of a statement — its backend process stopped with `SIGSTOP`, so
/// neither its statement timeout nor TCP keepalives can help — fails the call after the client's own deadline (the
/// statement timeout plus a grace period) with a typed error naming the server, never the password; the next
/// operation connects again.
@Suite(.enabled(if: PostgresTestServer.isAvailable, PostgresTestServer.skipReason))
struct PostgresDeadlineTests {
    static func schema() throws -> Schema {
        try Schema(entities: [
            EntityDescription(name: "Note", attributes: [
                AttributeDescription(name: "title", type: .string), AttributeDescription(name: "rank", type: .integer64),
            ]),
        ])
    }

    /// The URL of a new store with a password the server ignores (trust), to check that no error shows it.
    static func url(_ label: String) throws -> URL {
        let plain = try PostgresTestServer.shared().storeURL(label)
        return try #require(URL(string: plain.absoluteString.replacingOccurrences(of: "postgres@", with: "postgres:pw-secret@")))
    }

    /// A coordinator on `url` whose statements time out after `seconds`.
    static func coordinator(_ url: URL, statementTimeout seconds: String) throws -> StoreCoordinator {
        var description = StoreDescription(url: url, type: PostgresStoreBackend.typeIdentifier)
        description.options.backend[PostgresStoreBackend.statementTimeoutOptionKey] = seconds
        let c = StoreCoordinator(schema: try schema(), registry: BackendRegistry(backends: [PostgresStoreBackend()]))
        try c.addStore(description)
        return c
    }

    /// Whether `error` is the client's deadline error: typed, naming the server's host and port, not the password.
    static func isDeadlineError(_ error: any Error, port: Int) -> Bool {
        guard case StoreError.io = error else { return false }
        let text = "\(error)"
        return text.contains("did not answer") && text.contains("127.0.0.1 port \(port)") && !text.contains("pw-secret")
    }

    /// The deadline here: a 1 s statement timeout plus the grace the client gives the server's own cancel.
    static let deadline = 1 + PostgresSessionOptions.answerGrace

    /// A fetch from a store whose server process is stopped fails after the deadline; once the process runs
    /// again, the next fetch connects anew and reads the stored record.
    @Test func fetchFromAStoppedServerGivesUp() throws {
        let port = try PostgresTestServer.shared().port
        let url = try Self.url("stopfetch")
        defer { try? PostgresStoreBackend().destroyStore(at: url) }
        let c = try Self.coordinator(url, statementTimeout: "1")
        let ctx = c.newContext()
        try ctx.insert("Note", ["title": "kept", "rank": 1])
        try ctx.save()
        let store = try #require(c.stores.first?.store as? PostgresPersistentStore)
        let pid = store.backendPID
        try #require(pid > 0)
        try #require(kill(pid, SIGSTOP) == 0)
        let start = Date()
        #expect {
            _ = try c.newContext().fetch(FetchRequest(entity: "Note"))
        } throws: { Self.isDeadlineError($0, port: port) }
        let waited = Date().timeIntervalSince(start)
        kill(pid, SIGCONT)
        #expect(waited >= Self.deadline - 0.5, "the client gave the server its whole deadline")
        #expect(waited < Self.deadline + 20, "the client gave up near its deadline")
        #expect(try c.newContext().fetch(FetchRequest(entity: "Note")).count == 1, "the next fetch reconnects")
    }

    /// The server process stops while it runs a save's statement (held there by a slow trigger): the save fails
    /// after the deadline, none of it is stored, and the same save then succeeds on a new connection.
    @Test func saveOnAServerThatStopsMidStatementGivesUp() throws {
        let port = try PostgresTestServer.shared().port
        let url = try Self.url("stopsave")
        defer { try? PostgresStoreBackend().destroyStore(at: url) }
        // Longer than the trigger holds the statement, so that the server's own cancel cannot come first.
        let c = try Self.coordinator(url, statementTimeout: "4")
        let store = try #require(c.stores.first?.store as? PostgresPersistentStore)
        let schema = try PostgresLocation(url).schema
        let admin = try PostgresConnection(PostgresLocation(url), connectTimeout: 5)
        defer { admin.close() }
        let table = "\"\(schema)\".\"E_Note\""
        try admin.execute("CREATE FUNCTION \"\(schema)\".slow() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_sleep(0.02); RETURN NEW; END $$")
        try admin.execute("CREATE TRIGGER slow BEFORE INSERT ON \(table) FOR EACH ROW EXECUTE FUNCTION \"\(schema)\".slow()")
        let pid = store.backendPID
        try #require(pid > 0)
        let ctx = c.newContext()
        for i in 0..<100 { try ctx.insert("Note", ["title": .string("n\(i)"), "rank": .integer64(Int64(i))]) }
        // Stops the process once its insert runs (it is then sleeping in the trigger).
        let stopped = DispatchSemaphore(value: 0)
        Thread {
            let deadline = Date().addingTimeInterval(10)
            while Date() < deadline {
                let rows = try? admin.execute(
                    "SELECT 1 FROM pg_stat_activity WHERE pid = $1 AND state = 'active' AND query NOT LIKE 'BEGIN%'", [String(pid)])
                if let rows, rows.count > 0 {
                    kill(pid, SIGSTOP)
                    break
                }
                usleep(1_000)
            }
            stopped.signal()
        }.start()
        defer { kill(pid, SIGCONT) }
        let start = Date()
        #expect {
            try ctx.save()
        } throws: { Self.isDeadlineError($0, port: port) }
        let waited = Date().timeIntervalSince(start)
        stopped.wait()
        kill(pid, SIGCONT)
        #expect(waited < 4 + PostgresSessionOptions.answerGrace + 20, "the client gave up near its deadline")
        try admin.execute("DROP TRIGGER slow ON \(table)")
        try admin.execute("DROP FUNCTION \"\(schema)\".slow()")
        // The stopped process finishes its transaction (rolled back) once it runs again and finds its client gone.
        #expect(try c.newContext().count(FetchRequest(entity: "Note")) == 0, "nothing of the abandoned save is visible")
        try ctx.save()
        #expect(try c.newContext().count(FetchRequest(entity: "Note")) == 100, "the next save reconnects")
    }

    /// A COPY whose server process stops taking data: the client, holding one buffer of rows, waits for the
    /// socket to drain and gives up at the deadline instead of blocking in libpq.
    @Test func copyIntoAStoppedServerGivesUp() throws {
        let server = try PostgresTestServer.shared()
        let location = try PostgresLocation(try Self.url("stopcopy"))
        let c = try PostgresConnection(location, connectTimeout: 5, statementTimeoutMilliseconds: 1000)
        defer { c.close() }
        try c.execute("CREATE TEMPORARY TABLE sink (v text)")
        let pid = c.backendPID
        try #require(pid > 0)
        defer { kill(pid, SIGCONT) }
        let row = String(repeating: "x", count: 4096)
        let start = Date()
        var sent = 0
        #expect {
            try c.copyIn("COPY sink FROM STDIN") { copy in
                kill(pid, SIGSTOP)
                // Far more than the socket buffers of both ends hold.
                for _ in 0..<50_000 {
                    copy.field(row)
                    try copy.endRow()
                    sent += 1
                }
            }
        } throws: { Self.isDeadlineError($0, port: server.port) }
        #expect(sent < 50_000, "the copy stopped when the server stopped taking rows")
        #expect(Date().timeIntervalSince(start) < Self.deadline + 30)
        #expect(c.isBroken, "the connection is given up")
    }
}
