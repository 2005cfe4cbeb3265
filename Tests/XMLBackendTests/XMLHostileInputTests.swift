import Foundation
import StoreAPI
import StoreTestSupport
import Testing
import XMLBackend

/// Reads `url` expecting ``StoreError/corruptStore(_:reason:)``; returns the reason.
@discardableResult
func expectCorrupt(_ url: URL, _ fragments: [String] = [], sourceLocation: SourceLocation = #_sourceLocation) -> String? {
    do {
        try XMLStoreBackend().readStore(at: url) { _ in }
        Issue.record("reading \(url.lastPathComponent) should fail", sourceLocation: sourceLocation)
    } catch StoreError.corruptStore(let u, let reason) {
        #expect(u == url, sourceLocation: sourceLocation)
        for f in fragments {
            #expect(reason.contains(f), "reason '\(reason)' should mention '\(f)'", sourceLocation: sourceLocation)
        }
        return reason
    } catch {
        Issue.record("expected corruptStore, got \(error)", sourceLocation: sourceLocation)
    }
    return nil
}

/// Bad input of every kind is a typed error naming the file and line; nothing hostile is ever followed.
@Suite struct XMLHostileInputTests {
    @Test func everyTruncationOfAStoreIsReported() throws {
        let dir = try TemporaryDirectory("xmlstore-tests")
        let url = dir.path("full.xml")
        let schema = try Fixture.schema()
        let store = try openStore(url, creating: Fixture.metadata(schema))
        try store.save(StoreChanges(inserted: [
            schema.record("Author", 1, ["name": "Ann"], ["books": .toMany([2])]),
            schema.record("Book", 2, ["title": "T\u{1}"], ["author": .toOne(1)]),
        ], history: [HistoryTransaction(token: HistoryTransaction.assignToken, timestamp: Date(), author: "x", changes: [])]))
        try store.close()
        let data = try Data(contentsOf: url)
        guard let end = data.range(of: Data("</database>".utf8))?.upperBound else {
            Issue.record("no </database> in the written file")
            return
        }
        let cut = dir.path("cut.xml")
        for length in stride(from: 0, to: end, by: 41) {
            try data.prefix(length).write(to: cut)
            expectCorrupt(cut)
        }
        try data.prefix(end - 1).write(to: cut)
        expectCorrupt(cut, ["line"])
        // Through the framework too, and the damaged file is left alone.
        let before = try Data(contentsOf: cut)
        #expect(throws: StoreError.self) { _ = try openStore(cut) }
        #expect(try Data(contentsOf: cut) == before)
    }

    @Test func malformedXMLIsReportedWithItsLine() throws {
        let dir = try TemporaryDirectory("xmlstore-tests")
        let url = try dir.write(coreDataDocument("""
            <object type="A" id="z1">
                <attribute name="x" type="string">ok</attribute>
            </objekt>
            """), to: "malformed.xml")
        expectCorrupt(url, ["line 12"])
    }

    @Test func unknownAttributeTypeIsReported() throws {
        let dir = try TemporaryDirectory("xmlstore-tests")
        let url = try dir.write(coreDataDocument("""
            <object type="A" id="z1">
                <attribute name="x" type="complex">1+2i</attribute>
            </object>
            """), to: "type.xml")
        expectCorrupt(url, ["unknown attribute type 'complex'", "line 11"])
    }

    @Test func invalidValuesAreReported() throws {
        let dir = try TemporaryDirectory("xmlstore-tests")
        for (type, text) in [("int16", "40000"), ("int32", "1.5"), ("bool", "maybe"), ("binary", "!!!"), ("double", "0x1p3"),
                             ("date", "yesterday"), ("decimal", "12,5"), ("uuid", "not-a-uuid")] {
            let url = try dir.write(coreDataDocument("""
                <object type="A" id="z1">
                    <attribute name="x" type="\(type)">\(text)</attribute>
                </object>
                """), to: "value-\(type).xml")
            expectCorrupt(url, ["is not a valid \(type)", "line 11"])
        }
    }

    @Test func danglingIDRefsAreReported() throws {
        let dir = try TemporaryDirectory("xmlstore-tests")
        let url = try dir.write(coreDataDocument("""
            <object type="A" id="z1">
                <relationship name="b" type="0/0" destination="B" idrefs="z2 z99"></relationship>
            </object>
            <object type="B" id="z2"></object>
            """), to: "dangling.xml")
        expectCorrupt(url, ["'z99'", "line 11"])
        // A to-one naming two objects is as wrong.
        let two = try dir.write(coreDataDocument("""
            <object type="A" id="z1">
                <relationship name="b" type="0/1" destination="B" idrefs="z2 z3"></relationship>
            </object>
            <object type="B" id="z2"></object>
            <object type="B" id="z3"></object>
            """), to: "two.xml")
        expectCorrupt(two, ["to-one"])
    }

