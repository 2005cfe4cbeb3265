import Foundation
import StoreTestSupport
import Testing
@testable import StoreAPI

/// Stored metadata and the schema's JSON form are read by the framework's own reader (`StoreMetadata.decode`,
/// `Schema(jsonData:)`); the Codable conformances read the same documents. These tests hold the two to the same
/// results and check the reader's rules and errors.
struct MetadataJSONReaderTests {
    private static func everythingSchema() throws -> Schema {
        try Schema(entities: [
            EntityDescription(
                name: "Item", isAbstract: true,
                attributes: [
                    AttributeDescription(name: "title", type: .string, isOptional: false, defaultValue: .string("Untitled"),
                                         userInfo: ["k": "v"]),
                    AttributeDescription(name: "price", type: .decimal, defaultValue: .decimal(Decimal(string: "12.50") ?? 0)),
                    AttributeDescription(name: "ratio", type: .double, defaultValue: .double(-0.0)),
                    AttributeDescription(name: "count", type: .integer64, defaultValue: .integer64(.min)),
                    AttributeDescription(name: "scratch", type: .string, isTransient: true),
                    AttributeDescription(name: "blob", type: .transformable, valueTransformerName: "NSSecureUnarchiveFromData"),
                ],
                uniquenessConstraints: [["title"]], userInfo: ["a": "b"], versionHashModifier: "2", representedClassName: "ItemClass"),
            EntityDescription(
                name: "Book", parent: "Item",
                attributes: [AttributeDescription(name: "pages", type: .integer32, defaultValue: .integer32(0))],
                relationships: [
                    RelationshipDescription(name: "authors", destination: "Author", inverse: "books", isToMany: true, isOrdered: true,
                                            deleteRule: .deny, minCount: 1, maxCount: 5),
                    RelationshipDescription(name: "shelf", destination: "Shelf", inverse: nil, deleteRule: .noAction, isOptional: false),
                ]),
            EntityDescription(
                name: "Author",
                attributes: [AttributeDescription(name: "name", type: .string)],
                relationships: [RelationshipDescription(name: "books", destination: "Book", inverse: "authors", isToMany: true,
                                                        deleteRule: .cascade, isTransient: false, userInfo: ["x": "y"])]),
            EntityDescription(name: "Shelf", attributes: [AttributeDescription(name: "label", type: .string)]),
        ], configurations: ["Local": ["Item", "Author"], "Cloud": ["Shelf"]])
    }

    private static func everythingMetadata() throws -> StoreMetadata {
        var m = StoreMetadata(storeType: "sqlite", schema: try everythingSchema(), configuration: "Local",
                              custom: ["s": .string("x"), "i": .integer(-3), "d": .double(0.1), "b": .bool(true), "n": .null,
                                       "a": .array([.integer(1), .string("2"), .array([])]),
                                       "o": .dictionary(["nested": .dictionary(["deep": .double(1.5e300)])])],
                              syncOptions: SyncOptions(remote: URL(string: "https://sync.example.com/a%20b?q=1") ?? URL(fileURLWithPath: "/"),
                                                       containerIdentifier: "iCloud.test", scope: .shared))
        m.primaryKeyCounters = ["Item": 42, "Author": .max]
        return m
    }

