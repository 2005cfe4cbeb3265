import Foundation
import StoreAPI
@testable import StoreSync
import StoreTestSupport
import Testing

/// A push writes its change files' lines directly (``ChangeFileWriter``): the bytes must be those the encoder of
/// earlier versions made of the same changes, odd values included, so that every peer reads them as before.
@Suite("Change file writer")
struct ChangeFileWriterTests {
    /// Texts a value can hold that need an escape in JSON, in the line, or both.
    static let oddStrings = [
        "", "plain", "é ✓ 🙂 / \u{2028}", "\"quoted\"", "back\\slash", "tab\there", "new\nline", "ret\rurn",
        "bell \u{07} unit \u{1F}", "\\t \\n \\\\", "\u{7F} del", "\t", "\n", "\\",
    ]

    static let oddValues: [StoreValue] = oddStrings.map { StoreValue.string($0) } + [
        .integer16(.min), .integer16(.max), .integer32(.min), .integer32(-7), .integer64(.min), .integer64(.max),
        .integer64(0), .integer64(9), .integer64(10), .integer64(-1), .double(0.1), .double(-1234.5678e-300), .double(1e300),
        .double(5), .double(0), .double(-0.0), .double(.nan), .double(.infinity), .double(-.infinity),
        .double(.leastNonzeroMagnitude), .double(.greatestFiniteMagnitude), .boolean(true), .boolean(false), .null,
        .float(1.5), .float(.nan), .decimal(Decimal(string: "12.345") ?? 0), .date(Date(timeIntervalSince1970: 1_764_000_000.125)),
        .uuid(UUID()),
        .binary(Data()), .binary(Data([0, 1, 9, 10, 92, 255])),
    ]

    /// The bytes `ChangeBatch.encoded()` made before the writer (kept here as the reference).
    static func previousEncoding(_ batch: ChangeBatch) -> Data {
        var names: [String: Int] = [:]
        var nameList: [String] = []
        var stampTable = StampTable()
        func name(_ s: String) -> Int {
            if let n = names[s] { return n }
            names[s] = nameList.count
            nameList.append(s)
            return nameList.count - 1
        }
        func escape(_ s: String, to out: inout [UInt8]) {
            for b in s.utf8 {
                switch b {
                case UInt8(ascii: "\\"): out += [UInt8(ascii: "\\"), UInt8(ascii: "\\")]
                case 9: out += [UInt8(ascii: "\\"), UInt8(ascii: "t")]
                case 10: out += [UInt8(ascii: "\\"), UInt8(ascii: "n")]
                default: out.append(b)
                }
            }
        }
        var body: [UInt8] = []
        for c in batch.changes {
            body += Array("R\t\(c.id.uuidString)\t\(name(c.entity))\n".utf8)
            if let d = c.deleted { body += Array("D\t\(stampTable.number(d))\n".utf8) }
            for key in c.values.keys.sorted() {
                guard let v = c.values[key] else { continue }
                body += Array("V\t\(name(key))\t\(stampTable.number(v.clock))\t".utf8)
                escape(v.text, to: &body)
                body.append(10)
            }
            for rel in c.members.keys.sorted() {
                for m in c.members[rel] ?? [] {
                    body += Array("M\t\(name(rel))\t\(m.target.uuidString)\t\(m.present ? 1 : 0)\t\(stampTable.number(m.clock))\t".utf8)
                    if let o = m.observed { body += Array("\(stampTable.number(o))".utf8) }
                    body.append(10)
                }
            }
        }
        var out = Array("\(ChangeBatch.linesMagic)\t2\t\(batch.peer.uuidString)\t\(batch.sequence)\t\(batch.changes.count)\n".utf8)
        for s in nameList {
            out += Array("S\t".utf8)
            escape(s, to: &out)
            out.append(10)
        }
        for c in stampTable.stamps { out += Array("C\t\(c.wall)\t\(c.counter)\t\(c.peer.uuidString)\n".utf8) }
        return Data(out + body + Array("E\n".utf8))
    }

    @Test func encodedIsThePreviousEncodersBytes() throws {
        let peer = UUID()
        let clock = HybridLogicalClock(wall: 1_764_000_000_123, counter: 7, peer: peer)
        let later = HybridLogicalClock(wall: 999_999_999_999_999_999, counter: .max, peer: UUID())
        var changes: [RecordChange] = []
        for (n, text) in Self.oddStrings.enumerated() {
            var change = RecordChange(entity: n % 2 == 0 ? "Book" : "Bóok \"q\"\t\\\n", id: UUID())
            change.values[text] = StampedValue(clock: n % 3 == 0 ? later : clock, text: text)
            change.values["z"] = StampedValue(clock: clock, text: try SyncedSchema.text(of: Self.oddValues[n * 2 % Self.oddValues.count]))
            change.values["a"] = StampedValue(clock: .zero, text: "")
            if n % 4 == 1 {
                change.members[text] = [MemberChange(target: UUID(), present: true, clock: clock),
                                        MemberChange(target: UUID(), present: false, clock: later, observed: clock)]
                change.members["b"] = [MemberChange(target: UUID(), present: false, clock: clock)]
            }
            if n % 5 == 2 { change.deleted = later }
            changes.append(change)
        }
        changes.append(RecordChange(entity: "", id: UUID(), deleted: clock))
        changes.append(RecordChange(entity: "Tag", id: UUID()))
        for batch in [ChangeBatch(peer: peer, sequence: 999_999_999_999_999_999, changes: changes), ChangeBatch(peer: peer, sequence: 1, changes: [])] {
            let data = batch.encoded()
            #expect(data == Self.previousEncoding(batch))
            #expect(ChangeBatch.decode(data) == batch)
        }
    }