    @Test func wrongElementOrderIsReported() throws {
        let dir = try TemporaryDirectory("xmlstore-tests")
        let objectFirst = try dir.write("""
            <?xml version="1.0"?>
            <database>
                <object type="A" id="z1"></object>
                <databaseInfo></databaseInfo>
            </database>
            """, to: "order1.xml")
        expectCorrupt(objectFirst, ["<databaseInfo> must come first", "line 3"])

        // In our own layout, objects after the history are refused.
        let schema = try Fixture.schema()
        let store = dir.path("ours.xml")
        let s = try openStore(store, creating: Fixture.metadata(schema))
        try s.save(StoreChanges(inserted: [schema.record("Tag", 1)], history: [
            HistoryTransaction(token: HistoryTransaction.assignToken, timestamp: Date(), author: nil, changes: []),
        ]))
        try s.close()
        var text = try String(contentsOf: store, encoding: .utf8)
        text = text.replacingOccurrences(of: "</database>", with: "<object type=\"Tag\" id=\"z9\" pk=\"9\" gid=\"\(UUID().uuidString)\"></object></database>")
        let late = try dir.write(text, to: "order2.xml")
        expectCorrupt(late, ["after <history>"])

        let nested = try dir.write(coreDataDocument("""
            <object type="A" id="z1"><object type="A" id="z2"></object></object>
            """), to: "order3.xml")
        expectCorrupt(nested, ["unexpected <object> in <object>"])

        let stray = try dir.write(coreDataDocument("text between objects"), to: "order4.xml")
        expectCorrupt(stray, ["unexpected text"])
    }

    @Test func damagedValuesInOurLayoutAreReported() throws {
        let dir = try TemporaryDirectory("xmlstore-tests")
        let url = dir.path("ours.xml")
        let schema = try Fixture.schema()
        let store = try openStore(url, creating: Fixture.metadata(schema))
        try store.save(StoreChanges(inserted: [
            schema.record("Item", 1, ["i16": .integer16(5), "str": "plain", "ident": .uuid(UUID())]),
            schema.record("Author", 2, [:], ["books": .toMany([3])]),
            schema.record("Book", 3, [:], ["author": .toOne(2)]),
        ]))
        try store.close()
        let text = try String(contentsOf: url, encoding: .utf8)
        let cases: [(String, String, [String])] = [
            ("type=\"int16\">5<", "type=\"int16\">5x<", ["'5x' is not a valid int16 for 'Item.i16'"]),
            ("type=\"int16\">5<", "type=\"int32\">5<", ["stored as 'int32'"]),
            ("type=\"int16\">5<", "type=\"int17\">5<", ["unknown attribute type 'int17'"]),
            ("name=\"i16\"", "name=\"i17\"", ["no attribute 'i17'"]),
            ("type=\"string\">plain<", "type=\"string\" enc=\"escaped\">pl\\qain<", ["is not a valid string (escaped)"]),
            ("type=\"string\">plain<", "type=\"string\" enc=\"rot13\">plain<", ["enc=\"rot13\""]),
            ("pk=\"1\"", "pk=\"one\"", ["invalid pk 'one'"]),
            ("pk=\"1\"", "pk=\"2\"", []),  // Item 2 does not exist, Author 2 is another hierarchy: fine
            ("pk=\"3\"", "pk=\"1\"", []),  // Book 1: another hierarchy than Item 1: fine
            (">2</relationship>", ">2 4</relationship>", ["to-one relationship 'Book.author' holds 2 keys"]),
            (">2</relationship>", ">p2</relationship>", ["holds something other than primary keys"]),
            ("<object type=\"Item\"", "<object type=\"Animal\"", ["abstract entity 'Animal'"]),
            ("<object type=\"Item\"", "<object type=\"Nope\"", ["unknown entity 'Nope'"]),
        ]
        for (i, (find, replace, fragments)) in cases.enumerated() {
            guard text.contains(find) else {
                Issue.record("case \(i): '\(find)' not in the written file")
                continue
            }
            let damaged = try dir.write(text.replacingOccurrences(of: find, with: replace), to: "damaged\(i).xml")
            if fragments.isEmpty {
                try XMLStoreBackend().readStore(at: damaged) { _ in }
            } else {
                expectCorrupt(damaged, fragments + ["line"])
            }
        }
        // The same key twice in one hierarchy.
        guard let objectStart = text.range(of: "<object type=\"Item\""),
              let objectEnd = text.range(of: "</object>", range: objectStart.upperBound..<text.endIndex)
        else {
            Issue.record("no Item object in the written file")
            return
        }
        let item = String(text[objectStart.lowerBound..<objectEnd.upperBound])
        let twice = try dir.write(text.replacingOccurrences(of: item, with: item + "\n" + item), to: "twice.xml")
        expectCorrupt(twice, ["primary key 1 is used twice in Item"])
    }

