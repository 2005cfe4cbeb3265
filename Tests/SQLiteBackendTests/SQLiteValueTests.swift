import Foundation
import StoreAPI
import StoreTestSupport
import Testing
@testable import SQLiteBackend

/// Every attribute type round-trips bit-exactly through a save, a fetch, a scan and a reopen.
@Suite struct SQLiteValueTests {
    static let edgeValues: [String: [StoreValue]] = [
        "i16": [.integer16(.min), .integer16(.max), .integer16(0), .integer16(-1)],
        "i32": [.integer32(.min), .integer32(.max), .integer32(0)],
        "i64": [.integer64(.min), .integer64(.max), .integer64(0), .integer64(-1)],
        "dec": [
            .decimal(0), .decimal(Decimal(string: "-12345678901234567890123456789012345678")!),
            .decimal(Decimal(string: "1e-100")!), .decimal(.greatestFiniteMagnitude), .decimal(.nan),
            .decimal(Decimal(string: "3.14")!), .decimal(-Decimal.leastNonzeroMagnitude),
        ],
        "dbl": [
            .double(-0.0), .double(0.0), .double(.nan), .double(Double(bitPattern: 0xFFF8_0000_0000_0001)),
            .double(Double(bitPattern: 0x7FF0_0000_0000_0001)), .double(.infinity), .double(-.infinity),
            .double(.greatestFiniteMagnitude), .double(.leastNonzeroMagnitude), .double(1.0), .double(0.1),
        ],
        "flt": [
            .float(-0.0), .float(.nan), .float(Float(bitPattern: 0x7F80_0001)), .float(Float(bitPattern: 0xFFC0_0123)),
            .float(.infinity), .float(-.infinity), .float(.greatestFiniteMagnitude), .float(.leastNonzeroMagnitude),
            .float(1.0), .float(0.1),
        ],
        "str": [
            .string(""), .string("a\u{0}b"), .string("\u{0}"), .string("héllo wörld 🎉"), .string("\u{FFFF}"),
            .string("e\u{301}"), .string(String(repeating: "long text ", count: 10_000)), .string("quote ' \" ;"),
        ],
        "flag": [.boolean(true), .boolean(false)],
        "when": [
            .date(Date(timeIntervalSinceReferenceDate: -0.0)), .date(Date(timeIntervalSinceReferenceDate: .nan)),
            .date(Date(timeIntervalSinceReferenceDate: 1e-9)), .date(.distantFuture), .date(.distantPast),
            .date(Date(timeIntervalSinceReferenceDate: 0)), .date(Date(timeIntervalSinceReferenceDate: -1e12)),
        ],
        "blob": [.binary(Data()), .binary(Data([0])), .binary(Data(0...255)), .binary(Data(repeating: 7, count: 1 << 20))],
        "ident": [.uuid(UUID()), .uuid(UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)))],
        "link": [
            .uri(URL(string: "https://example.com/a?b=c#d")!), .uri(URL(string: "file:///tmp/a%20b")!),
            .uri(URL(string: "x-storeapi://8D2A1C51-6E5C-4A55-9F26-0C2C9E0C63A7/Book/p12")!),
        ],
        "archived": [.binary(Data()), .binary(Data([1, 2, 3]))],
        "_pk": [.integer64(42), .integer64(-7)],
        "_hidden": [.string("framework names stay separate")],
    ]

    /// One record per position in the longest value list, cycling through each attribute's values, plus one
    /// record with every attribute nil.
    static func items(_ schema: Schema) -> [Record] {
        let n = edgeValues.values.map(\.count).max() ?? 0
        var records: [Record] = []
        for i in 0..<n {
            var attributes: [String: StoreValue] = [:]
            for (name, values) in edgeValues { attributes[name] = values[i % values.count] }
            records.append(schema.record("Item", Int64(i + 1), attributes))
        }
        records.append(schema.record("Item", Int64(n + 1)))
        return records
    }

    @Test func everyTypeRoundTripsExactly() throws {
        let dir = try TemporaryDirectory("sqlitestore-tests")
        let schema = try Fixture.schema()
        let url = dir.path("values.sqlite")
        let items = Self.items(schema)
        var store = try Fixture.open(url, schema: schema)
        try store.save(StoreChanges(inserted: items))

        func check(_ store: any PersistentStore, _ when: String) throws {
            let keyed = try store.records(withKeys: items.map(\.primaryKey), root: "Item")
                .sorted { $0.primaryKey < $1.primaryKey }
            #expect(keyed == items, "records(withKeys:) \(when)")
            let scanned = try store.scan(entity: "Item", after: nil, limit: 1000)
            #expect(scanned == items, "scan \(when)")
            let fetched = try store.fetch(FetchRequest(entity: "Item"))
            #expect(fetched == items, "fetch \(when)")
            for (a, b) in zip(fetched, items) where a != b {
                for (i, attribute) in schema.entity(named: "Item")!.attributes.enumerated() where a.attributes[i] != b.attributes[i] {
                    Issue.record("\(when): \(attribute.name) of \(a.key): \(a.attributes[i]) != \(b.attributes[i])")
                }
            }
        }
        try check(store, "after save")
        try store.close()
        store = try SQLiteStoreBackend().open(at: url, options: StoreOptions(), creating: nil)
        try check(store, "after reopen")
        try store.close()
    }

    @Test func nanAndNegativeZeroAreStoredAsDesigned() throws {
        let dir = try TemporaryDirectory("sqlitestore-tests")
        let schema = try Fixture.schema()
        let url = dir.path("encoding.sqlite")
        let store = try Fixture.open(url, schema: schema)
        try store.save(StoreChanges(inserted: [
            schema.record("Item", 1, ["dbl": .double(-0.0), "blob": .binary(Data()), "str": .string("")]),
            schema.record("Item", 2, ["dbl": .double(.nan)]),
        ]))
        try store.close()
        // Look at the raw cells: -0.0 stays a REAL (no integer affinity), NaN is an 8-byte blob, the empty blob
        // and the empty string are not NULL.
        let c = try SQLiteConnection.open(url, readOnly: true, timeout: 1)
        defer { c.close() }
        let rows = try c.textRows("SELECT typeof(dbl) || ',' || typeof(blob) || ',' || typeof(str) || ',' || quote(dbl) FROM \"E_Item\" ORDER BY _pk")
        #expect(rows.count == 2)
        #expect(rows.first?.hasPrefix("real,blob,text,") == true, "\(rows)")
        #expect(rows.last?.hasPrefix("blob,null,null,X'7FF8") == true, "\(rows)")
    }

    @Test func aValueOfTheWrongTypeFailsTheWholeSave() throws {
        let dir = try TemporaryDirectory("sqlitestore-tests")
        let schema = try Fixture.schema()
        let store = try Fixture.open(dir.path("types.sqlite"), schema: schema)
        defer { try? store.close() }
        let good = schema.record("Item", 1, ["i16": .integer16(1)])
        let bad = schema.record("Item", 2, ["i16": .string("not a number")])
        let error = errorCase { try store.save(StoreChanges(inserted: [good, bad])) }
        #expect(error == "typeMismatch")
        #expect(try store.fetch(FetchRequest(entity: "Item")).isEmpty, "the good record must not be saved alone")
    }

    @Test func floatsReadBackAsTheSameFloat() throws {
        // Every float pattern class: normal, subnormal, integral, negative zero, infinities, NaNs with payloads.
        let dir = try TemporaryDirectory("sqlitestore-tests")
        let schema = try Fixture.schema()
        let store = try Fixture.open(dir.path("floats.sqlite"), schema: schema)
        defer { try? store.close() }
        let patterns: [UInt32] = [0, 0x8000_0000, 1, 0x007F_FFFF, 0x3F80_0000, 0x7F7F_FFFF, 0x7F80_0000, 0xFF80_0000,
                                  0x7FC0_0000, 0x7F80_0001, 0xFFFF_FFFF, 0x3DCC_CCCD]
        let records = patterns.enumerated().map { i, bits in
            schema.record("Item", Int64(i + 1), ["flt": .float(Float(bitPattern: bits))])
        }
        try store.save(StoreChanges(inserted: records))
        let back = try store.fetch(FetchRequest(entity: "Item"))
        let index = schema.entity(named: "Item")!.attributeIndex("flt")!
        let bits = back.map { r -> UInt32? in
            if case .float(let f) = r.attributes[index] { return f.bitPattern }
            return nil
        }
        #expect(bits == patterns)
    }
}
