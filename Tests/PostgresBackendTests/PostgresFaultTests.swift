import Foundation
@testable import PostgresBackend
import SQLiteBackend
import StoreAPI
import StoreTestSupport
import Synchronization
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Faults against the real server: a server that accepts connections and never answers, a statement timeout given
/// as a description option, and the server process of a conversion killed while it copies rows in.
@Suite(.enabled(if: PostgresTestServer.isAvailable, PostgresTestServer.skipReason))
struct PostgresFaultTests {
    static func schema() throws -> Schema {
        try Schema(entities: [
            EntityDescription(name: "Note", attributes: [
                AttributeDescription(name: "title", type: .string), AttributeDescription(name: "rank", type: .integer64),
            ]),
        ])
    }

    /// A listener that takes connections into its backlog and never says a word: the connect gives up after the
    /// description's `postgres.connect_timeout` with a typed error naming the host, never the password.
    @Test func silentServerTimesOut() throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        try #require(fd >= 0)
        defer { close(fd) }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        try #require(bound == 0 && listen(fd, 8) == 0)
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &len) } }
        let port = Int(UInt16(bigEndian: addr.sin_port))
        let url = try #require(URL(string: "postgres://app:hunter2@127.0.0.1:\(port)/db?schema=app"))
        var options = StoreOptions(timeout: 60)
        options.backend[PostgresStoreBackend.connectTimeoutOptionKey] = "1"
        let start = Date()
        #expect {
            _ = try PostgresStoreBackend().open(at: url, options: options, creating: nil)
        } throws: { error in
            guard case StoreError.io = error else { return false }
            return "\(error)".contains("127.0.0.1 port \(port)") && !"\(error)".contains("hunter2")
        }
        #expect(Date().timeIntervalSince(start) < 15, "the connect gave up after its timeout, not the options' 60 s")
    }

    /// `postgres.statement_timeout` as a description option: a fetch that waits for another session's lock is
    /// cancelled with an error saying so; the connection stays usable for the next fetch.
    @Test func statementTimeoutOption() throws {
        let url = try PostgresTestServer.shared().storeURL("stmttimeout")
        defer { try? PostgresStoreBackend().destroyStore(at: url) }
        var description = StoreDescription(url: url, type: PostgresStoreBackend.typeIdentifier)
        description.options.backend[PostgresStoreBackend.statementTimeoutOptionKey] = "0.3"
        let c = StoreCoordinator(schema: try Self.schema(), registry: BackendRegistry(backends: [PostgresStoreBackend()]))
        try c.addStore(description)
        let ctx = c.newContext()
        try ctx.insert("Note", ["title": "a", "rank": 1])
        try ctx.save()
        let location = try PostgresLocation(url)
        let holder = try PostgresConnection(location, connectTimeout: 5)
        defer { holder.close() }
        try holder.execute("BEGIN")
        try holder.execute("LOCK TABLE \"\(location.schema)\".\"E_Note\" IN ACCESS EXCLUSIVE MODE")
        #expect {
            _ = try c.newContext().fetch(FetchRequest(entity: "Note"))
        } throws: { error in
            guard case StoreError.io = error else { return false }
            return "\(error)".contains("statement timeout")
        }
        try holder.execute("ROLLBACK")
        #expect(try c.newContext().fetch(FetchRequest(entity: "Note")).count == 1)
    }

    /// A description option that is not a number of seconds is refused, naming the option.
    @Test func badOptionIsNamed() throws {
        let url = try PostgresTestServer.shared().storeURL("badoption")
        var options = StoreOptions()
        options.backend[PostgresStoreBackend.statementTimeoutOptionKey] = "soon"
        #expect {
            _ = try PostgresStoreBackend().open(at: url, options: options, creating: nil)
        } throws: { error in
            guard case StoreError.invalidArgument(let text) = error else { return false }
            return text.contains(PostgresStoreBackend.statementTimeoutOptionKey)
        }
    }

    /// The server process of a conversion onto the server is killed while it copies rows in: the conversion fails
    /// with a typed error that never shows the password, leaves neither the destination nor its staging schema,
    /// and the same conversion then succeeds.
    @Test func killedServerProcessMidCopy() throws {
        let server = try PostgresTestServer.shared()
        let dir = try TemporaryDirectory("pg-killcopy")
        let source = dir.path("source.sqlite")
        let registry = BackendRegistry(backends: [SQLiteStoreBackend(), PostgresStoreBackend()])
        let seed = StoreCoordinator(schema: try Self.schema(), registry: registry)
        try seed.addStore(StoreDescription(url: source, type: "sqlite"))
        try seed.newContext().insertBatch("Note", count: 60_000) { i, row in
            try row.set("title", .string("note \(i) with some text to copy"))
            try row.set("rank", .integer64(Int64(i)))
        }
        for s in seed.stores { try seed.removeStore(s) }

        let app = "killcopy\(UUID().uuidString.prefix(8).lowercased())"
        let plain = server.storeURL("killcopy")
        let schema = try PostgresLocation(plain).schema
        let url = try #require(URL(string: plain.absoluteString.replacingOccurrences(of: "postgres@", with: "postgres:pw-secret@")
            + "&application_name=\(app)"))
        defer { try? PostgresStoreBackend().destroyStore(at: url) }
        let killer = try PostgresConnection(PostgresLocation(plain), connectTimeout: 5)
        let done = DispatchSemaphore(value: 0)
        let killed = Mutex(false)
        let stop = Mutex(false)
        Thread {
            while !stop.withLock({ $0 }) {
                let rows = try? killer.execute(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1 AND state = 'active' AND query LIKE 'COPY%'",
                    [app])
                if let rows, rows.count > 0 {
                    killed.withLock { $0 = true }
                    break
                }
                usleep(2_000)
            }
            done.signal()
        }.start()
        let operations = StoreOperations(registry: registry)
        #expect {
            try operations.copyStore(from: source, to: url, type: PostgresStoreBackend.typeIdentifier)
        } throws: { error in
            guard error is StoreError else { return false }
            return !"\(error)".contains("pw-secret")
        }
        stop.withLock { $0 = true }
        done.wait()
        #expect(killed.withLock { $0 }, "a COPY of the conversion was killed")
        let left = try killer.execute("SELECT count(*) FROM pg_catalog.pg_namespace WHERE nspname = $1 OR nspname LIKE '\\_stage\\_%' || $1", [schema])
        #expect(left.int64(0, 0) == 0, "neither the destination nor its staging schema is left")
        killer.close()
        try operations.copyStore(from: source, to: url, type: PostgresStoreBackend.typeIdentifier)
        let check = StoreCoordinator(schema: try Self.schema(), registry: registry)
        try check.addStore(StoreDescription(url: url, type: PostgresStoreBackend.typeIdentifier))
        #expect(try check.newContext().count(FetchRequest(entity: "Note")) == 60_000)
    }
}
