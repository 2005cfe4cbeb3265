import Foundation
import JSONStoreBackend
import StoreAPI
import Testing

/// What the conformance suite cannot know about this backend: its file format, its sniffing of other JSON, its
/// errors for damaged files and its size cap.
@Suite struct JSONStoreFileTests {
    let backend = JSONStoreBackend()

    @Test func sniffTellsStoresOtherJSONAndEverythingElseApart() throws {
        let dir = try TemporaryDirectory()
        let store = dir.file("store.json")
        try makeStore(at: store)
        #expect(backend.sniff(store) == .store)

        let otherJSON = [
            "object.json": #"{"name": "not a store"}"#,
            "array.json": "[1, 2, 3]\n",
            "other-format.json": #"{"format": "something else", "formatVersion": 1}"#,
            "format-not-first.json": #"{"records": [], "format": "storeapi.json-store"}"#,
        ]
        for (name, text) in otherJSON {
            try Data(text.utf8).write(to: dir.file(name))
            #expect(backend.sniff(dir.file(name)) == .foreign("JSON document, but not a store"), "\(name)")
        }
        let notJSON: [String: [UInt8]] = [
            "empty.json": [], "text.json": Array("just text\n".utf8), "broken.json": Array(#"{"name": "#.utf8),
            "binary.bin": [0x00, 0xFF, 0x7B, 0x13, 0x37],
        ]
        for (name, bytes) in notJSON {
            try Data(bytes).write(to: dir.file(name))
            #expect(backend.sniff(dir.file(name)) == .none, "\(name)")
        }
        #expect(backend.sniff(dir.file("missing.json")) == .none)
        #expect(backend.sniff(dir.url) == .none, "a directory is not a store")

        // The registry turns `.foreign` into an error that says what the file is.
        let registry = BackendRegistry(backends: [backend])
        do {
            _ = try registry.detectBackend(at: dir.file("object.json"))
            Issue.record("other JSON must not be detected as a store")
        } catch {
            guard case .unrecognizedStore(_, let reason) = error else { Issue.record("got \(error)"); return }
            #expect(reason == "JSON document, but not a store")
        }
    }

    @Test func theStoreIsAPlainJSONDocument() throws {
        let dir = try TemporaryDirectory()
        let url = dir.file("store.json")
        try makeStore(at: url, tags: 5, history: true)
        let data = try Data(contentsOf: url)
        let document = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        #expect(document["format"] as? String == JSONStoreFormat.formatName)
        #expect((document["records"] as? [Any])?.count == 6, "5 tags and 1 author")
        #expect((document["history"] as? [Any])?.count == 2, "one transaction per save")
        // One record per line, after the format line, the metadata line and the `"records":[` line.
        let lines = String(decoding: data, as: UTF8.self).split(separator: "\n")
        #expect(lines.filter { $0.hasPrefix(#"{"attributes":"#) }.count == 6)
        #expect(try backend.readMetadata(at: url).storeType == "json")

        // Reading the store and writing it back gives the same bytes: nothing is lost or reordered on the way.
        try backend.writeMetadata(try backend.readMetadata(at: url), at: url)
        #expect(try Data(contentsOf: url) == data)
    }

    @Test func metadataIsReadFromTheHeaderWithoutParsingRecords() throws {
        let dir = try TemporaryDirectory()
        let url = dir.file("store.json")
        try makeStore(at: url)
        let metadata = try backend.readMetadata(at: url)

        // Damage everything after the metadata line: readMetadata still answers, a full open does not.
        var text = try String(contentsOf: url, encoding: .utf8)
        let recordsStart = try #require(text.range(of: "\"records\":["))
        text.replaceSubrange(recordsStart.upperBound..., with: "{\"entity\": tru")
        try Data(text.utf8).write(to: url)
        #expect(try backend.readMetadata(at: url) == metadata)
        #expect(throws: StoreError.self) { _ = try openStore(at: url) }
    }

    @Test func aReindentedStoreStillOpens() throws {
        let dir = try TemporaryDirectory()
        let url = dir.file("store.json")
        try makeStore(at: url)
        let metadata = try backend.readMetadata(at: url)
        let original = try String(contentsOf: url, encoding: .utf8)
        let reindented = original.replacingOccurrences(
            of: "{\"format\":\"storeapi.json-store\",\"formatVersion\":1,\n\"metadata\":",
            with: "{\n  \"format\": \"storeapi.json-store\",\n  \"formatVersion\": 1,\n  \"metadata\": ")
        #expect(reindented != original)
        try Data(reindented.utf8).write(to: url)

        #expect(backend.sniff(url) == .store, "whitespace between the magic tokens is allowed")
        #expect(try backend.readMetadata(at: url) == metadata, "falls back to parsing the whole document")
        let store = try openStore(at: url)
        defer { try? store.close() }
        #expect(try store.count(FetchRequest(entity: "Tag")) == 3)
    }

    @Test func damagedFilesGetCorruptStoreErrorsAndStayAsTheyWere() throws {
        let dir = try TemporaryDirectory()
        let url = dir.file("store.json")
        try makeStore(at: url, history: true)
        let good = try String(contentsOf: url, encoding: .utf8)
        let firstLine = try #require(good.split(separator: "\n").first { $0.hasPrefix(#"{"attributes":"#) })
        let firstRecord = String(firstLine.dropLast())  // without the comma that separates it from the next one

        let damages: [(what: String, damage: (String) -> String, reason: String)] = [
            ("truncated", { String($0.prefix($0.utf8.count * 2 / 3)) }, "not valid JSON"),
            ("wrong value type", { $0.replacingOccurrences(of: #""name":"tag 1""#, with: #""name":42"#) }, "attribute 'name' is not a valid string"),
            ("unknown entity", { $0.replacingOccurrences(of: #""entity":"Author""#, with: #""entity":"Nope""#) }, "names entity 'Nope'"),
            ("unknown attribute", { $0.replacingOccurrences(of: #"{"name":"tag 2"}"#, with: #"{"name":"tag 2","colour":"red"}"#) }, "has no attribute named colour"),
            ("fractional key", { $0.replacingOccurrences(of: #""pk":1,"#, with: #""pk":1.5,"#) }, "has no integer \"pk\""),
            ("not a store", { _ in #"{"format": "storeapi.json-store", "records": []}"# }, "\"formatVersion\" is missing"),
            ("duplicate key", { $0.replacingOccurrences(of: "[\n" + firstRecord, with: "[\n" + firstRecord + ",\n" + firstRecord) }, "reuses primary key"),
            ("history out of order", { $0.replacingOccurrences(of: #""token":1}"#, with: #""token":7}"#) }, "has token 2, not after 7"),
        ]
        for (what, damage, reason) in damages {
            let bad = damage(good)
            #expect(bad != good, "\(what): the damage must change the file")
            try Data(bad.utf8).write(to: url)
            let listing = try FileManager.default.contentsOfDirectory(atPath: dir.url.path).sorted()
            do {
                _ = try openStore(at: url, readOnly: false)
                Issue.record("\(what): opening a damaged store must fail")
            } catch let error as StoreError {
                guard case .corruptStore(let at, let why) = error else {
                    Issue.record("\(what): expected corruptStore, got \(error)")
                    continue
                }
                #expect(at == url && why.contains(reason), "\(what): \(why)")
            }
            #expect(try String(contentsOf: url, encoding: .utf8) == bad, "\(what): a failed open must not touch the file")
            #expect(try FileManager.default.contentsOfDirectory(atPath: dir.url.path).sorted() == listing, "\(what): nothing left behind")
            #expect(try backend.checkIntegrity(at: url).count == 1, "\(what): checkIntegrity reports it")
        }

        // A file from a newer version of the backend is not damaged, just not readable by this one.
        try Data(good.replacingOccurrences(of: #""formatVersion":1,"#, with: #""formatVersion":99,"#).utf8).write(to: url)
        do {
            _ = try openStore(at: url)
            Issue.record("a newer format must be refused")
        } catch {
            guard case .unsupported(let why) = error as? StoreError else { Issue.record("got \(error)"); return }
            #expect(why.contains("format 99"))
        }
    }

    @Test func filesOverTheSizeCapAreRefusedOnReadAndOnWrite() throws {
        let dir = try TemporaryDirectory()
        let url = dir.file("store.json")
        try makeStore(at: url)
        let size = try #require(try FileManager.default.attributesOfItem(atPath: url.path)[.size] as? Int)
        let before = try Data(contentsOf: url)

        #expect(throws: StoreError.self, "a file over the cap is refused before it is read") {
            _ = try openStore(at: url, backend: JSONStoreBackend(maxFileBytes: size - 1))
        }

        // A save that would grow the file past the cap fails, and the store keeps its old contents.
        let roomy = JSONStoreBackend(maxFileBytes: size + 200)
        let store = try openStore(at: url, backend: roomy, readOnly: false)
        let tag = try #require(store.metadata.schema.entity(named: "Tag"))
        var big = tag.newRecord(primaryKey: try store.allocatePrimaryKeys(root: "Tag", count: 1))
        big.attributes[0] = .string(String(repeating: "x", count: 1000))
        do {
            try store.save(StoreChanges(inserted: [big]))
            Issue.record("a save past the cap must fail")
        } catch let error as StoreError {
            guard case .refused = error else { Issue.record("expected refused, got \(error)"); return }
        }
        try store.close()
        #expect(try Data(contentsOf: url) == before)
    }
}