    @Test func externalEntitiesAreNeverRead() throws {
        let dir = try TemporaryDirectory("xmlstore-tests")
        let secret = "TOP-SECRET-\(UUID().uuidString)"
        let secretFile = try dir.write(secret, to: "secret.txt")
        let dtdFile = try dir.write("<!ENTITY leak \"\(secret)\">", to: "leak.dtd")
        let cases = [
            // A general entity in element content.
            coreDataDocument("""
                <object type="A" id="z1"><attribute name="x" type="string">&xxe;</attribute></object>
                """, doctype: "<!DOCTYPE database [<!ENTITY xxe SYSTEM \"\(secretFile.absoluteString)\">]>"),
            // In an attribute value.
            coreDataDocument("<object type=\"&xxe;\" id=\"z1\"></object>",
                             doctype: "<!DOCTYPE database [<!ENTITY xxe SYSTEM \"\(secretFile.absoluteString)\">]>"),
            // A parameter entity pulling in a DTD that defines an entity holding the secret.
            coreDataDocument("""
                <object type="A" id="z1"><attribute name="x" type="string">&leak;</attribute></object>
                """, doctype: "<!DOCTYPE database [<!ENTITY % p SYSTEM \"\(dtdFile.absoluteString)\"> %p;]>"),
            // An external DTD subset.
            coreDataDocument("""
                <object type="A" id="z1"><attribute name="x" type="string">&leak;</attribute></object>
                """, doctype: "<!DOCTYPE database SYSTEM \"\(dtdFile.absoluteString)\">"),
        ]
        for (i, doc) in cases.enumerated() {
            let url = try dir.write(doc, to: "xxe\(i).xml")
            var seen: [String] = []
            do {
                try XMLStoreBackend().readStore(at: url) { element in seen.append("\(element)") }
                Issue.record("case \(i): a document with entity references must be refused")
            } catch let error as StoreError {
                guard case .corruptStore = error else {
                    Issue.record("case \(i): expected corruptStore, got \(error)")
                    continue
                }
                #expect(!error.description.contains(secret), "case \(i): the secret leaked into the error")
            }
            #expect(!seen.joined().contains(secret), "case \(i): the secret leaked into the records")
        }
    }

    @Test func billionLaughsIsRefused() throws {
        let dir = try TemporaryDirectory("xmlstore-tests")
        var entities = ["<!ENTITY lol0 \"lollollollollollollollollollol\">"]
        for i in 1...12 {
            entities.append("<!ENTITY lol\(i) \"\(String(repeating: "&lol\(i - 1);", count: 10))\">")
        }
        let doctype = "<!DOCTYPE database [\n\(entities.joined(separator: "\n"))\n]>"
        let inContent = try dir.write(coreDataDocument("""
            <object type="A" id="z1"><attribute name="x" type="string">&lol12;</attribute></object>
            """, doctype: doctype), to: "laughs1.xml")
        expectCorrupt(inContent)
        let inAttribute = try dir.write(coreDataDocument("<object type=\"&lol12;\" id=\"z1\"></object>", doctype: doctype),
                                        to: "laughs2.xml")
        expectCorrupt(inAttribute)
        // A single internal entity is still an entity: stores never contain them.
        let plain = try dir.write(coreDataDocument("""
            <object type="A" id="z1"><attribute name="x" type="string">&e;</attribute></object>
            """, doctype: "<!DOCTYPE database [<!ENTITY e \"x\">]>"), to: "entity.xml")
        expectCorrupt(plain, ["declares entities"])
    }

    @Test func deepNestingIsRefused() throws {
        let dir = try TemporaryDirectory("xmlstore-tests")
        let depth = 1_000_000
        var doc = "<database><databaseInfo></databaseInfo><object type=\"A\" id=\"z1\">"
        doc += String(repeating: "<a>", count: depth) + String(repeating: "</a>", count: depth)
        doc += "</object></database>"
        let url = try dir.write(doc, to: "deep.xml")
        expectCorrupt(url, ["line 1"])
        // Deep nesting inside the metadata property list hits our own limit, with its message.
        let plist = String(repeating: "<array>", count: 100) + String(repeating: "</array>", count: 100)
        let deepPlist = try dir.write("""
            <database><databaseInfo><metadata><plist version="1.0">\(plist)</plist></metadata></databaseInfo></database>
            """, to: "deep-plist.xml")
        expectCorrupt(deepPlist, ["nested deeper than 64"])
    }

