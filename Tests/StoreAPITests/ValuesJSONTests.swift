import Foundation
import Testing
@testable import StoreAPI

/// The JSON form of values round-trips every edge value exactly, both as objects and through JSON text, and
/// refuses values that do not fit the type.
struct ValuesJSONTests {
    static let doubleSamples: [Double] = {
        var out: [Double] = [0.0, -0.0, 1, -1, 0.1, 1.0 / 3, .pi, .nan, .infinity, -.infinity]
        out += [.greatestFiniteMagnitude, -.greatestFiniteMagnitude, .leastNonzeroMagnitude, -.leastNonzeroMagnitude]
        out += [.leastNormalMagnitude, Double(Int64.max), 9_007_199_254_740_994, Double(1 << 53).nextUp, 1e300, 123_456_789.123_456_789]
        return out
    }()

    static let floatSamples: [Float] = {
        var out: [Float] = [0, -0.0, 1, 0.1, 1.0 / 3, .nan, .infinity, -.infinity]
        out += [.greatestFiniteMagnitude, .leastNonzeroMagnitude, .leastNormalMagnitude, 16_777_218, Float(1 << 24).nextUp, 3.4e38]
        return out
    }()

    /// Serializes the JSON form as text, parses it back and reads it as `type`.
    private func throughText(_ value: StoreValue, _ type: AttributeType) throws -> StoreValue? {
        let text = try JSONSerialization.data(withJSONObject: [value.jsonObject])
        let parsed = try #require(try JSONSerialization.jsonObject(with: text) as? [Any])
        return StoreValue(json: parsed[0], type: type)
    }

    private func expectRoundTrip(_ value: StoreValue, _ type: AttributeType, sourceLocation: SourceLocation = #_sourceLocation) throws {
        #expect(StoreValue(json: value.jsonObject, type: type) == value, "object: \(value)", sourceLocation: sourceLocation)
        #expect(try throughText(value, type) == value, "text: \(value)", sourceLocation: sourceLocation)
    }

    @Test func integers() throws {
        for v in [Int16.min, -1, 0, 1, Int16.max] { try expectRoundTrip(.integer16(v), .integer16) }
        for v in [Int32.min, -1, 0, 1, Int32.max] { try expectRoundTrip(.integer32(v), .integer32) }
        for v: Int64 in [.min, .min + 1, -1, 0, 1, 1 << 53 + 1, .max - 1, .max] { try expectRoundTrip(.integer64(v), .integer64) }
    }

    @Test(arguments: ValuesJSONTests.doubleSamples)
    func doubles(_ v: Double) throws {
        try expectRoundTrip(.double(v), .double)
    }

    @Test(arguments: ValuesJSONTests.floatSamples)
    func floats(_ v: Float) throws {
        try expectRoundTrip(.float(v), .float)
    }

    @Test func negativeZeroStaysNegative() throws {
        let back = try #require(try throughText(.double(-0.0), .double))
        guard case .double(let d) = back else { Issue.record("\(back)"); return }
        #expect(d == 0 && d.sign == .minus)
        #expect(StoreValue.double(-0.0) != .double(0.0))
    }

    @Test func decimals() throws {
        let texts = [
            "0", "12.50", "-12.5", "0.000000000000000000000000000000000001", "99999999999999999999999999999999999999",
            "-99999999999999999999999999999999999999", "1e127", "1.5e-100", "3.14159265358979323846264338327950288",
            "170141183460469231731687303715884105727",
        ]
        for t in texts {
            let d = try #require(Decimal(string: t, locale: Locale(identifier: "en_US_POSIX")), "\(t)")
            try expectRoundTrip(.decimal(d), .decimal)
        }
        #expect(StoreValue(json: "12.50", type: .decimal) == .decimal(Decimal(string: "12.5")!))
        #expect(StoreValue(json: NSNumber(value: 2), type: .decimal) == .decimal(2))
    }

