import Foundation
@testable import PostgresBackend
import StoreAPI
import StoreTestSupport
import Testing

/// Saves that insert many records go through `COPY … FROM STDIN`: every value reads back exactly (text-format
/// escapes included), and a COPY the server refuses or loses leaves nothing of the save.
@Suite(.enabled(if: PostgresTestServer.isAvailable, PostgresTestServer.skipReason))
struct PostgresCopyTests {
    static func schema() throws -> Schema {
        try Schema(entities: [
            EntityDescription(name: "Item", attributes: [
                AttributeDescription(name: "name", type: .string), AttributeDescription(name: "blob", type: .binary),
                AttributeDescription(name: "n", type: .integer64), AttributeDescription(name: "x", type: .double),
                AttributeDescription(name: "amount", type: .decimal), AttributeDescription(name: "link", type: .uri),
            ], relationships: [
                RelationshipDescription(name: "parts", destination: "Part", inverse: "item", isToMany: true, isOrdered: true),
            ], uniquenessConstraints: [["n"]]),
            EntityDescription(name: "Part", attributes: [AttributeDescription(name: "label", type: .string)], relationships: [
                RelationshipDescription(name: "item", destination: "Item", inverse: "parts"),
            ]),
        ])
    }

    func coordinator(_ url: URL) throws -> StoreCoordinator {
        let c = StoreCoordinator(schema: try Self.schema(), registry: BackendRegistry(backends: [PostgresStoreBackend()]))
        try c.addStore(StoreDescription(url: url, type: PostgresStoreBackend.typeIdentifier))
        return c
    }

    /// Strings with every character the text format escapes (backslash, tab, newline, carriage return), `\N` and
    /// `\.` as data, NUL, non-ASCII; bytes of every value; extreme numbers; ordered to-many links.
    @Test func copiedValuesReadBackExactly() throws {
        let url = try PostgresTestServer.shared().storeURL("copyvalues")
        defer { try? PostgresStoreBackend().destroyStore(at: url) }
        let c = try coordinator(url)
        let ctx = c.newContext()
        let names = ["a\tb", "line\nbreak", "cr\rhere", "back\\slash", "\\N", "\\.", "nul\u{0}in", "ü€😀", "", "\\x41"]
        var expected: [Int64: (String, Data)] = [:]
        for i in 0..<300 {
            let name = names[i % names.count] + String(i)
            let blob = Data((0..<(i % 7)).map { UInt8(($0 * 37 + i) & 0xFF) } + [0, 9, 10, 13, 92])
            let item = try ctx.insert("Item", [
                "name": .string(name), "blob": .binary(blob), "n": .integer64(i == 0 ? .min : Int64(i) * 1_000_003),
                "x": .double(i == 1 ? -0.0 : i == 2 ? .infinity : Double(i) / 7), "amount": .decimal(Decimal(string: "-12345678901234567890.5") ?? 0),
                "link": .uri(URL(string: "https://example.com/\(i)?q=a%09b") ?? URL(fileURLWithPath: "/")),
            ])
            for p in 0..<(i % 3) {
                let part = try ctx.insert("Part", ["label": .string("p\(p)\t\(i)")])
                try item.addObject(part, forKey: "parts")
            }
            expected[i == 0 ? .min : Int64(i) * 1_000_003] = (name, blob)
        }
        try ctx.save()
        let reader = try coordinator(url).newContext()
        let items = try reader.fetch(FetchRequest(entity: "Item"))
        #expect(items.count == 300)
        for item in items {
            guard case .integer64(let n) = try item.value(forKey: "n"), let (name, blob) = expected[n] else {
                Issue.record("an item came back without its number")
                continue
            }
            #expect(try item.value(forKey: "name") == .string(name))
            #expect(try item.value(forKey: "blob") == .binary(blob))
            let parts = try item.objects(forKey: "parts")
            #expect(try parts.map { try $0.value(forKey: "label") } == (0..<parts.count).map { StoreValue.string("p\($0)\t\(n == .min ? 0 : n / 1_000_003)") })
        }
        let negativeZero = try reader.fetch(FetchRequest(entity: "Item", predicate: try FetchPredicate("n == 1000003"))).first
        if case .double(let x) = try negativeZero?.value(forKey: "x") { #expect(x == 0 && x.sign == .minus) } else { Issue.record("-0 lost") }
        #expect(try reader.count(FetchRequest(entity: "Part")) == 300)
    }

    /// A duplicate in a copied save is the uniqueness violation of the constraint, and nothing of the save is stored.
    @Test func refusedCopyLeavesNothing() throws {
        let url = try PostgresTestServer.shared().storeURL("copyrefused")
        defer { try? PostgresStoreBackend().destroyStore(at: url) }
        let c = try coordinator(url)
        let store = try #require(c.stores.first?.store)
        let schema = try Self.schema()
        let item = try schema.requireEntity("Item")
        let first = try store.allocatePrimaryKeys(root: "Item", count: 50)
        let records = (0..<50).map { i -> Record in
            var r = item.newRecord(primaryKey: first + Int64(i), globalID: UUID())
            r.attributes[item.attributeIndex("n") ?? 0] = .integer64(i == 49 ? 7 : Int64(i))
            return r
        }
        #expect {
            try store.save(StoreChanges(inserted: records))
        } throws: { error in
            guard case StoreError.uniquenessViolation(let entity, let attributes, _, _) = error else { return false }
            return entity == "Item" && attributes == ["n"]
        }
        #expect(try store.count(FetchRequest(entity: "Item")) == 0, "a refused COPY stores nothing")
        try store.save(StoreChanges(inserted: Array(records.prefix(49))))
        #expect(try store.count(FetchRequest(entity: "Item")) == 49, "the connection is usable after a refused COPY")
    }

