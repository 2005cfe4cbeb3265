import Foundation
import StoreAPI
@testable import StoreSync
import Testing

/// Change files are written in format 2 (lines with tables of names and stamps) and read in format 2 and in format 1
/// (JSON, as `Codable` makes it, written by peers of earlier versions); anything else is ignored, never misread.
@Suite("Change files")
struct ChangeFileTests {
    static func sample() -> ChangeBatch {
        let peer = UUID()
        let clock = HybridLogicalClock(wall: 1_764_000_000_123, counter: 7, peer: peer)
        let later = HybridLogicalClock(wall: 1_764_000_000_124, counter: 0, peer: UUID())
        var change = RecordChange(entity: "Bóok \"quoted\"\tand tab", id: UUID())
        change.values["title"] = StampedValue(clock: clock, text: "\"tab\there\", new\nline, back\\slash, \\t, bell \u{07}, é ✓\r")
        change.values["pages"] = StampedValue(clock: later, text: "42")
        change.values["empty"] = StampedValue(clock: clock, text: "")
        change.members["tags"] = [MemberChange(target: UUID(), present: true, clock: clock),
                                  MemberChange(target: UUID(), present: false, clock: later, observed: clock)]
        let deleted = RecordChange(entity: "", id: UUID(), deleted: later)
        return ChangeBatch(peer: peer, sequence: 12, changes: [change, deleted, RecordChange(entity: "Tag", id: UUID())])
    }

    @Test func format2RoundTripsAndRefusesDamage() throws {
        let batch = Self.sample()
        let data = batch.encoded()
        #expect(batch.format == 2)
        #expect(ChangeBatch.decode(data) == batch)
        #expect(ChangeBatch.decode(ChangeBatch(peer: UUID(), sequence: 1, changes: []).encoded())?.changes == [])
        // Cut anywhere, it does not read: the end marker is missing or a line is broken.
        for cut in stride(from: 1, to: data.count, by: max(1, data.count / 97)) {
            #expect(ChangeBatch.decode(data.prefix(cut)) == nil, "cut at \(cut)")
        }
        let text = String(decoding: data, as: UTF8.self)
        func damaged(_ from: String, _ to: String) -> Data { Data(text.replacingOccurrences(of: from, with: to).utf8) }
        #expect(ChangeBatch.decode(damaged("storesync-changes\t2\t", "storesync-changes\t3\t")) == nil, "a later format")
        #expect(ChangeBatch.decode(damaged("\t12\t3\n", "\t12\t4\n")) == nil, "a record count that does not match")
        #expect(ChangeBatch.decode(damaged("\nD\t", "\nD\t9")) == nil, "a stamp number out of the table")
        #expect(ChangeBatch.decode(damaged("\nE\n", "\nX\n")) == nil, "an unknown line")
        #expect(ChangeBatch.decode(data + Data("R\t\n".utf8)) == nil, "lines after the end")
        // A global ID is read only in the upper-case form peers write.
        let id = batch.changes[1].id.uuidString
        let wrongIDs: [(String, String)] = [
            (id.lowercased(), "lower-case hex digits"), ("G" + String(id.dropFirst()), "a letter beyond F"),
            (String(id.prefix(8)) + "0" + String(id.dropFirst(9)), "a dash missing"),
            ("/" + String(id.dropFirst()), "a byte below 0"),
        ]
        for (wrong, why) in wrongIDs where wrong != id {
            #expect(ChangeBatch.decode(damaged(id, wrong)) == nil, "\(why)")
        }
        // Every digit reads to its value.
        let digits = UUID(uuid: (0x01, 0x23, 0x45, 0x67, 0x89, 0xAB, 0xCD, 0xEF, 0xFE, 0xDC, 0xBA, 0x98, 0x76, 0x54, 0x32, 0x10))
        let all = ChangeBatch(peer: digits, sequence: 1, changes: [RecordChange(entity: "Tag", id: digits)])
        #expect(ChangeBatch.decode(all.encoded()) == all)
    }

    @Test func format1FilesOfEarlierPeersStillRead() throws {
        var batch = Self.sample()
        batch.format = 1
        let direct = batch.jsonEncoded()
        #expect(ChangeBatch.decode(direct) == batch)
        #expect(try JSONDecoder().decode(ChangeBatch.self, from: direct) == batch)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let viaCodable = try encoder.encode(batch)
        #expect(ChangeBatch.decode(viaCodable) == batch)
        // Not change files of a layout this version reads: ignored, never misread.
        #expect(ChangeBatch.decode(Data("{}".utf8)) == nil)
        #expect(ChangeBatch.decode(Data(String(decoding: direct, as: UTF8.self).replacingOccurrences(of: #""format":1"#, with: #""format":3"#).utf8)) == nil)
        #expect(ChangeBatch.decode(direct.prefix(direct.count / 2)) == nil)
    }