    @Test func entityDeclarationsAreRefusedWhereverTheyAreUsed() throws {
        let dir = try TemporaryDirectory("xmlstore-tests")
        let big = String(repeating: "x", count: 10_000)
        let cases: [(String, String, String)] = [
            // libxml2 substitutes small internal entities in attribute values even without XML_PARSE_NOENT.
            ("attribute", "<!DOCTYPE database [<!ENTITY t \"A\">]>", "<object type=\"&t;\" id=\"z1\"></object>"),
            ("unused", "<!DOCTYPE database [<!ENTITY t \"A\">]>", "<object type=\"A\" id=\"z1\"></object>"),
            ("parameter", "<!DOCTYPE database [<!ENTITY % p \"<!ENTITY t 'A'>\"> %p;]>", "<object type=\"A\" id=\"z1\"></object>"),
            ("quadratic", "<!DOCTYPE database [<!ENTITY a \"\(big)\">]>",
             "<object type=\"" + String(repeating: "&a;", count: 50_000) + "\" id=\"z1\"></object>"),
        ]
        for (name, doctype, objects) in cases {
            let url = try dir.write(coreDataDocument(objects, doctype: doctype), to: "entities-\(name).xml")
            expectCorrupt(url, ["declares entities", "line"])
        }
        // Core Data's own DOCTYPE (a system identifier, never loaded) is fine.
        let plain = try dir.write(coreDataDocument("<object type=\"A\" id=\"z1\"></object>",
                                                   doctype: "<!DOCTYPE database SYSTEM \"file:///System/Library/DTDs/CoreData.dtd\">"),
                                  to: "coredata-doctype.xml")
        try XMLStoreBackend().readStore(at: plain) { _ in }
    }

    /// libxml2 2.9 checks every attribute name against all earlier ones of the element: 100,000 attributes (1 MB)
    /// would take it about half an hour. The reader stops at the 257th, before libxml2 sees the tag.
    @Test func manyAttributesAreRefusedBeforeLibxml2SeesThem() throws {
        let dir = try TemporaryDirectory("xmlstore-tests")
        let attributes = (0..<100_000).map { "a\($0)=\"x\"" }.joined(separator: " ")
        let url = try dir.write(coreDataDocument("<object type=\"A\" id=\"z1\"\n \(attributes)></object>"), to: "attributes.xml")
        expectCorrupt(url, ["more than 256 attributes", "line 11"])
        #expect(throws: StoreError.self) { _ = try openStore(url) }
        // 256 attributes are many, but allowed; the document then reads (the extra attributes are ignored).
        let allowed = (0..<254).map { "a\($0)=\"x\"" }.joined(separator: " ")
        let ok = try dir.write(coreDataDocument("<object type=\"A\" id=\"z1\" \(allowed)></object>"), to: "allowed.xml")
        try XMLStoreBackend().readStore(at: ok) { _ in }
        // What only looks like attributes is not counted: comments, CDATA, processing instructions, values, text.
        let many = String(repeating: "a=\"b\" ", count: 1_000)
        let lookalikes = try dir.write(coreDataDocument("""
            <!-- \(many) -->
            <?pi \(many)?>
            <object type="A" id="z1"><attribute name="x" type="string"><![CDATA[\(many)<>]]>\(many.replacingOccurrences(of: "\"", with: "&quot;"))</attribute></object>
            <object type="A" id="z2" note="&gt; \(many.replacingOccurrences(of: "\"", with: "'"))"></object>
            """, doctype: "<!DOCTYPE database [<!-- ] \(many) --> <?pi ] > ?>]>"), to: "lookalikes.xml")
        try XMLStoreBackend().readStore(at: lookalikes) { _ in }
    }

    @Test func invalidCharactersAreReportedWithTheirLine() throws {
        let dir = try TemporaryDirectory("xmlstore-tests")
        let object = "<object type=\"A\" id=\"z1\"><attribute name=\"x\" type=\"string\">VALUE</attribute></object>"
        let parts = coreDataDocument(object).components(separatedBy: "VALUE")
        let invalid: [[UInt8]] = [[0x00], [0xC3, 0x28, 0xFF], [0xED, 0xA0, 0x80], [0xEF, 0xBF, 0xBE], [0x01], [0xF8, 0x88, 0x80, 0x80, 0x80]]
        for (i, bad) in invalid.enumerated() {
            let url = dir.path("chars\(i).xml")
            try (Data(parts[0].utf8) + Data(bad) + Data(parts[1].utf8)).write(to: url)
            expectCorrupt(url, ["line 10"])
        }
        for (i, reference) in ["&#0;", "&#x110000;", "&#xD800;", "&#xFFFE;", "&#1;"].enumerated() {
            let url = try dir.write(coreDataDocument(object.replacingOccurrences(of: "VALUE", with: reference)), to: "refs\(i).xml")
            expectCorrupt(url, ["line 10"])
        }
    }

