import Foundation
@_spi(BackendKit) import StoreAPI
import StoreTestSupport
import Testing

/// How the importer reads JSON text and values: strict JSON, exact numbers, the documented value forms.
@Suite("NDJSON import values and JSON syntax")
struct ImporterValueTests {
    func withStore(_ body: (any PersistentStore) throws -> Void) throws {
        let store = try MemoryStores.create(schema: EdgeFixtures.schema)
        try body(store)
    }

    /// Imports one Sample line with `attributes` (JSON text) and returns the stored value of `name`.
    func stored(_ name: String, from attributes: String) throws -> StoreValue {
        var result: StoreValue = .null
        try withStore { store in
            try NDJSONImporter().importRecords(from: Data("{\"entity\":\"Sample\",\"attributes\":{\(attributes)}}".utf8), into: store)
            let record = try #require(try store.fetch(FetchRequest(entity: "Sample")).first)
            let entity = try #require(store.metadata.schema.entity(named: "Sample"))
            result = record.attributes[try #require(entity.attributeIndex(name))]
        }
        return result
    }

    func rejected(_ line: String) throws -> String {
        var message = ""
        try withStore { store in
            do {
                try NDJSONImporter().importRecords(from: Data(line.utf8), into: store)
                Issue.record("accepted: \(line)")
            } catch let error as InterchangeError {
                #expect(error.line == 1)
                message = error.message
            }
            #expect(try store.count(FetchRequest(entity: "Sample")) == 0)
        }
        return message
    }

    @Test("numbers are read exactly, straight to the attribute's type")
    func exactNumbers() throws {
        #expect(try stored("dbl", from: "\"dbl\":0.30000000000000004") == .double(0.1 + 0.2))
        #expect(try stored("dbl", from: "\"dbl\":5e-324") == .double(.leastNonzeroMagnitude))
        #expect(try stored("dbl", from: "\"dbl\":1.7976931348623157e308") == .double(.greatestFiniteMagnitude))
        #expect(try stored("dbl", from: "\"dbl\":\"-0.0\"") == .double(-0.0))
        #expect(try stored("dbl", from: "\"dbl\":\"NaN\"") == .double(.nan))
        #expect(try stored("dbl", from: "\"dbl\":12") == .double(12))
        #expect(try stored("flt", from: "\"flt\":0.1") == .float(0.1))
        #expect(try stored("flt", from: "\"flt\":3.4028235e+38") == .float(.greatestFiniteMagnitude))
        #expect(try stored("i64", from: "\"i64\":-9223372036854775808") == .integer64(.min))
        #expect(try stored("i64", from: "\"i64\":1e3") == .integer64(1000))
        #expect(try stored("i16", from: "\"i16\":-32768") == .integer16(.min))
        #expect(try stored("dec", from: "\"dec\":\"3.14159265358979323846264338327950288\"")
                == .decimal(try #require(Decimal(string: "3.14159265358979323846264338327950288"))))
        #expect(try stored("dec", from: "\"dec\":12.5") == .decimal(Decimal(string: "12.5") ?? 0))
        #expect(try stored("when", from: "\"when\":\"2019-05-01\"") == .date(try #require(ExactISO8601.date(from: "2019-05-01T00:00:00Z"))))
        #expect(try stored("blob", from: "\"blob\":\"AAEC/w==\"") == .binary(Data([0, 1, 2, 255])))
        #expect(try stored("uid", from: "\"uid\":\"6ba7b810-9dad-11d1-80b4-00c04fd430c8\"")
                == .uuid(try #require(UUID(uuidString: "6BA7B810-9DAD-11D1-80B4-00C04FD430C8"))))
        #expect(try stored("str", from: "\"str\":\"tab\\tquote\\\"snow\\u2603pair\\ud83e\\uddea\"") == .string("tab\tquote\"snow\u{2603}pair🧪"))
    }

    @Test("values that do not fit are refused with the attribute and the value named")
    func outOfRange() throws {
        #expect(try rejected("{\"entity\":\"Sample\",\"attributes\":{\"i16\":32768}}").contains("attribute 'i16' of Sample is an integer16; got the number 32768"))
        #expect(try rejected("{\"entity\":\"Sample\",\"attributes\":{\"i64\":9223372036854775808}}").contains("integer64"))
        #expect(try rejected("{\"entity\":\"Sample\",\"attributes\":{\"i32\":1.5}}").contains("got the number 1.5"))
        #expect(try rejected("{\"entity\":\"Sample\",\"attributes\":{\"dbl\":1e400}}").contains("got the number 1e400"))
        #expect(try rejected("{\"entity\":\"Sample\",\"attributes\":{\"flt\":1e39}}").contains("is a float"))
        #expect(try rejected("{\"entity\":\"Sample\",\"attributes\":{\"flag\":\"yes\"}}").contains("is a boolean; got the string \"yes\""))
        #expect(try rejected("{\"entity\":\"Sample\",\"attributes\":{\"blob\":\"not base64!\"}}").contains("is a binary"))
        #expect(try rejected("{\"entity\":\"Sample\",\"attributes\":{\"uid\":\"6ba7b810-9dad-11d1-80b4\"}}").contains("is a uuid"))
        #expect(try rejected("{\"entity\":\"Sample\",\"attributes\":{\"str\":[\"a\"]}}").contains("is a string; got an array"))
        #expect(try rejected("{\"entity\":\"Sample\",\"attributes\":{\"str\":{}}}").contains("got an object"))
    }

    @Test("JSON syntax is strict and every error names its column", arguments: [
        ("{\"entity\":\"Sample\",}", "column 20"),
        ("{\"entity\":\"Sample\"} x", "unexpected text after the JSON value"),
        ("{\"entity\":\"Sample\",\"entity\":\"Note\"}", "duplicate key \"entity\""),
        ("{\"entity\":\"Sample\",\"attributes\":{\"i32\":012}}", "leading zeros"),
        ("{\"entity\":\"Sample\",\"attributes\":{\"str\":\"\\ud800\"}}", "lone UTF-16 surrogate"),
        ("{\"entity\":\"Sample\",\"attributes\":{\"str\":\"a\tb\"}}", "control character"),
        ("{\"entity\":\"Sample\",\"attributes\":{\"str\":\"\\x\"}}", "invalid escape"),
        ("{\"entity\":\"Sample\",\"attributes\":{\"dbl\":NaN}}", "unexpected character 'N'"),
        ("{\"entity\":\"Sample\",\"attributes\":{\"dbl\":.5}}", "unexpected character '.'"),
        ("{\"entity\":'Sample'}", "unexpected character '''"),
        ("{\"entity\":\"Sample\"", "missing '}'"),
        (String(repeating: "[", count: 10_000), "nested deeper than 256 levels"),
    ])
    func syntax(line: String, fragment: String) throws {
        let message = try rejected(line)
        #expect(message.hasPrefix("malformed JSON at column "), "\(message)")
        #expect(message.contains(fragment), "\(message)")
    }

    @Test("invalid UTF-8 is refused, not replaced")
    func invalidUTF8() throws {
        try withStore { (store: any PersistentStore) throws -> Void in
            var bytes = Array("{\"entity\":\"Sample\",\"attributes\":{\"str\":\"ab".utf8)
            bytes += [0xC3, 0x28]
            bytes += Array("\"}}".utf8)
            do {
                try NDJSONImporter().importRecords(from: Data(bytes), into: store)
                Issue.record("invalid UTF-8 was accepted")
            } catch let error as InterchangeError {
                #expect(error.message.contains("not valid UTF-8"), "\(error)")
            }
            let count = try store.count(FetchRequest(entity: "Sample"))
            #expect(count == 0)
        }
    }

    @Test("a byte-order mark, CRLF endings, blank lines and a missing final newline are fine")
    func lineEndings() throws {
        try withStore { store in
            let text = "\u{FEFF}{\"entity\":\"Label\",\"attributes\":{\"text\":\"a\"}}\r\n\r\n   \n{\"entity\":\"Label\",\"attributes\":{\"text\":\"b\"}}"
            let summary = try NDJSONImporter().importRecords(from: Data(text.utf8), into: store)
            #expect(summary.inserted == 2)
        }
    }
}
