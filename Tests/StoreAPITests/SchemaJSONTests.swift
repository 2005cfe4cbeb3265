import Foundation
import Testing
@testable import StoreAPI

struct SchemaJSONTests {
    @Test("every corpus model round-trips through the JSON form", .enabled(if: SchemaCorpus.isPresent, SchemaCorpus.absentMessage),
          arguments: SchemaCorpus.modelVersions)
    func corpusRoundTrip(_ path: String) throws {
        let schema = try SchemaCorpus.load(path)
        let json = try schema.jsonData()
        let back = try Schema(jsonData: json, file: path + ".json")
        #expect(back == schema)
        #expect(back.versionHashes == schema.versionHashes)
        #expect(try back.jsonData() == json)
    }

    @Test func defaultsOfEveryTypeRoundTrip() throws {
        let values: [(AttributeType, StoreValue)] = [
            (.integer16, .integer16(1)), (.integer16, .integer16(0)), (.integer32, .integer32(-1)),
            (.integer64, .integer64(.max)), (.integer64, .integer64(.min)), (.integer64, .integer64(1)),
            (.decimal, .decimal(Decimal(string: "12.50")!)), (.double, .double(1)), (.double, .double(0.1)),
            (.double, .double(-0.0)), (.double, .double(.nan)), (.double, .double(-.infinity)),
            (.float, .float(1)), (.float, .float(0.1)), (.float, .float(.infinity)), (.string, .string("")),
            (.string, .string("1")), (.boolean, .boolean(true)), (.boolean, .boolean(false)),
            (.date, .date(Date(timeIntervalSinceReferenceDate: 1.000000001))), (.binary, .binary(Data([0, 1, 2]))),
            (.transformable, .binary(Data([9]))), (.uuid, .uuid(UUID())), (.uri, .uri(URL(string: "file:///tmp/a%20b")!)),
        ]
        let attributes = values.enumerated().map { i, v in
            AttributeDescription(name: "a\(i)", type: v.0, defaultValue: v.1)
        }
        let schema = try Schema(entities: [EntityDescription(name: "E", attributes: attributes)])
        let back = try Schema(jsonData: try schema.jsonData())
        for (a, b) in zip(schema.definitions[0].attributes, back.definitions[0].attributes) {
            #expect(a.defaultValue == b.defaultValue, "\(a.type): \(String(describing: a.defaultValue)) → \(String(describing: b.defaultValue))")
        }
        #expect(back == schema)
    }

    @Test func documentedExampleReads() throws {
        let text = """
            { "entities": [
                { "name": "Author",
                  "attributes": [ { "name": "name", "type": "string", "optional": false } ],
                  "relationships": [ { "name": "books", "destination": "Book", "inverse": "author",
                                       "toMany": true, "ordered": true, "deleteRule": "cascade" } ],
                  "uniquenessConstraints": [ ["name"] ] },
                { "name": "Book", "parent": null, "abstract": false,
                  "attributes": [ { "name": "title", "type": "string", "default": "Untitled" },
                                  { "name": "pages", "type": "integer32", "optional": true, "default": 0 } ],
                  "relationships": [ { "name": "author", "destination": "Author", "inverse": "books" } ] } ],
              "configurations": { "Local": ["Author", "Book"] } }
            """
        let s = try Schema(jsonData: Data(text.utf8))
        #expect(s.entity(named: "Book")?.attribute("pages")?.defaultValue == .integer32(0))
        #expect(s.entity(named: "Author")?.relationship("books")?.deleteRule == .cascade)
        #expect(s.entity(named: "Author")?.relationship("books")?.isOrdered == true)
        #expect(s.configurations == ["Local": ["Author", "Book"]])
    }

    /// Reads `text` and returns the reason of the unreadableModel error it must throw.
    private func unreadableReason(_ text: String, file: String = "model.json") throws -> String {
        let error = try #require(throws: SchemaError.self) { try Schema(jsonData: Data(text.utf8), file: file) }
        guard case .unreadableModel(let f, let reason) = error else {
            Issue.record("expected unreadableModel, got \(error)")
            return ""
        }
        #expect(f == file)
        return reason
    }

    @Test func malformedJSONNamesThePath() throws {
        #expect(try unreadableReason(#"{"entities": [{"name": "A", "attributes": [{"name": "x"}]}]}"#)
            .contains(".entities[0].attributes[0]"))
        #expect(try unreadableReason(#"{"entities": [{"name": "A"}, {"name": "B", "abstract": "yes"}]}"#)
            .contains(".entities[1].abstract"))
        #expect(try unreadableReason(#"{"entities": [{"name": "A", "relationships": [{"name": "r", "destination": "A", "deleteRule": "explode"}]}]}"#)
            .contains(".entities[0].relationships[0].deleteRule"))
        #expect(try unreadableReason(#"{"entitys": []}"#).contains("entities"))
        #expect(try !unreadableReason(#"{"entities": [ "#).isEmpty)
        #expect(try !unreadableReason("").isEmpty)
        let error = try #require(throws: SchemaError.self) { try Schema(jsonData: Data("[1]".utf8), file: "/tmp/x.json") }
        #expect(error.description.hasPrefix("/tmp/x.json: "))
    }

    @Test func unknownAttributeTypeAndBadDefaultsInJSON() throws {
        let e1 = try #require(throws: SchemaError.self) {
            try Schema(jsonData: Data(#"{"entities": [{"name": "A", "attributes": [{"name": "x", "type": "money"}]}]}"#.utf8))
        }
        guard case .unknownAttributeType("A", "x", "money") = e1 else { Issue.record("\(e1)"); return }
        let bad: [(String, String)] = [
            ("integer16", "40000"), ("integer32", "1.5"), ("integer64", "9223372036854775808"), ("integer64", "true"),
            ("boolean", "1"), ("string", "5"), ("decimal", "\"12abc\""), ("date", "\"yesterday\""),
            ("uuid", "\"nope\""), ("binary", "\"***\""), ("double", "\"fast\""),
        ]
        for (type, json) in bad {
            let text = #"{"entities": [{"name": "A", "attributes": [{"name": "x", "type": "\#(type)", "default": \#(json)}]}]}"#
            let error = try #require(throws: SchemaError.self, "\(type) \(json)") { try Schema(jsonData: Data(text.utf8)) }
            guard case .defaultValueMismatch("A", "x", let t) = error, t.rawValue == type else {
                Issue.record("\(type) \(json): \(error)")
                continue
            }
        }
    }
}