    @Test func garbageAndWrongRootsAreReported() throws {
        let dir = try TemporaryDirectory("xmlstore-tests")
        expectCorrupt(try dir.write("", to: "empty.xml"))
        expectCorrupt(try dir.write("just text", to: "text.xml"))
        expectCorrupt(try dir.write("<root><database/></root>", to: "root.xml"), ["<root>"])
        expectCorrupt(try dir.write("<database/>", to: "bare.xml"), ["no <databaseInfo>"])
        var binary = Data((0..<4096).map { UInt8(truncatingIfNeeded: $0 &* 31) })
        binary[0] = UInt8(ascii: "<")
        let garbage = dir.path("garbage.xml")
        try binary.write(to: garbage)
        expectCorrupt(garbage)
        // Our layout with a broken metadata document.
        let badMeta = try dir.write(coreDataDocument("", info: "<storeMetadata format=\"storeapi-json\">{not json</storeMetadata>"),
                                    to: "meta.xml")
        expectCorrupt(badMeta, ["storeMetadata", "line"])
        let newer = try dir.write(coreDataDocument("", info: "<storeMetadata formatVersion=\"99\">{}</storeMetadata>"), to: "newer.xml")
        expectCorrupt(newer, ["format 99"])
        #expect(throws: StoreError.self) { try XMLStoreBackend().readStore(at: dir.path("missing.xml")) { _ in } }
    }

    @Test func libxml2PrintsNothing() throws {
        let dir = try TemporaryDirectory("xmlstore-tests")
        let files = [
            try dir.write("<database><databaseInfo></databaseInfo><object type=\"A\" id=\"z1\"></database>", to: "a.xml"),
            try dir.write(coreDataDocument("<object type=\"&e;\" id=\"z1\"/>", doctype: "<!DOCTYPE database [<!ENTITY e SYSTEM \"file:///nonexistent\">]>"), to: "b.xml"),
            try dir.write("<database>&undefined;</database>", to: "c.xml"),
            try dir.write("<?xml version=\"1.0\" encoding=\"bogus-8\"?><database/>", to: "d.xml"),
            try dir.write(coreDataDocument("<object type=\"A\" id=\"z1\"/>").replacingOccurrences(of: "D1E2667A", with: "\u{FFFF}"), to: "e.xml"),
        ]
        let invalidUTF8 = dir.path("f.xml")
        try (Data("<database><databaseInfo/><object type=\"".utf8) + Data([0xC3, 0x28, 0xFF]) + Data("\" id=\"z1\"/></database>".utf8)).write(to: invalidUTF8)
        let schema = try Fixture.schema()
        let captured = try captureStandardError {
            for f in files + [invalidUTF8] { _ = try? XMLStoreBackend().readStore(at: f) { _ in } }
            for f in files + [invalidUTF8] { _ = XMLStoreBackend().sniff(f) }
            // Writing too: a whole store with every kind of value, then reading it back.
            if let store = try? openStore(dir.path("w.xml"), creating: Fixture.metadata(schema)) {
                _ = try? store.save(StoreChanges(inserted: [schema.record("Item", 1, ["str": "\u{0}x", "blob": .binary(Data([1]))])]))
                _ = try? store.close()
            }
            _ = try? XMLStoreBackend().readStore(at: dir.path("w.xml")) { _ in }
        }
        #expect(captured.isEmpty, "libxml2 wrote to stderr: \(captured)")
    }
}

/// Runs `body` with file descriptor 2 redirected to a temporary file and returns what was written there.
func captureStandardError(_ body: () throws -> Void) throws -> String {
    let dir = try TemporaryDirectory("xmlstore-tests")
    let path = dir.path("stderr.txt").path
    fflush(nil)
    let saved = dup(2)
    let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
    guard saved >= 0, fd >= 0 else { throw StoreError.io(nil, operation: "redirect stderr", reason: "dup/open failed") }
    dup2(fd, 2)
    close(fd)
    defer {
        fflush(nil)
        dup2(saved, 2)
        close(saved)
    }
    try body()
    fflush(nil)
    return (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
}
