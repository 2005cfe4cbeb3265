import Foundation
@_spi(BackendKit) import StoreAPI
import Testing

/// The backend kit's binary property list reader and writer: every object type, round trips, Python's `plistlib`
/// both ways, and hostile files.
@Suite struct PropertyListTests {
    static let everyType: PropertyListValue = .dictionary([
        ("null", .null), ("true", .bool(true)), ("false", .bool(false)),
        ("small", .integer(7)), ("byte", .integer(255)), ("short", .integer(65_535)), ("int", .integer(4_000_000_000)),
        ("long", .integer(Int64.max)), ("negative", .integer(-1)), ("min", .integer(Int64.min)),
        ("huge", .unsignedInteger(UInt64.max)), ("real", .real(0.1)), ("nan", .real(.nan)), ("negzero", .real(-0.0)),
        ("date", .date(Date(timeIntervalSinceReferenceDate: 123_456.789))),
        ("data", .data(Data((0..<300).map { UInt8($0 & 0xFF) }))), ("empty", .data(Data())),
        ("ascii", .string("NSStoreModelVersionHashes")), ("unicode", .string("Bücher 📚 über alles")),
        ("long string", .string(String(repeating: "x", count: 70_000))),
        ("uid", .uid(3)), ("big uid", .uid(70_000)),
        ("array", .array((0..<20).map { .integer(Int64($0)) })), ("set", .set([.string("a"), .string("b")])),
        ("nested", .dictionary([("inner", .array([.dictionary([("k", .string("v"))])]))])),
    ])

    @Test func everyTypeRoundTrips() throws {
        let bytes = BinaryPropertyListWriter.write(Self.everyType)
        #expect(BinaryPropertyListReader.looksLikeBinaryPropertyList(bytes))
        #expect(try BinaryPropertyListReader.read(bytes) == Self.everyType)
        // Writing what was read gives the same bytes.
        #expect(BinaryPropertyListWriter.write(try BinaryPropertyListReader.read(bytes)) == bytes)
    }

    @Test func manyObjectsNeedWideReferencesAndOffsets() throws {
        let value = PropertyListValue.array((0..<70_000).map { .string("s\($0)") })
        #expect(try BinaryPropertyListReader.read(BinaryPropertyListWriter.write(value)) == value)
    }

    @Test func pythonReadsWhatTheWriterWrites() throws {
        let value = PropertyListValue.dictionary([
            ("s", .string("héllo")), ("i", .integer(-5)), ("big", .integer(1 << 40)), ("r", .real(2.5)),
            ("b", .bool(true)), ("d", .data(Data([1, 2, 3]))), ("a", .array([.string("x"), .integer(1)])),
            ("t", .date(Date(timeIntervalSinceReferenceDate: 0))), ("u", .uid(9)),
        ])
        let program = """
        import plistlib, sys
        v = plistlib.loads(sys.stdin.buffer.read())
        assert v['s'] == 'héllo' and v['i'] == -5 and v['big'] == 1 << 40 and v['r'] == 2.5 and v['b'] is True
        assert v['d'] == b'\\x01\\x02\\x03' and v['a'] == ['x', 1] and v['u'] == plistlib.UID(9)
        assert v['t'].year == 2001
        print('ok')
        """
        guard let result = try runPython(program, input: BinaryPropertyListWriter.write(value)) else {
            withKnownIssue("python3 is not available; the plistlib check did not run") { Issue.record("no python3") }
            return
        }
        #expect(result.status == 0)
        #expect(String(decoding: result.out, as: UTF8.self).contains("ok"))
    }

