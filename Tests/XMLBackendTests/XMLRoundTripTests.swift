import Foundation
import StoreAPI
import StoreTestSupport
import Testing
import XMLBackend

/// Values, relationships, history and metadata survive a save, a close and a reopen exactly.
@Suite struct XMLRoundTripTests {
    /// Edge values per attribute, cycled over the items so every value is stored at least once.
    static func edgeValues() -> [String: [StoreValue]] {
        let longText = String(repeating: "ü€😀x", count: 400_000)  // > 1 MB of UTF-8: split into several text nodes
        var bigBinary = Data(count: 12_000_000)  // base64 > 10 MB: over libxml2's single-text-node limit
        bigBinary.withUnsafeMutableBytes { raw in
            for i in raw.indices { raw[i] = UInt8(truncatingIfNeeded: i &* 2_654_435_761 >> 7) }
        }
        let d = { (s: String) -> StoreValue in .decimal(Decimal(string: s, locale: Locale(identifier: "en_US_POSIX")) ?? 0) }
        return [
            "i16": [.integer16(.min), .integer16(.max), .integer16(0), .integer16(-1)],
            "i32": [.integer32(.min), .integer32(.max), .integer32(0)],
            "i64": [.integer64(.min), .integer64(.max), .integer64(0), .integer64(-42)],
            "dec": [d("0"), d("12.50"), d("-0.001"), d("123456789012345678901234567890.12345678"),
                    .decimal(Decimal(sign: .plus, exponent: 100, significand: 7)),
                    .decimal(Decimal(sign: .minus, exponent: -100, significand: 31415)), d("1e-20")],
            "dbl": [.double(.nan), .double(.infinity), .double(-.infinity), .double(-0.0), .double(0.0), .double(0.1),
                    .double(1.0 / 3.0), .double(.leastNonzeroMagnitude), .double(.greatestFiniteMagnitude),
                    .double(-.leastNormalMagnitude), .double(Double(bitPattern: 0x7FF8_0000_0000_0001)),
                    .double(Double(bitPattern: 0xFFF8_0000_0000_0000)), .double(1e-7), .double(123456789.125)],
            "flt": [.float(.nan), .float(.infinity), .float(-.infinity), .float(-0.0), .float(0.1), .float(19.6),
                    .float(.leastNonzeroMagnitude), .float(.greatestFiniteMagnitude), .float(Float(bitPattern: 0x7FC0_0001))],
            "str": [.string(""), .string(" "), .string("\u{0}"), .string("a\u{1}b\u{1F}c\u{7F}\u{80}"), .string("\r\n\r"),
                    .string("\t lead and trail \n"), .string("<&>\"' ]]> &amp;"), .string("\\u0041 \\ and \\\\"),
                    .string("\u{FFFE}\u{FFFF}\u{FFFD}"), .string("👩‍👩‍👧 é e\u{301}"), .string("\n"), .string(longText)],
            "flag": [.boolean(true), .boolean(false)],
            "when": [.date(Date(timeIntervalSinceReferenceDate: 0)), .date(Date(timeIntervalSinceReferenceDate: -1e10)),
                     .date(Date(timeIntervalSinceReferenceDate: 0.1)), .date(.distantPast), .date(.distantFuture),
                     .date(Date(timeIntervalSinceReferenceDate: 1e-300)), .date(Date(timeIntervalSinceReferenceDate: 757_382_400.123_456_7))],
            "blob": [.binary(Data()), .binary(Data([0])), .binary(Data((0..<256).map { UInt8($0) })), .binary(bigBinary)],
            "ident": [.uuid(UUID()), .uuid(UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)))],
            "link": [.uri(URL(string: "https://example.com/a?b=c&d=e#f") ?? URL(fileURLWithPath: "/")),
                     .uri(URL(fileURLWithPath: "/tmp/a b/ü")), .uri(URL(string: "urn:x:y") ?? URL(fileURLWithPath: "/"))],
            "archived": [.binary(Data("bplist00".utf8)), .binary(Data())],
        ]
    }

    @Test func everyAttributeTypeRoundTripsWithEdgeValues() throws {
        let dir = try TemporaryDirectory("xmlstore-tests")
        let url = dir.path("values.xml")
        let schema = try Fixture.schema()
        let values = Self.edgeValues()
        let rows = values.values.map(\.count).max() ?? 0
        var records = [schema.record("Item", 1)]  // every attribute nil
        for row in 0..<rows {
            var attributes: [String: StoreValue] = [:]
            for (name, list) in values { attributes[name] = list[row % list.count] }
            records.append(schema.record("Item", Int64(row + 2), attributes))
        }
        let store = try openStore(url, creating: Fixture.metadata(schema))
        try store.save(StoreChanges(inserted: records))
        try store.close()

        let reopened = try openStore(url)
        defer { try? reopened.close() }
        let loaded = try allRecords(reopened)
        #expect(loaded.count == records.count)
        for r in records {
            let got = loaded[r.key]
            #expect(got == r, "record \(r.key) changed across close/reopen")
            if let got, got != r, let e = schema.entity(named: r.entity) {
                for (i, a) in e.attributes.enumerated() where got.attributes[i] != r.attributes[i] {
                    Issue.record("\(a.name): wrote \(String(describing: r.attributes[i]).prefix(80)), read \(String(describing: got.attributes[i]).prefix(80))")
                }
            }
        }
        // nil, empty string and empty data stay distinct.
        let item = schema.entity(named: "Item")
        if let item, let strIndex = item.attributeIndex("str"), let blobIndex = item.attributeIndex("blob") {
            #expect(loaded[RecordKey(entity: "Item", primaryKey: 1)]?.attributes[strIndex] == .null)
            #expect(loaded[RecordKey(entity: "Item", primaryKey: 2)]?.attributes[strIndex] == .string(""))
            #expect(loaded[RecordKey(entity: "Item", primaryKey: 2)]?.attributes[blobIndex] == .binary(Data()))
        }
    }

    @Test func relationshipsOfEveryKindRoundTrip() throws {
        let dir = try TemporaryDirectory("xmlstore-tests")
        let url = dir.path("graph.storexml")
        let schema = try Fixture.schema()
        let r = { (e: String, pk: Int64, a: [String: StoreValue], rel: [String: RelationshipValue]) in
            schema.record(e, pk, a, rel)
        }
        let records = [
            // One-to-many, ordered, in a deliberately unsorted order.
            r("Author", 1, ["name": "Ann"], ["books": .toMany([12, 10, 11])]),
            r("Author", 2, ["name": "Bo"], [:]),
            r("Book", 10, ["title": "B"], ["author": .toOne(1), "tags": .toMany([100, 101])]),
            r("Book", 11, ["title": "C"], ["author": .toOne(1), "tags": .toMany([101])]),
            r("Book", 12, ["title": "A"], ["author": .toOne(1), "tags": .toMany([])]),
            // Many-to-many.
            r("Tag", 100, ["label": "x"], ["books": .toMany([10])]),
            r("Tag", 101, ["label": "y"], ["books": .toMany([11, 10])]),
            // Self-referential one-to-one and ordered one-to-many, and an inverse to an abstract entity's children.
            r("Person", 1, ["name": "P1"], ["spouse": .toOne(2), "children": .toMany([3, 4]), "pets": .toMany([5, 6])]),
            r("Person", 2, ["name": "P2"], ["spouse": .toOne(1)]),
            r("Person", 3, ["name": "P3"], ["parent": .toOne(1)]),
            r("Person", 4, ["name": "P4"], ["parent": .toOne(1), "children": .toMany([999])]),  // a dangling key (noAction)
            r("Dog", 5, ["name": "Rex", "barks": true], ["owner": .toOne(1)]),
            r("Cat", 6, ["name": "Tom", "lives": .integer16(9)], ["owner": .toOne(1)]),
        ]
        let store = try openStore(url, creating: Fixture.metadata(schema))
        try store.save(StoreChanges(inserted: records))
        try store.close()

        let reopened = try openStore(url)
        defer { try? reopened.close() }
        let loaded = try allRecords(reopened)
        #expect(loaded.count == records.count)
        for rec in records {
            #expect(loaded[rec.key] == rec, "record \(rec.key) changed across close/reopen")
        }
        // Records of sub-entities are found through the abstract parent.
        #expect(try reopened.count(FetchRequest(entity: "Animal")) == 2)
        let text = try String(contentsOf: url, encoding: .utf8)
        #expect(text.contains("idrefs=\""), "relationships carry Core Data's idrefs")
    }

    @Test func historyAndMetadataSurviveReopen() throws {
        let dir = try TemporaryDirectory("xmlstore-tests")
        let url = dir.path("history.xml")
        let schema = try Fixture.schema()
        let metadata = Fixture.metadata(schema)
        let store = try openStore(url, creating: metadata)
        let book = schema.record("Book", 1, ["title": "T"])
        try store.save(StoreChanges(inserted: [book], history: [
            HistoryTransaction(token: HistoryTransaction.assignToken, timestamp: Date(timeIntervalSinceReferenceDate: 757_382_400.25),
                               author: "importer\u{0}\u{1}<&>", changes: [
                                   HistoryChange(kind: .insert, entity: "Book", primaryKey: 1, globalID: book.globalID),
                               ]),
        ]))
        try store.save(StoreChanges(deleted: [book.key], history: [
            HistoryTransaction(token: HistoryTransaction.assignToken, timestamp: Date(timeIntervalSinceReferenceDate: -0.5), author: nil, changes: [
                HistoryChange(kind: .update, entity: "Book", primaryKey: 1, globalID: book.globalID, changedKeys: ["title", "a b", "\u{2}"]),
                HistoryChange(kind: .delete, entity: "Book", primaryKey: 1, globalID: book.globalID,
                              tombstone: ["title": "T\u{0}", "isbn": ""]),
            ]),
            HistoryTransaction(token: HistoryTransaction.assignToken, timestamp: .distantFuture, author: "", changes: []),
            HistoryTransaction(token: HistoryTransaction.assignToken, timestamp: Date(timeIntervalSinceReferenceDate: 1),
                               author: nil, contextName: "view <context>", processName: "My App\u{1}",
                               bundleIdentifier: "com.example.app", changes: []),
        ]))
        let written = try store.history(after: nil)
        try store.close()

        #expect(try XMLStoreBackend().readMetadata(at: url) == metadata)
        let reopened = try openStore(url)
        defer { try? reopened.close() }
        #expect(written.count == 4)
        #expect(written.last?.contextName == "view <context>" && written.last?.processName == "My App\u{1}")
        #expect(try reopened.history(after: nil) == written)
        #expect(try reopened.history(after: 1) == Array(written.dropFirst()))
        #expect(reopened.metadata == metadata)
        #expect(try allRecords(reopened).isEmpty)
    }

    @Test func writeMetadataKeepsRecordsAndHistory() throws {
        let dir = try TemporaryDirectory("xmlstore-tests")
        let url = dir.path("meta.xml")
        let schema = try Fixture.schema()
        let store = try openStore(url, creating: Fixture.metadata(schema))
        let tag = schema.record("Tag", 7, ["label": "kept"])
        try store.save(StoreChanges(inserted: [tag], history: [
            HistoryTransaction(token: HistoryTransaction.assignToken, timestamp: Date(), author: "a", changes: []),
        ]))
        try store.close()
        var metadata = try XMLStoreBackend().readMetadata(at: url)
        metadata.custom["added"] = .string("yes \u{0}")
        try XMLStoreBackend().writeMetadata(metadata, at: url)
        #expect(try XMLStoreBackend().readMetadata(at: url) == metadata)
        let reopened = try openStore(url)
        defer { try? reopened.close() }
        #expect(try allRecords(reopened)[tag.key] == tag)
        #expect(try reopened.history(after: nil).count == 1)
    }

    /// Document ids come from primary keys, so keys far apart (sparse), negative or huge still get unique ids,
    /// every `idrefs` names an object in the file, and the store reads back unchanged.
    @Test func sparseNegativeAndLargeKeysRoundTrip() throws {
        let dir = try TemporaryDirectory("xmlstore-tests")
        let url = dir.path("keys.xml")
        let schema = try Fixture.schema()
        let store = try openStore(url, creating: Fixture.metadata(schema))
        let authors: [Int64] = [-7, 1, 1 << 40]
        var records = authors.map { schema.record("Author", $0, ["name": .string("a\($0)")], ["books": .toMany([4])]) }
        records.append(schema.record("Book", 4, ["title": "T"], ["author": .toOne(1 << 40)]))
        try store.save(StoreChanges(inserted: records))
        let before = try allRecords(store)
        try store.close()

        let text = try String(contentsOf: url, encoding: .utf8)
        let ids = text.split(separator: " ").filter { $0.hasPrefix("id=\"z") }
        #expect(Set(ids).count == 4, "\(ids)")
        // Every idref names an object of the file.
        let defined = Set(ids.map { $0.dropFirst("id=\"".count).prefix(while: { $0 != "\"" }) })
        let refs = text.components(separatedBy: "idrefs=\"").dropFirst().flatMap { $0.prefix(while: { $0 != "\"" }).split(separator: " ") }
        #expect(!refs.isEmpty && refs.allSatisfy { defined.contains($0) }, "\(refs) not all in \(defined)")

        let reopened = try openStore(url)
        defer { try? reopened.close() }
        #expect(try allRecords(reopened) == before)
    }

    @Test func writtenFileHasCoreDataLayout() throws {
        let dir = try TemporaryDirectory("xmlstore-tests")
        let url = dir.path("layout.xml")
        let schema = try Fixture.schema()
        let store = try openStore(url, creating: Fixture.metadata(schema))
        try store.save(StoreChanges(inserted: [
            schema.record("Author", 3, ["name": "Ann"], ["books": .toMany([4])]),
            schema.record("Book", 4, ["title": "T"], ["author": .toOne(3)]),
        ]))
        try store.close()
        let text = try String(contentsOf: url, encoding: .utf8)
        #expect(text.hasPrefix("<?xml version=\"1.0\" standalone=\"yes\"?>\n<!DOCTYPE database SYSTEM"))
        // Document ids are primary key × hierarchies + hierarchy + 1 (DocumentIDs): the fixture has 6 root
        // entities, Author is the second (pk 3 → z20) and Book the third (pk 4 → z27).
        #expect(schema.rootEntities.count == 6)
        for fragment in ["<database>", "<databaseInfo>", "<version>134481920</version>", "<UUID>", "<nextObjectID>28</nextObjectID>",
                         "<metadata>", "<plist version=\"1.0\">", "<storeMetadata format=\"storeapi-json\"",
                         "<object type=\"Author\" id=\"z20\" pk=\"3\"", "<attribute name=\"name\" type=\"string\">Ann</attribute>",
                         "<relationship name=\"books\" type=\"0/0\" destination=\"Book\" idrefs=\"z27\">4</relationship>",
                         "<relationship name=\"author\" type=\"0/1\" destination=\"Author\" idrefs=\"z20\">3</relationship>"] {
            #expect(text.contains(fragment), "missing \(fragment)")
        }
    }
}
