import CLibPQ
import Foundation
@testable import PostgresBackend
import StoreAPI
import StoreTestSupport
import Testing

/// The backend through its public API against the test server: optimistic locking between writers, keys across
/// connections, faults (a refused connection, a server process killed mid-save, a statement timeout), sniffing
/// and destroy.
@Suite(.enabled(if: PostgresTestServer.isAvailable, PostgresTestServer.skipReason))
struct PostgresStoreTests {
    static func schema() throws -> Schema {
        try Schema(entities: [
            EntityDescription(name: "Note", attributes: [
                AttributeDescription(name: "title", type: .string), AttributeDescription(name: "rank", type: .integer64),
            ], uniquenessConstraints: [["title"]]),
        ])
    }

    func coordinator(_ url: URL) throws -> StoreCoordinator {
        let registry = BackendRegistry(backends: [PostgresStoreBackend()])
        let c = StoreCoordinator(schema: try Self.schema(), registry: registry)
        try c.addStore(StoreDescription(url: url, type: PostgresStoreBackend.typeIdentifier))
        return c
    }

    /// Two coordinators (two connections, as two processes would have) change one record: the second save fails
    /// with a conflict naming the record, and the first writer's value stays.
    @Test func concurrentUpdateIsAConflictNotALostUpdate() throws {
        let url = try PostgresTestServer.shared().storeURL("conflict")
        defer { try? PostgresStoreBackend().destroyStore(at: url) }
        let a = try coordinator(url)
        let seed = a.newContext()
        try seed.insert("Note", ["title": "shared", "rank": 1])
        try seed.save()
        let b = try coordinator(url)
        let contextA = a.newContext()
        let inA = try #require(try contextA.fetch("Note").first)
        let contextB = b.newContext()
        let inB = try #require(try contextB.fetch("Note").first)
        try inA.setValue(.integer64(2), forKey: "rank")
        try contextA.save()
        try inB.setValue(.integer64(3), forKey: "rank")
        #expect {
            try contextB.save()
        } throws: { error in
            guard case StoreError.conflict(_, let object, _) = error else { return false }
            return object.primaryKey == inB.objectID.primaryKey
        }
        let reader = try coordinator(url).newContext()
        let stored = try reader.fetch("Note")
        #expect(stored.count == 1)
        #expect(try stored.first?.value(forKey: "rank") == .integer64(2), "the first writer's update is kept")
    }

    /// Keys handed to two connections never overlap.
    @Test func keyAllocationAcrossConnections() throws {
        let url = try PostgresTestServer.shared().storeURL("keys")
        defer { try? PostgresStoreBackend().destroyStore(at: url) }
        let backend = PostgresStoreBackend()
        let meta = StoreMetadata(storeType: "postgres", schema: try Self.schema())
        let s1 = try backend.open(at: url, options: StoreOptions(), creating: meta)
        let s2 = try backend.open(at: url, options: StoreOptions(), creating: meta)
        defer { try? s1.close(); try? s2.close() }
        var seen = Set<Int64>()
        for i in 0..<600 {
            let store = i % 2 == 0 ? s1 : s2
            let first = try store.allocatePrimaryKeys(root: "Note", count: 3)
            for k in first..<(first + 3) { #expect(seen.insert(k).inserted, "key \(k) handed out twice") }
        }
    }

    /// A refused connection is a typed error naming the host and port, without the password.
    @Test func connectionRefusedNamesTheHost() throws {
        let port = try PostgresTestServer.freePort()
        let url = try #require(URL(string: "postgres://app:hunter2@127.0.0.1:\(port)/db?schema=app"))
        #expect {
            _ = try PostgresStoreBackend().open(at: url, options: StoreOptions(timeout: 2), creating: nil)
        } throws: { error in
            let text = "\(error)"
            guard case StoreError.io = error else { return false }
            return text.contains("127.0.0.1 port \(port)") && !text.contains("hunter2")
        }
        #expect(PostgresStoreBackend().sniff(url) != .store)
    }

    /// The server process of the store's connection is terminated in the middle of a save: the save fails
    /// cleanly, none of it is visible, and the next save reconnects and works.
    @Test func killedServerProcessMidSave() throws {
        let server = try PostgresTestServer.shared()
        let url = server.storeURL("killed")
        defer { try? PostgresStoreBackend().destroyStore(at: url) }
        let c = try coordinator(url)
        let store = try #require(c.stores.first?.store as? PostgresPersistentStore)
        // A trigger holds the save inside its transaction long enough to kill its server process.
        let admin = try PostgresConnection(PostgresLocation(url), connectTimeout: 5)
        let table = "\"\(try PostgresLocation(url).schema)\".\"E_Note\""
        try admin.execute("CREATE FUNCTION \"\(try PostgresLocation(url).schema)\".slow() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_sleep(0.05); RETURN NEW; END $$")
        try admin.execute("CREATE TRIGGER slow BEFORE INSERT ON \(table) FOR EACH ROW EXECUTE FUNCTION \"\(try PostgresLocation(url).schema)\".slow()")
        let pid = store.backendPID
        try #require(pid > 0)
        let ctx = c.newContext()
        for i in 0..<200 { try ctx.insert("Note", ["title": .string("n\(i)"), "rank": .integer64(Int64(i))]) }
        // The killer has a connection of its own (a libpq connection serves one thread), and is waited for.
        let killerConnection = try PostgresConnection(PostgresLocation(url), connectTimeout: 5)
        let killed = DispatchSemaphore(value: 0)
        let killer = Thread {
            usleep(500_000)
            _ = try? killerConnection.execute("SELECT pg_terminate_backend($1)", [String(pid)])
            killed.signal()
        }
        killer.start()
        #expect(throws: StoreError.self) { try ctx.save() }
        killed.wait()
        killerConnection.close()
        try admin.execute("DROP TRIGGER slow ON \(table)")
        try admin.execute("DROP FUNCTION \"\(try PostgresLocation(url).schema)\".slow()")
        #expect(try c.newContext().count(FetchRequest(entity: "Note")) == 0, "nothing of the killed save is visible")
        try ctx.save()
        #expect(try c.newContext().count(FetchRequest(entity: "Note")) == 200, "the next save reconnects")
        admin.close()
    }

    /// `statement_timeout` in the URL cancels a statement that runs too long, with an error that says so.
    @Test func statementTimeout() throws {
        let base = try PostgresTestServer.shared().storeURL("timeout")
        let location = try PostgresLocation(base)
        let url = try #require(URL(string: base.absoluteString + "&statement_timeout=0.2"))
        let c = try PostgresConnection(PostgresLocation(url), connectTimeout: 5)
        defer { c.close() }
        #expect(location.statementTimeoutMilliseconds == nil)
        #expect {
            try c.execute("SELECT pg_sleep(2)")
        } throws: { error in "\(error)".contains("statement timeout") }
    }

    /// Sniffing asks the server: nothing, a schema that is not a store, a store. Destroy drops exactly the store's
    /// schema and refuses a schema that holds something else.
    @Test func sniffAndDestroy() throws {
        let server = try PostgresTestServer.shared()
        let url = server.socketStoreURL("sniff")
        let backend = PostgresStoreBackend()
        #expect(backend.sniff(url) == .none)
        let admin = try PostgresConnection(PostgresLocation(url), connectTimeout: 5)
        defer { admin.close() }
        let schema = try PostgresLocation(url).schema
        try admin.execute("CREATE SCHEMA \"\(schema)\"")
        guard case .foreign = backend.sniff(url) else { Issue.record("a schema without a store is foreign"); return }
        #expect(throws: StoreError.self) { try backend.destroyStore(at: url) }
        try admin.execute("DROP SCHEMA \"\(schema)\"")
        _ = try coordinator(url)
        #expect(backend.sniff(url) == .store)
        try admin.execute("CREATE TABLE \"\(schema)\".mine (x int)")
        #expect(throws: StoreError.self, "a schema holding a table of someone else's is not dropped") { try backend.destroyStore(at: url) }
        #expect(backend.sniff(url) == .store)
        try admin.execute("DROP TABLE \"\(schema)\".mine")
        try backend.destroyStore(at: url)
        #expect(backend.sniff(url) == .none)
    }

    /// Entity, attribute and string values that look like SQL are data, never statements.
    @Test func namesAndValuesAreNeverSQL() throws {
        let url = try PostgresTestServer.shared().storeURL("inject")
        defer { try? PostgresStoreBackend().destroyStore(at: url) }
        let hostile = "x\"; DROP SCHEMA public CASCADE; --"
        let schema = try Schema(entities: [
            EntityDescription(name: "Robert'); DROP TABLE \"E_Note\";--", attributes: [AttributeDescription(name: hostile, type: .string)]),
        ])
        let c = StoreCoordinator(schema: schema, registry: BackendRegistry(backends: [PostgresStoreBackend()]))
        try c.addStore(StoreDescription(url: url, type: "postgres"))
        let ctx = c.newContext()
        try ctx.insert(schema.entities[0].name, [hostile: StoreValue.string("'; DROP SCHEMA public; --")])
        try ctx.save()
        let reader = c.newContext()
        let back = try reader.fetch(FetchRequest(entity: schema.entities[0].name))
        #expect(back.count == 1)
        #expect(try back.first?.value(forKey: hostile) == .string("'; DROP SCHEMA public; --"))
    }
}
