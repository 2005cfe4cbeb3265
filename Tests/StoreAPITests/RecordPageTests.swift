import Foundation
@_spi(BackendKit) import StoreAPI
import Testing

/// ``RecordPage``: records survive the page form exactly, and a page that does not match its entity's layout is
/// refused, never misread.
@Suite struct RecordPageTests {
    static func schema() throws -> Schema {
        try Schema(entities: [
            EntityDescription(name: "Thing", attributes: [
                AttributeDescription(name: "i16", type: .integer16), AttributeDescription(name: "i64", type: .integer64),
                AttributeDescription(name: "dec", type: .decimal), AttributeDescription(name: "dbl", type: .double),
                AttributeDescription(name: "flt", type: .float), AttributeDescription(name: "str", type: .string),
                AttributeDescription(name: "flag", type: .boolean), AttributeDescription(name: "when", type: .date),
                AttributeDescription(name: "blob", type: .binary), AttributeDescription(name: "uid", type: .uuid),
                AttributeDescription(name: "link", type: .uri),
            ], relationships: [
                RelationshipDescription(name: "parent", destination: "Thing", inverse: "children"),
                RelationshipDescription(name: "children", destination: "Thing", inverse: "parent", isToMany: true, isOrdered: true),
            ]),
        ])
    }

    static func things(_ entity: Entity) -> [Record] {
        let values: [[StoreValue]] = [
            [.integer16(.min), .integer64(.max), .decimal(Decimal(string: "-12.50")!), .double(.nan), .float(-0.0),
             .string("a\u{0}ü🚀"), .boolean(true), .date(.distantPast), .binary(Data([0, 255, 1])), .uuid(UUID()),
             .uri(URL(string: "https://example.com/a?b=c#d")!)],
            Array(repeating: .null, count: 11),
            [.integer16(0), .integer64(-1), .decimal(Decimal(string: "123456789012345678901234567890.5")!), .double(-.infinity),
             .float(.nan), .string(""), .boolean(false), .date(Date(timeIntervalSinceReferenceDate: 0.5)), .binary(Data()),
             .null, .uri(URL(string: "file:///tmp/with%20space")!)],
        ]
        return values.enumerated().map { i, v in
            Record(entity: entity.name, primaryKey: Int64(i + 1), globalID: UUID(), attributes: v,
                   relationships: [.toOne(i == 0 ? nil : 1), .toMany(i == 0 ? [3, 2] : [])])
        }
    }

    @Test func recordsSurviveThePageForm() throws {
        let schema = try Self.schema()
        let thing = try schema.requireEntity("Thing")
        let records = Self.things(thing)
        var page = RecordPage(entity: "Thing")
        for r in records { page.append(r) }
        #expect(page.count == 3 && page.primaryKeys == [1, 2, 3])
        let back = try page.records(in: schema)
        // NaN is not equal to itself: compare what is stored, bit for bit, through the page form again.
        var again = RecordPage(entity: "Thing")
        for r in back { again.append(r) }
        for i in 0..<3 {
            page.withEncodedRecord(at: i) { v1, l1 in
                again.withEncodedRecord(at: i) { v2, l2 in
                    #expect(Array(v1) == Array(v2) && Array(l1) == Array(l2), "record \(i + 1)")
                }
            }
        }
        #expect(back[1] == records[1] && back[2].relationships == records[2].relationships)
        #expect(back[0].attributes[5] == .string("a\u{0}ü🚀") && back[0].relationships == [.toOne(nil), .toMany([3, 2])])
    }

    /// Reading links into a reused slot gives what ``RecordPage/LinkReader/next()`` gives, whatever the slot held
    /// before (a list longer or shorter than the next, a to-one, nothing), and refuses what it refuses.
    @Test func linksReadIntoAReusedSlotAreTheLinksRead() {
        let values: [RelationshipValue] = [.toMany([5, 6, 7]), .toOne(4), .toMany([]), .toOne(nil), .toMany([9]),
                                           .toMany([-1, .max, .min, 0]), .toOne(.min), .toMany([3, 3])]
        var page = RecordPage(entity: "Link")
        for (i, _) in values.enumerated() {
            // Each record's values rotated, so that every slot meets every kind of value after every other.
            let rotated = Array(values[i...] + values[..<i])
            page.append(Record(entity: "Link", primaryKey: Int64(i + 1), globalID: UUID(), attributes: [],
                               relationships: rotated))
        }
        var slots = [RelationshipValue](repeating: .toOne(nil), count: values.count)
        for i in 0..<page.count {
            page.withEncodedRecord(at: i) { _, links in
                var plain = RecordPage.LinkReader(links), reused = RecordPage.LinkReader(links)
                for k in slots.indices {
                    let expected = plain.next()
                    let read = reused.next(into: &slots[k])
                    #expect(read)
                    #expect(slots[k] == expected, "record \(i + 1), value \(k)")
                }
                #expect(plain.isAtEnd && reused.isAtEnd)
                var end = RelationshipValue.toMany([1])
                let readPastEnd = reused.next(into: &end), plainPastEnd = plain.next()
                #expect(!readPastEnd && plainPastEnd == nil)
            }
        }
        // Cut short inside a list, or an unknown kind: refused.
        for bytes: [UInt8] in [[2, 3, 2, 4], [7], [1]] {
            var slot = RelationshipValue.toMany([8, 9])
            bytes.withUnsafeBytes { raw in
                var plain = RecordPage.LinkReader(raw), reused = RecordPage.LinkReader(raw)
                let plainRead = plain.next(), read = reused.next(into: &slot)
                #expect(plainRead == nil && !read)
            }
        }
    }