    /// The server process is terminated while an NDJSON import's one save is copying its rows: the import fails
    /// with a typed error naming the server (without the password), nothing of it is visible, and the next
    /// operation reconnects.
    @Test func killedServerProcessMidImport() throws {
        let url = try PostgresTestServer.shared().storeURL("killimport")
        defer { try? PostgresStoreBackend().destroyStore(at: url) }
        let c = try coordinator(url)
        let store = try #require(c.stores.first?.store as? PostgresPersistentStore)
        let location = try PostgresLocation(url)
        let admin = try PostgresConnection(location, connectTimeout: 5)
        defer { admin.close() }
        let q = "\"\(location.schema)\""
        // A trigger slows each copied row down, so the copy is still running when its server process is killed.
        try admin.execute("CREATE FUNCTION \(q).slow() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_sleep(0.005); RETURN NEW; END $$")
        try admin.execute("CREATE TRIGGER slow BEFORE INSERT ON \(q).\"E_Item\" FOR EACH ROW EXECUTE FUNCTION \(q).slow()")
        let lines = (0..<2_000).map { "{\"entity\":\"Item\",\"attributes\":{\"name\":\"item \($0)\",\"n\":\($0)}}" }.joined(separator: "\n")
        let pid = store.backendPID
        try #require(pid > 0)
        let killer = try PostgresConnection(location, connectTimeout: 5)
        let killed = DispatchSemaphore(value: 0)
        Thread {
            usleep(1_500_000)
            _ = try? killer.execute("SELECT pg_terminate_backend($1)", [String(pid)])
            killed.signal()
        }.start()
        #expect {
            try NDJSONImporter().importRecords(from: Data(lines.utf8), into: store)
        } throws: { error in
            guard case StoreError.io = error else { return false }
            return "\(error)".contains("127.0.0.1") || "\(error)".contains(location.schema)
        }
        killed.wait()
        killer.close()
        try admin.execute("DROP TRIGGER slow ON \(q).\"E_Item\"")
        #expect(try store.count(FetchRequest(entity: "Item")) == 0, "nothing of the killed import is visible")
        let summary = try NDJSONImporter().importRecords(from: Data(lines.utf8), into: store)
        #expect(summary.inserted == 2_000, "the next import reconnects")
    }
}