    @Test func readsWhatPythonWrites() throws {
        let program = """
        import plistlib, sys, datetime
        v = {'ascii': 'abc', 'utf16': 'Zürich ✓', 'i1': 200, 'i2': 60000, 'i4': 4000000000, 'i8': 1 << 62,
             'neg': -3, 'u128': (1 << 64) - 1, 'real': 1.5, 'yes': True, 'no': False, 'data': b'\\x00\\xff',
             'arr': [1, 'two', [3]], 'uid': plistlib.UID(300), 'when': datetime.datetime(2001, 1, 1, 0, 1, 0)}
        sys.stdout.buffer.write(plistlib.dumps(v, fmt=plistlib.FMT_BINARY, sort_keys=True))
        """
        guard let result = try runPython(program) else {
            withKnownIssue("python3 is not available; the plistlib check did not run") { Issue.record("no python3") }
            return
        }
        try #require(result.status == 0)
        let v = try BinaryPropertyListReader.read([UInt8](result.out))
        #expect(v["ascii"] == .string("abc"))
        #expect(v["utf16"] == .string("Zürich ✓"))
        #expect(v["i1"] == .integer(200))
        #expect(v["i2"] == .integer(60_000))
        #expect(v["i4"] == .integer(4_000_000_000))
        #expect(v["i8"] == .integer(1 << 62))
        #expect(v["neg"] == .integer(-3))
        #expect(v["u128"] == .unsignedInteger(UInt64.max))
        #expect(v["real"] == .real(1.5))
        #expect(v["yes"] == .bool(true))
        #expect(v["no"] == .bool(false))
        #expect(v["data"] == .data(Data([0, 0xFF])))
        #expect(v["arr"] == .array([.integer(1), .string("two"), .array([.integer(3)])]))
        #expect(v["uid"] == .uid(300))
        #expect(v["when"] == .date(Date(timeIntervalSinceReferenceDate: 60)))
    }

    @Test func readsFourByteRealsAndSixteenByteNegatives() throws {
        let float: [UInt8] = [0x22] + withUnsafeBytes(of: Float(1.25).bitPattern.bigEndian, Array.init)
        #expect(try BinaryPropertyListReader.read(assemblePlist([float])) == .real(1.25))
        let minusTwo: [UInt8] = [0x14] + [UInt8](repeating: 0xFF, count: 15) + [0xFE]
        #expect(try BinaryPropertyListReader.read(assemblePlist([minusTwo])) == .integer(-2))
    }

    // MARK: Hostile input

    static func rejects(_ bytes: [UInt8], _ fragment: String, sourceLocation: SourceLocation = #_sourceLocation) {
        do throws(PropertyListError) {
            let v = try BinaryPropertyListReader.read(bytes)
            Issue.record("accepted: \(v.summary)", sourceLocation: sourceLocation)
        } catch {
            #expect(error.message.contains(fragment), "\(error)", sourceLocation: sourceLocation)
        }
    }

    @Test func rejectsNonPlistsAndTruncatedTrailers() {
        Self.rejects([], "no bplist header")
        Self.rejects(Array("<?xml version".utf8), "no bplist header")
        Self.rejects(Array("bplist15".utf8) + [UInt8](repeating: 0, count: 40), "unsupported")
        let good = BinaryPropertyListWriter.write(.array([.string("a")]))
        for cut in [8, 20, good.count - 1] {
            do {
                _ = try BinaryPropertyListReader.read(Array(good.prefix(cut)))
                Issue.record("a file cut to \(cut) bytes was accepted")
            } catch {}
        }
    }

    @Test func rejectsBadTrailerFields() {
        let one: [[UInt8]] = [[0x09]]
        Self.rejects(assemblePlist(one, refSize: 0), "reference size")
        Self.rejects(assemblePlist(one, offsetSize: 9), "offset size")
        Self.rejects(assemblePlist(one, objectCount: 0), "objects")
        Self.rejects(assemblePlist(one, objectCount: 1 << 60), "objects")
        Self.rejects(assemblePlist(one, top: 5), "top object")
        Self.rejects(assemblePlist(one, tableOffset: 1 << 40), "offset table")
        Self.rejects(assemblePlist(one, tableOffset: 3), "offset table")
    }