    @Test func pagesThatDoNotFitTheirEntityAreRefused() throws {
        let schema = try Self.schema()
        let thing = try schema.requireEntity("Thing")
        var short = RecordPage(entity: "Thing")  // one value too few
        short.beginRecord(primaryKey: 1, globalID: UUID())
        for _ in 0..<10 { short.appendNull() }
        short.endValues()
        short.appendToOne(nil)
        short.appendToMany([])
        short.endLinks()
        #expect(throws: StoreError.self) { try short.records(in: schema) }

        var wrongKind = RecordPage(entity: "Thing")  // `children` given a to-one value
        wrongKind.beginRecord(primaryKey: 1, globalID: UUID())
        for _ in 0..<11 { wrongKind.appendNull() }
        wrongKind.endValues()
        wrongKind.appendToOne(nil)
        wrongKind.appendToOne(2)
        wrongKind.endLinks()
        #expect(throws: StoreError.self) { try wrongKind.records(in: schema) }

        var badText = RecordPage(entity: "Thing")  // a string that is not UTF-8
        badText.beginRecord(primaryKey: 1, globalID: UUID())
        for _ in 0..<5 { badText.appendNull() }
        [UInt8]([0x61, 0xFF]).withUnsafeBytes { badText.appendBytes($0, tag: .string) }
        for _ in 0..<5 { badText.appendNull() }
        badText.endValues()
        badText.appendToOne(nil)
        badText.appendToMany([])
        badText.endLinks()
        #expect(throws: StoreError.self) { try badText.records(in: schema) }

        // The checks a store makes before writing a page's bytes as they are.
        var page = RecordPage(entity: "Thing")
        page.append(Self.things(thing)[0])
        page.withEncodedRecord(at: 0) { values, links in
            #expect(RecordPage.checkValues(values, count: 11) { _, _ in true })
            #expect(!RecordPage.checkValues(values, count: 10) { _, _ in true }, "a value left over")
            #expect(!RecordPage.checkValues(values, count: 12) { _, _ in true }, "a value missing")
            #expect(!RecordPage.checkValues(values, count: 11) { position, tag in position != 5 || tag != RecordPage.Tag.string.rawValue })
            #expect(!RecordPage.checkValues(UnsafeRawBufferPointer(rebasing: values.dropLast()), count: 11) { _, _ in true }, "truncated")
            #expect(RecordPage.checkLinks(links, toMany: [false, true]))
            #expect(!RecordPage.checkLinks(links, toMany: [true, true]))
            #expect(!RecordPage.checkLinks(links, toMany: [false]))
        }
    }
}

/// ``UTF8Bytes``: the ASCII fast path never decides for text it should not (bytes ≥ 0x80 anywhere, at every
/// position of an eight-byte word and in the tail), and validity matches Swift's own decoder.
@Suite struct UTF8BytesTests {
    @Test func asciiAndValidityMatchTheDecoder() {
        let samples: [[UInt8]] = [[], Array("plain text, longer than eight".utf8), Array("ü".utf8), [0x61, 0xFF], [0xC3], [0x00]]
        var all = samples
        for position in 0..<17 {
            var bytes = [UInt8](repeating: 0x61, count: 17)
            bytes[position] = 0x80
            all.append(bytes)
        }
        for bytes in all {
            bytes.withUnsafeBytes { b in
                #expect(UTF8Bytes.isASCII(b) == bytes.allSatisfy { $0 < 0x80 }, "\(bytes)")
                #expect(UTF8Bytes.isValid(b) == (String(validating: bytes, as: UTF8.self) != nil), "\(bytes)")
            }
        }
    }
}