    /// Decoding the same bytes again (a command reads a store's metadata, then opens it) gives the same metadata,
    /// kept from the first time; other bytes decode on their own, and a failure is each read's own.
    @Test func decodingTheSameBytesAgainGivesTheSameMetadata() throws {
        var g = SeededGenerator(seed: 0xDEC0_DE)
        let metadatas = try (0..<6).map { _ in try JSONDocumentTextTests.randomMetadata(&g) }
        let texts = try metadatas.map { try $0.encoded() }
        for round in 0..<2 {
            for (m, data) in zip(metadatas, texts) {
                let a = try StoreMetadata.decode(data, url: URL(fileURLWithPath: "/tmp/a\(round)"))
                let codable = try JSONDecoder().decode(StoreMetadata.self, from: data)
                #expect(a == codable)
                #expect(a.primaryKeyCounters == m.primaryKeyCounters)
                #expect(a.custom == codable.custom)
            }
        }
        var broken = texts[0]
        broken.removeLast()
        for name in ["b", "c"] {
            let url = URL(fileURLWithPath: "/tmp/\(name)")
            #expect {
                _ = try StoreMetadata.decode(broken, url: url)
            } throws: { error in
                guard case StoreError.corruptStore(let at, _) = error else { return false }
                return at == url
            }
        }
        #expect(try StoreMetadata.decode(texts[0], url: URL(fileURLWithPath: "/tmp/d")) == metadatas[0])
    }

    @Test func storedMetadataReadsAsCodableReadsIt() throws {
        let data = try Self.everythingMetadata().encoded()
        let ours = try StoreMetadata.decode(data, url: URL(fileURLWithPath: "/tmp/x"))
        let codable = try JSONDecoder().decode(StoreMetadata.self, from: data)
        #expect(ours == codable)
        #expect(ours.primaryKeyCounters == codable.primaryKeyCounters)
        #expect(ours.custom == codable.custom)
        #expect(ours.syncOptions == codable.syncOptions)
        #expect(ours.schema.versionHashes == codable.schema.versionHashes)
        #expect(ours == (try Self.everythingMetadata()).with(uuid: ours.storeUUID))
        // Minimal metadata: no configuration, sync options or counters.
        let plain = StoreMetadata(storeType: "lmdb", schema: try Self.everythingSchema())
        let back = try StoreMetadata.decode(try plain.encoded(), url: URL(fileURLWithPath: "/tmp/x"))
        #expect(back == plain)
        #expect(back.primaryKeyCounters == nil && back.syncOptions == nil && back.configuration == nil)
    }

    @Test("every corpus model reads as Codable reads it", .enabled(if: SchemaCorpus.isPresent, SchemaCorpus.absentMessage),
          arguments: SchemaCorpus.modelVersions)
    func corpusSchemasReadAsCodableReadsThem(_ path: String) throws {
        let json = try SchemaCorpus.load(path).jsonData()
        let ours = try Schema(jsonData: json)
        let codable = try JSONDecoder().decode(Schema.self, from: json)
        #expect(ours == codable)
        #expect(ours.versionHashes == codable.versionHashes)
    }

    @Test func customValuesReadAsCodableReadsThem() throws {
        let texts = ["2", "2.0", "1e3", "1E2", "-0", "1.5", "-2.5e-3", "9223372036854775807", "9223372036854775808",
                     "1e30", "true", "false", "null", "\"t\"", "[1, 2.5, \"x\", null]", #"{"a": {"b": [true]}}"#]
        for text in texts {
            let ours = try #require(MetadataValue(jsonText: text), "\(text)")
            let codable = try JSONDecoder().decode(MetadataValue.self, from: Data(text.utf8))
            #expect(ours == codable, "\(text): \(ours) vs \(codable)")
        }
        #expect(MetadataValue(jsonText: "2") == .integer(2))
        #expect(MetadataValue(jsonText: "2.0") == .integer(2))
        #expect(MetadataValue(jsonText: "1.5") == .double(1.5))
        #expect(MetadataValue(jsonText: "not json") == nil)
        #expect(MetadataValue(jsonText: "{\"a\": 1") == nil)
    }

    @Test func readerFollowsCodablesRules() throws {
        // null is absent, unknown keys are ignored, whole numbers may be written with a fraction or an exponent, and
        // a UTF-8 byte order mark may start a schema file.
        let text = """
            {"entities": [{"name": "A", "parent": null, "future": {"x": 1}, "attributes": null,
                           "relationships": [{"name": "r", "destination": "A", "toMany": true, "minCount": 1.0, "maxCount": 3e0,
                                              "inverse": null, "userInfo": null}]}],
             "configurations": null, "comment": "ignored"}
            """
        let schema = try Schema(jsonData: Data([0xEF, 0xBB, 0xBF] + Array(text.utf8)))
        let r = try #require(schema.entity(named: "A")?.relationship("r"))
        #expect(r.minCount == 1 && r.maxCount == 3 && r.inverse == nil && r.userInfo.isEmpty)
        #expect(schema.configurations.isEmpty)
        #expect(schema == (try JSONDecoder().decode(Schema.self, from: Data(text.utf8))))
    }

    @Test func schemaErrorsNameThePathAndWhatIsWrong() throws {
        func reason(_ text: String) throws -> String {
            let error = try #require(throws: SchemaError.self) { try Schema(jsonData: Data(text.utf8), file: "m.json") }
            guard case .unreadableModel("m.json", let reason) = error else { Issue.record("\(error)"); return "" }
            return reason
        }
        #expect(try reason(#"{"entities": [{"name": "A", "attributes": [{"name": "x"}]}]}"#)
            == "missing key 'type' at .entities[0].attributes[0]")
        #expect(try reason(#"{"entities": [{"name": "A", "abstract": "yes"}]}"#)
            == #"wrong type at .entities[0].abstract: expected a boolean, found the string "yes""#)
        #expect(try reason(#"{"entities": [{"name": "A", "relationships": [{"name": "r", "destination": "A", "minCount": 1.5}]}]}"#)
            == "wrong type at .entities[0].relationships[0].minCount: expected an integer, found the number 1.5")
        #expect(try reason(#"{"entities": {}}"#) == "wrong type at .entities: expected an array, found an object")
        #expect(try reason(#"{"entities": [], "configurations": {"C": [1]}}"#)
            == "wrong type at .configurations.C[0]: expected a string, found the number 1")
        #expect(try reason(#"{"entities": [ "#) == "invalid JSON at byte 15: unexpected end of input")
        #expect(try reason(#"{"entities": [{"name": "A", "relationships": [{"name": "r", "destination": "A", "deleteRule": "explode"}]}]}"#)
            .hasPrefix("invalid value at .entities[0].relationships[0].deleteRule: 'explode' is not a delete rule"))
    }

    @Test func corruptMetadataIsACorruptStoreNamingTheProblem() throws {
        let url = URL(fileURLWithPath: "/tmp/store.sqlite")
        var object = try #require(try JSONSerialization.jsonObject(with: try Self.everythingMetadata().encoded()) as? [String: Any])
        func reason(_ edit: (inout [String: Any]) -> Void) throws -> String {
            var copy = object
            edit(&copy)
            let data = try JSONSerialization.data(withJSONObject: copy)
            let error = try #require(throws: StoreError.self) { try StoreMetadata.decode(data, url: url) }
            guard case .corruptStore(let u, let reason) = error, u == url else { Issue.record("\(error)"); return "" }
            return reason
        }
        #expect(try reason { $0["storeUUID"] = nil } == "unreadable metadata: missing key 'storeUUID' at top level")
        #expect(try reason { $0["storeUUID"] = "nope" } == "unreadable metadata: invalid value at .storeUUID: 'nope' is not a UUID")
        #expect(try reason { $0["formatVersion"] = "1" }
            == #"unreadable metadata: wrong type at .formatVersion: expected a number, found the string "1""#)
        #expect(try reason { $0["custom"] = NSNull() } == "unreadable metadata: missing key 'custom' at top level")
        #expect(try reason { $0["primaryKeyCounters"] = ["Item": 1.5] }
            == "unreadable metadata: wrong type at .primaryKeyCounters.Item: expected an integer, found the number 1.5")
        #expect(try reason { $0["syncOptions"] = ["remote": "https://x", "containerIdentifier": "c", "scope": "galaxy"] }
            .contains("'galaxy' is not a scope"))
        #expect(try reason { $0["schema"] = ["entities": [["name": "A", "parent": "Missing"]]] }
            .hasPrefix("stored schema is invalid: "))
        object["versionHashes"] = nil
        let error = try #require(throws: StoreError.self) {
            try StoreMetadata.decode(try JSONSerialization.data(withJSONObject: object), url: url)
        }
        #expect("\(error)".contains("missing key 'versionHashes'"))
        let garbage = try #require(throws: StoreError.self) { try StoreMetadata.decode(Data("{\"a\": ".utf8), url: url) }
        #expect("\(garbage)".contains("unreadable metadata: invalid JSON at byte 6"))
    }
}

private extension StoreMetadata {
    func with(uuid: UUID) -> StoreMetadata {
        var m = self
        m.storeUUID = uuid
        return m
    }
}