    @Test func rejectsOffsetsAndReferencesOutOfRange() {
        Self.rejects(assemblePlist([[0x09]], offsets: [200]), "outside the object area")
        Self.rejects(assemblePlist([[0x09]], offsets: [2]), "outside the object area")
        Self.rejects(assemblePlist([[0xA1, 0x07], [0x09]]), "out of range")
        Self.rejects(assemblePlist([[0xD1, 0x01, 0x05], [0x51, 0x61]]), "out of range")
    }

    @Test func rejectsCycles() {
        // An array containing itself, and two arrays containing each other.
        Self.rejects(assemblePlist([[0xA1, 0x00]]), "contains itself")
        Self.rejects(assemblePlist([[0xA1, 0x01], [0xA1, 0x00]]), "contains itself")
        // A dictionary whose value is the dictionary.
        Self.rejects(assemblePlist([[0xD1, 0x01, 0x00], [0x51, 0x6B]]), "contains itself")
    }

    @Test func rejectsAbsurdCounts() {
        // An array claiming 2^40 elements, a string and data claiming more bytes than the file has.
        Self.rejects(assemblePlist([[0xAF, 0x13, 0, 0, 0x01, 0, 0, 0, 0, 0]]), "count")
        Self.rejects(assemblePlist([[0x5F, 0x12, 0x7F, 0xFF, 0xFF, 0xFF]]), "count")
        Self.rejects(assemblePlist([[0x4F, 0x10, 0x05, 0x41]]), "data runs past")
        Self.rejects(assemblePlist([[0x6F, 0x10, 0x05, 0x00]]), "UTF-16 string runs past")
        Self.rejects(assemblePlist([[0xAF, 0x10, 0x05, 0x01]]), "collection of 5 runs past")
    }

    @Test func rejectsDeepNesting() {
        // Object i is an array holding object i + 1; the last is `true`.
        let depth = BinaryPropertyListReader.maxDepth + 10
        var objects: [[UInt8]] = (0..<depth).map { i in [0xA1] + withUnsafeBytes(of: UInt16(i + 1).bigEndian, Array.init) }
        objects.append([0x09])
        Self.rejects(assemblePlist(objects, refSize: 2, offsetSize: 2), "nested deeper")
    }

    @Test func rejectsExponentialSharing() {
        // Object i is [i+1, i+1]: 40 levels would expand to 2^40 values if shared objects were expanded.
        var objects: [[UInt8]] = (0..<40).map { i in [0xA2, UInt8(i + 1), UInt8(i + 1)] }
        objects.append([0x09])
        Self.rejects(assemblePlist(objects), "expand to more than")
    }

    @Test func rejectsBadScalars() {
        Self.rejects(assemblePlist([[0x14] + [0x01] + [UInt8](repeating: 0, count: 15)]), "16-byte integer")
        Self.rejects(assemblePlist([[0x15, 0, 0]]), "integer of")
        Self.rejects(assemblePlist([[0x61, 0xD8, 0x00]]), "unpaired surrogate")
        Self.rejects(assemblePlist([[0x0C]]), "unknown object marker")
        Self.rejects(assemblePlist([[0xF0]]), "unknown object marker")
        Self.rejects(assemblePlist([[0xD1, 0x01, 0x01], [0x10, 0x01]]), "key is not a string")
        Self.rejects(assemblePlist([[0x13, 0x00]]), "runs past")
    }

    @Test func mutatedFilesNeverCrash() {
        // A deterministic sweep: every single-byte change of a small real plist either reads or throws.
        let base = BinaryPropertyListWriter.write(.dictionary([
            ("a", .array([.integer(1), .string("ü"), .data(Data([9]))])), ("b", .uid(2)), ("c", .real(1)),
        ]))
        for i in 0..<base.count {
            for replacement: UInt8 in [0x00, 0x0F, 0x7F, 0x80, 0xFF, base[i] ^ 0x01] {
                var bytes = base
                bytes[i] = replacement
                _ = try? BinaryPropertyListReader.read(bytes)
            }
        }
    }
}