    /// An attribute value written directly is the text ``SyncedSchema/text(of:)`` makes, escaped for the line, and
    /// reads back to the value.
    @Test func directValuesAreTheirTexts() throws {
        let stamp = HybridLogicalClock(wall: 1, counter: 2, peer: UUID())
        let id = UUID()
        for value in Self.oddValues {
            let text = try SyncedSchema.text(of: value)
            var direct = ChangeFileWriter()
            direct.record(id, entity: direct.number(ofName: "E"))
            try direct.value(direct.number(ofName: "k"), stamp, of: value)
            var viaText = ChangeFileWriter()
            viaText.record(id, entity: viaText.number(ofName: "E"))
            viaText.value(viaText.number(ofName: "k"), stamp, text: text)
            let peer = UUID()
            let data = direct.bytes(peer: peer, sequence: 3)
            #expect(data == viaText.bytes(peer: peer, sequence: 3), "\(text)")
            let read = try #require(ChangeBatch.decode(data)?.changes.first?.values["k"])
            #expect(read.text == text)
            if let type = value.type { #expect(SyncedSchema.value(of: read.text, type: type) == value, "\(text)") }
        }
        // Relationship values: a target's ID (or nothing), an ordered list of IDs.
        let ids = [UUID(), UUID(), UUID()]
        for list in [[], [ids[0]], ids] {
            var w = ChangeFileWriter()
            w.record(ids[0], entity: w.number(ofName: "E"))
            w.value(w.number(ofName: "o"), stamp, ordered: list)
            w.value(w.number(ofName: "t"), stamp, target: list.first)
            let values = try #require(ChangeBatch.decode(w.bytes(peer: ids[1], sequence: 1))?.changes.first?.values)
            #expect(values["o"]?.text == SyncedSchema.text(ofOrdered: list))
            #expect(values["t"]?.text == (list.first?.uuidString ?? ""))
        }
    }

    @Test func integersAreTheirDecimalText() {
        func text<T: FixedWidthInteger>(_ n: T) -> String {
            var out: [UInt8] = []
            TextBytes.append(n, to: &out)
            return String(decoding: out, as: UTF8.self)
        }
        for n: Int64 in [.min, .min + 1, -1_000_000_007, -10, -9, -1, 0, 1, 9, 10, 99, 100, 1_764_000_000_123, .max] {
            #expect(text(n) == String(n))
        }
        for n: Int32 in [.min, -1, 0, 7, .max] { #expect(text(n) == String(n)) }
        for n: Int16 in [.min, .max] { #expect(text(n) == String(n)) }
        for n: UInt64 in [0, 10, .max] { #expect(text(n) == String(n)) }
    }

    /// The files a push writes (a first push of odd values and every kind of relationship, then updates, relinks
    /// and deletes) are those the previous encoder made of the same changes, and another peer pulls the same store.
    @Test func pushedFilesAreThePreviousEncodersBytes() async throws {
        let dir = try TemporaryDirectory()
        let remote = InMemoryRemote()
        let a = try Replica(dir.url.appendingPathComponent("a.sqlite"), type: "sqlite", remote: remote)
        let c = a.context()
        var books: [ManagedObject] = []
        var tags: [ManagedObject] = []
        for (n, s) in Self.oddStrings.enumerated() {
            let author = try c.insert("Author", ["name": .string(s), "born": .integer32(n % 2 == 0 ? .min : .max)])
            let doubles: [Double] = [.nan, .infinity, -.infinity, -0.0, 0.1, 1e300]
            let book = try c.insert("Book", ["title": .string(s + "!"), "pages": .integer64(n % 3 == 0 ? .min : .max),
                                             "rating": .double(doubles[n % doubles.count])])
            try book.setObject(author, forKey: "author")
            tags.append(try c.insert("Tag", ["name": .string("tag \(s) \(n)")]))
            try book.setObjects(Array(tags.suffix(3)), forKey: "tags")
            try book.setObjects(Array(books.suffix(2).reversed()), forKey: "related")
            books.append(book)
        }
        _ = try c.insert("Book", [:])
        try c.save()
        try await a.sync()
        try books[1].setValue(.string("changed \"\t\n"), forKey: "title")
        try books[2].setObjects([tags[0]], forKey: "tags")
        try books[3].setObjects([books[5], books[4]], forKey: "related")
        try books[3].setObject(nil, forKey: "author")
        try c.delete(books[4])
        try c.delete(tags[6])
        try c.save()
        try await a.sync()

        let names = try await remote.list(after: nil).names
        #expect(names.count == 2)
        for name in names {
            let data = try await remote.fetch(name)
            let batch = try #require(ChangeBatch.decode(data))
            #expect(data == Self.previousEncoding(batch), "\(name)")
        }
        let b = try Replica(dir.url.appendingPathComponent("b.sqlite"), type: "sqlite", remote: remote)
        try await b.sync()
        #expect(try b.differences(from: a).isIdentical)
    }
}
