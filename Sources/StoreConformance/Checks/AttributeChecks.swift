import Foundation
import StoreAPI
import Testing

extension ConformanceSuite {
    /// Edge values for every attribute type, one dictionary per record.
    static func edgeSamples() -> [[String: StoreValue]] {
        var megabyte = Data(count: 1 << 20)
        for i in 0..<megabyte.count { megabyte[i] = UInt8(truncatingIfNeeded: i &* 31 &+ 7) }
        let dec = { (s: String) -> StoreValue in .decimal(Decimal(string: s, locale: Locale(identifier: "en_US_POSIX")) ?? 0) }
        return [
            [:],  // defaults only
            ["i16": .integer16(.min), "i32": .integer32(.max), "i64": .integer64(.min), "dec": dec("-12345678901234567890.123456789"),
             "dbl": .double(.nan), "flt": .float(-0.0), "str": .string(""), "flag": .boolean(false),
             "when": .date(.distantPast), "blob": .binary(Data()), "uid": .uuid(UUID()),
             "link": .uri(URL(string: "https://example.com/a?b=c#d")!), "archived": .binary(Data([0, 1, 2, 0])),
             "label": .null, "count": .integer32(0)],
            ["i16": .integer16(.max), "i32": .integer32(.min), "i64": .integer64(.max), "dec": dec("0.1"),
             "dbl": .double(.infinity), "flt": .float(.nan), "str": .string("a\u{0}b\u{0}"), "flag": .boolean(true),
             "when": .date(.distantFuture), "blob": .binary(megabyte), "link": .uri(URL(string: "file:///tmp/with%20space")!)],
            ["dbl": .double(-.infinity), "flt": .float(.infinity), "str": .string("ünïcødé 漢字 🚀 \u{202E} \t\n\r"),
             "when": .date(Date(timeIntervalSinceReferenceDate: 0.000123456789)), "dec": dec("0"), "i64": .integer64(0)],
            ["dbl": .double(-0.0), "flt": .float(.greatestFiniteMagnitude), "str": .string(String(repeating: "xyz", count: 40_000)),
             "when": .date(Date(timeIntervalSinceReferenceDate: -1e10 - 0.5)), "dec": dec("99999999999999999999999999999999999999")],
            ["dbl": .double(.leastNonzeroMagnitude), "flt": .float(.leastNonzeroMagnitude), "i32": .integer32(-1),
             "when": .date(Date(timeIntervalSince1970: 1_556_668_800)), "dec": dec("-0.000000000000000000000000000001"),
             "str": .string("'\"<&>]]>--"), "label": .string("explicit")],
            ["dbl": .double(.pi), "flt": .float(-.pi), "str": .string("\u{1}\u{1F}\u{7F}\u{FFFE}")],
            // 17 significant digits: text formats read through a decimal type (Foundation's JSONSerialization on
            // Linux) come back one unit in the last place off unless they convert the digits themselves.
            ["dbl": .double(54516429953.940254), "flt": .float(0.1), "when": .date(Date(timeIntervalSinceReferenceDate: 0.30000000000000004))],
            // A leading U+FEFF is data, not a byte-order mark (Foundation's JSONSerialization on Linux drops it).
            ["dbl": .double(2.9420685457042338e-27), "flt": .float(3.4028235e38), "str": .string("\u{FEFF}starts with U+FEFF")],
        ]
    }

    func checkAttributeValues(_ h: Harness) throws {
        let url = h.storeURL()
        let (c, _) = try h.coordinator(url)
        let context = c.newContext()
        var expected: [UUID: [String: StoreValue]] = [:]
        let sample = try #require(h.schema.entity(named: "Sample"))
        for values in Self.edgeSamples() {
            let o = try context.insert("Sample", values)
            var full: [String: StoreValue] = [:]
            for a in sample.attributes { full[a.name] = values[a.name] ?? a.defaultValue ?? .null }
            expected[o.globalID] = full
            #expect(try o.value(forKey: "count") == (values["count"] ?? .integer32(7)), "defaults apply on insert")
        }
        try context.save()
        try h.close(c)

        let (c2, _) = try h.coordinator(url)
        let reader = c2.newContext()  // objects need their context alive
        let fetched = try reader.fetch(FetchRequest(entity: "Sample"))
        #expect(fetched.count == expected.count)
        for o in fetched {
            let want = try #require(expected[o.globalID], "an unknown record came back")
            let got = try o.attributeValues()
            for (name, value) in want {
                #expect(got[name] == value, "Sample.\(name): stored \(value), read back \(got[name] ?? .null)")
            }
        }
        try h.close(c2)
    }
}