    @Test func strings() throws {
        let samples = [
            "", " ", "a\u{0}b", "\u{0}", "héllo wörld", "日本語", "👩‍👩‍👧‍👦", "e\u{301}", "x\u{FEFF}", "line\nbreak\t\"quote\"\\",
            "\u{7F}\u{1}\u{1F}", String(repeating: "x", count: 100_000), "\u{10FFFF}",
        ]
        for s in samples { try expectRoundTrip(.string(s), .string) }
        // A string that starts with U+FEFF round-trips as an object and through JSONEncoder/JSONDecoder.
        let bom = StoreValue.string("\u{FEFF}bom")
        #expect(StoreValue(json: bom.jsonObject, type: .string) == bom)
        let viaCodable = try JSONDecoder().decode([String].self, from: JSONEncoder().encode([try #require(bom.stringValue)]))
        #expect(viaCodable.first == bom.stringValue)
        // Canonically equivalent strings stay distinct: equality is by stored bytes.
        #expect(StoreValue.string("é") != .string("e\u{301}"))
        #expect(try throughText(.string("e\u{301}"), .string) != .string("é"))
    }

    /// swift-corelibs-foundation's JSONSerialization drops a U+FEFF at the start of a string value when it reads
    /// raw UTF-8. Anything that reads JSON text must use JSONDecoder or expect this; recorded here so a fix shows.
    @Test func jsonSerializationDropsLeadingBOMInStrings() throws {
        let value = StoreValue.string("\u{FEFF}bom")
        #if os(Linux)
        withKnownIssue("JSONSerialization strips a leading U+FEFF from string values on Linux") {
            let back = try throughText(value, .string)
            #expect(back == value)
        }
        #else
        #expect(try throughText(value, .string) == value)
        #endif
    }

    @Test func booleans() throws {
        try expectRoundTrip(.boolean(true), .boolean)
        try expectRoundTrip(.boolean(false), .boolean)
    }

    @Test func dates() throws {
        var bits = Date(timeIntervalSinceReferenceDate: 599_529_600).timeIntervalSinceReferenceDate
        let samples: [Double] = [
            0, -0.0, 1, -1, 0.5, -0.5, 1e-9, -1e-9, 1e-20, -1e-20, .leastNonzeroMagnitude, -.leastNonzeroMagnitude, 0.1, -0.1,
            Date.distantPast.timeIntervalSinceReferenceDate, Date.distantFuture.timeIntervalSinceReferenceDate,
            599_529_600.123_456_789, -978_307_200.000_000_1, 1_234_567_890.987_654_3, 2e11 * 31_556_952, -1e15,
            bits.nextUp, bits.nextDown, 1e20, -.greatestFiniteMagnitude, .infinity, -.infinity, .nan,
        ]
        bits = 0
        for t in samples { try expectRoundTrip(.date(Date(timeIntervalSinceReferenceDate: t)), .date) }
        // Sub-microsecond fractions survive bit for bit.
        let fine = Date(timeIntervalSinceReferenceDate: 12_345.000_000_123_4)
        let back = try #require(try throughText(.date(fine), .date))
        guard case .date(let d) = back else { Issue.record("\(back)"); return }
        #expect(d.timeIntervalSinceReferenceDate.bitPattern == fine.timeIntervalSinceReferenceDate.bitPattern)
    }

    @Test func binary() throws {
        try expectRoundTrip(.binary(Data()), .binary)
        try expectRoundTrip(.binary(Data([0, 0xFF, 0x80])), .binary)
        var generator = SystemRandomNumberGenerator()
        let mebibyte = Data((0..<(1 << 20)).map { _ in UInt8.random(in: 0...255, using: &generator) })
        try expectRoundTrip(.binary(mebibyte), .binary)
        try expectRoundTrip(.binary(mebibyte), .transformable)
    }

    @Test func uuidsAndURIs() throws {
        try expectRoundTrip(.uuid(UUID()), .uuid)
        try expectRoundTrip(.uuid(UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0))), .uuid)
        for text in ["https://example.com/a%20b?q=1#f", "x-coredata://ABC/Book/p1", "file:///tmp/%E2%9C%93", "mailto:a@b.c", "urn:isbn:0451450523"] {
            try expectRoundTrip(.uri(try #require(URL(string: text))), .uri)
        }
        #expect(StoreValue(json: "6f9619ff-8b86-d011-b42d-00c04fc964ff", type: .uuid) == .uuid(UUID(uuidString: "6F9619FF-8B86-D011-B42D-00C04FC964FF")!))
    }

    @Test func nullIsNullForEveryType() {
        for type in AttributeType.allCases {
            #expect(StoreValue(json: nil, type: type) == .null)
            #expect(StoreValue(json: NSNull(), type: type) == .null)
        }
    }

    /// Parses a JSON text fragment and reads it as `type`.
    private func read(_ json: String, _ type: AttributeType) throws -> StoreValue? {
        let parsed = try #require(try JSONSerialization.jsonObject(with: Data("[\(json)]".utf8)) as? [Any])
        return StoreValue(json: parsed[0], type: type)
    }

    @Test func badValuesAreRejected() throws {
        let bad: [(String, AttributeType)] = [
            ("1.5", .integer64), ("1.5", .integer16), ("-0.5", .integer32), ("1e300", .integer64),
            ("32768", .integer16), ("-32769", .integer16), ("2147483648", .integer32), ("9223372036854775808", .integer64),
            ("-9223372036854775809", .integer64), ("18446744073709551615", .integer64), ("18446744073709551616", .integer64),
            ("true", .integer16), ("false", .integer64), ("\"1\"", .integer32), ("[1]", .integer64),
            ("1", .boolean), ("0", .boolean), ("\"true\"", .boolean),
            ("true", .double), ("\"1.5\"", .double), ("\"nan\"", .float), ("true", .decimal), ("\"12abc\"", .decimal),
            ("\"\"", .decimal), ("\"NaN\"", .decimal), ("\"1,5\"", .decimal), ("\" 12\"", .decimal),
            ("5", .string), ("true", .string), ("\"2019-02-30T00:00:00Z\"", .date), ("\"yesterday\"", .date),
            ("0", .date), ("\"not base64!\"", .binary), ("\"zz\"", .transformable), ("\"1234\"", .uuid), ("5", .uri),
        ]
        for (json, type) in bad {
            #expect(try read(json, type) == nil, "\(json) as \(type)")
        }
        // Integral values written as floats are accepted when exact.
        #expect(try read("2.0", .integer16) == .integer16(2))
        #expect(try read("-9223372036854775808", .integer64) == .integer64(.min))
        #expect(try read("1e3", .integer32) == .integer32(1000))
    }
}