    /// Value texts written directly read back to the same value, here and through `JSONSerialization` (as peers of
    /// earlier versions read them); texts those peers wrote read the same here.
    @Test func valueTextsRoundTripAndReadAsJSONSerializationReadsThem() throws {
        let values: [(StoreValue, AttributeType)] = [
            (.string("plain"), .string), (.string(""), .string), (.string("é ✓ 🙂 / \u{2028}"), .string),
            (.string("\"quote\" back\\slash\ttab\nnew\rret \u{07} \u{1F}"), .string),
            (.integer16(.min), .integer16), (.integer32(-7), .integer32), (.integer64(.max), .integer64), (.integer64(0), .integer64),
            (.double(0.1), .double), (.double(-1234.5678e-300), .double), (.double(1e300), .double), (.double(5), .double),
            (.double(-0.0), .double), (.double(.infinity), .double), (.boolean(true), .boolean), (.boolean(false), .boolean),
            (.null, .string), (.null, .integer64), (.float(1.5), .float), (.decimal(Decimal(string: "12.345") ?? 0), .decimal),
            (.date(Date(timeIntervalSince1970: 1_764_000_000.125)), .date), (.uuid(UUID()), .uuid),
            (.binary(Data([0, 1, 255])), .binary),
        ]
        for (value, type) in values {
            let text = try SyncedSchema.text(of: value)
            #expect(SyncedSchema.value(of: text, type: type) == value, "\(text)")
            let parsed = try JSONSerialization.jsonObject(with: Data(text.utf8), options: [.fragmentsAllowed]) as? [Any]
            #expect(parsed.flatMap { $0.count == 1 ? StoreValue(json: $0[0], type: type) : nil } == value, "\(text) as JSON")
            let earlier = String(decoding: try JSONSerialization.data(withJSONObject: [value.jsonObject], options: [.fragmentsAllowed]),
                                 as: UTF8.self)
            #expect(SyncedSchema.value(of: earlier, type: type) == value, "\(earlier) of an earlier peer")
        }
        #expect(SyncedSchema.value(of: "[nan]", type: .double) == nil)
        #expect(SyncedSchema.value(of: "[1.5]", type: .integer64) == nil)
        #expect(SyncedSchema.value(of: "[70000]", type: .integer16) == nil)
        #expect(SyncedSchema.value(of: "[\"x\"]", type: .integer64) == nil)
        #expect(SyncedSchema.value(of: "[1]", type: .string) == nil)
        #expect(SyncedSchema.value(of: "[\"unterminated]", type: .string) == nil)
    }

    /// Integer texts read in place as `Int64(_:)` reads a text of digits and minus signs (in range for the type);
    /// every other text as `JSONSerialization` reads it.
    @Test func integerTextsReadAsInt64AndJSONSerializationReadThem() {
        var texts = ["0", "-0", "007", "-", "--1", "1-", "+1", "1e3", " 1", "12a", "9223372036854775807", "-9223372036854775808",
                     "9223372036854775808", "-9223372036854775809", "99999999999999999999", "32767", "32768", "-32769",
                     "2147483647", "2147483648"]
        var g = SystemRandomNumberGenerator()
        for _ in 0..<2_000 { texts.append(String(Int64.random(in: .min ... .max, using: &g) >> Int64.random(in: 0...62, using: &g))) }
        for t in texts {
            for type in [AttributeType.integer16, .integer32, .integer64] {
                let got = SyncedSchema.value(of: "[\(t)]", type: type)
                let digits = !t.isEmpty && t.utf8.allSatisfy { ($0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9")) || $0 == UInt8(ascii: "-") }
                if digits, let i = Int64(t) {
                    let expected: StoreValue? = switch type {
                    case .integer16: Int16(exactly: i).map { .integer16($0) }
                    case .integer32: Int32(exactly: i).map { .integer32($0) }
                    default: .integer64(i)
                    }
                    if let expected {
                        #expect(got == expected, "\(t) as \(type)")
                        continue
                    }
                }
                let json = (try? JSONSerialization.jsonObject(with: Data("[\(t)]".utf8), options: [.fragmentsAllowed])) as? [Any]
                #expect(got == json.flatMap { $0.count == 1 ? StoreValue(json: $0[0], type: type) : nil }, "\(t) as \(type)")
            }
        }
    }

    /// Stamps of the same time and counter order by peer ID as its string form does, whichever bytes differ.
    @Test func stampTiesOrderByThePeerIDsStringForm() {
        for _ in 0..<2_000 {
            var a = UUID().uuid, b = UUID().uuid
            // Often equal up to a random byte, so that every position decides some comparisons.
            if Bool.random() {
                b = a
                withUnsafeMutableBytes(of: &b) { $0[Int.random(in: 0..<16)] = UInt8.random(in: 0...255) }
            }
            let x = HybridLogicalClock(wall: 5, counter: 1, peer: UUID(uuid: a))
            let y = HybridLogicalClock(wall: 5, counter: 1, peer: UUID(uuid: b))
            #expect((x < y) == (x.peer.uuidString < y.peer.uuidString))
            #expect((y < x) == (y.peer.uuidString < x.peer.uuidString))
            #expect(x.peer.keyString == x.peer.uuidString && y.peer.keyString == y.peer.uuidString)
        }
    }
}
