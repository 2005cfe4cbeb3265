import Foundation
import StoreAPI
import StoreTestSupport
import Testing

/// The storage encoding of history transactions: every field survives it, the JSON of stores written before it
/// still reads, and damaged bytes are a typed error naming the store, never a crash.
@Suite struct HistoryEncodingTests {
    static let store = URL(fileURLWithPath: "/stores/history-encoding.sqlite")

    static func id(_ n: UInt8) -> UUID {
        UUID(uuid: (n, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, n &+ 1))
    }

    /// Transactions that together use every field, the empty and absent cases, and edge values.
    static func samples() -> [HistoryTransaction] {
        let kinds: [HistoryChange.Kind] = [.insert, .update, .delete]
        var many: [HistoryChange] = []
        for i in 0..<1000 {
            let keys: [String] = i % 3 == 1 ? ["k\(i % 20)", "name", "é✓"] : []
            let tombstone: [String: String] = i % 3 == 2 ? ["code": "\(i)", "ünïcode": "🙂", "": ""] : [:]
            many.append(HistoryChange(kind: kinds[i % 3], entity: "Entity\(i % 12)", primaryKey: Int64(i) - 500,
                                      globalID: id(UInt8(i % 256)), changedKeys: keys, tombstone: tombstone))
        }
        return [
            HistoryTransaction(token: 1, timestamp: Date(timeIntervalSinceReferenceDate: 757_382_400.25), author: "me",
                               contextName: "editor", processName: "storectl", bundleIdentifier: "com.example.app",
                               changes: [HistoryChange(kind: .insert, entity: "Book", primaryKey: 42, globalID: id(7))]),
            HistoryTransaction(token: .max, timestamp: Date(timeIntervalSinceReferenceDate: -0.0), author: nil, changes: []),
            HistoryTransaction(token: .min, timestamp: .distantFuture, author: "", contextName: "", processName: nil,
                               bundleIdentifier: "", changes: [
                                   HistoryChange(kind: .update, entity: "", primaryKey: .min, globalID: id(0), changedKeys: ["", "a", ""]),
                                   HistoryChange(kind: .delete, entity: "", primaryKey: .max, globalID: id(255),
                                                 tombstone: ["isbn": "978-0\u{0}1", "line\nbreak": String(repeating: "x", count: 300)]),
                               ]),
            HistoryTransaction(token: HistoryTransaction.assignToken, timestamp: .distantPast, author: "ä\u{301}",
                               processName: "worker", changes: many),
        ]
    }

    @Test func everyFieldSurvivesTheEncoding() throws {
        for t in Self.samples() {
            let data = try t.encoded()
            let back = try HistoryTransaction.decode(data, url: Self.store)
            #expect(back == t)
            #expect(back.timestamp.timeIntervalSinceReferenceDate.bitPattern == t.timestamp.timeIntervalSinceReferenceDate.bitPattern)
        }
    }

    @Test func theFirstByteCanNeverStartJSON() throws {
        for t in Self.samples() {
            let first = try #require(try t.encoded().first)
            #expect(!Array("{[\" \t\r\n-0123456789tfn".utf8).contains(first))
            // Not a UTF-8 lead byte (nor the byte-order mark's), so no JSON text starts with it.
            #expect(first & 0xC0 == 0x80)
        }
    }

    @Test func equalTransactionsEncodeToEqualBytes() throws {
        let keys = (0..<40).map { "key\($0)" }
        var a: [String: String] = [:]
        var b: [String: String] = [:]
        for k in keys { a[k] = k }
        for k in keys.reversed() { b[k] = k }
        func transaction(_ tombstone: [String: String]) -> HistoryTransaction {
            HistoryTransaction(token: 3, timestamp: Date(timeIntervalSinceReferenceDate: 1), author: nil, changes: [
                HistoryChange(kind: .delete, entity: "Tag", primaryKey: 1, globalID: Self.id(1), tombstone: tombstone)])
        }
        #expect(try transaction(a).encoded() == transaction(b).encoded())
    }

    @Test func repeatedNamesAreWrittenOnce() throws {
        let changes = (0..<1000).map {
            HistoryChange(kind: .update, entity: "ReadingListEntry", primaryKey: Int64($0), globalID: UUID(),
                          changedKeys: ["lastOpened", "position"])
        }
        let t = HistoryTransaction(token: 9, timestamp: Date(), author: "sync", changes: changes)
        let binary = try t.encoded()
        // Per change: head, entity reference, a key of at most 2 bytes, the 16-byte global ID, a count, two key references.
        #expect(binary.count < 100 + changes.count * 23)
        #expect(binary.count * 4 < (try t.legacyJSONEncoded()).count)
    }

    @Test func historyWrittenAsJSONStillReads() throws {
        for t in Self.samples() {
            let json = try t.legacyJSONEncoded()
            #expect(json.first == UInt8(ascii: "{"))
            #expect(try HistoryTransaction.decode(json, url: Self.store) == t)
        }
    }

    /// Every prefix of an encoding is refused (an encoding never ends early), as the store's corruption.
    @Test func everyTruncationIsACorruptStore() throws {
        for t in Self.samples().prefix(3) {
            let data = try t.encoded()
            for length in 0..<data.count {
                Self.expectCorrupt(data.prefix(length), "prefix of \(length) of \(data.count) bytes")
            }
            Self.expectCorrupt(data + [0], "a byte after the last change")
        }
        // The long sample: a spread of prefixes, so the check stays quick.
        let long = try Self.samples()[3].encoded()
        for length in stride(from: 0, to: long.count, by: 97) { Self.expectCorrupt(long.prefix(length), "prefix of \(length)") }
        Self.expectCorrupt(long.dropLast(), "all but the last byte")
    }

    @Test func damagedFieldsAreACorruptStore() throws {
        let t = Self.samples()[0]
        let data = try t.encoded()
        let format = Self.expectCorrupt(Data([0xB2]) + data.dropFirst(), "a later format")
        #expect(format.contains("unknown history format 0xB2"))
        // format, token 1, 8 timestamp bytes, then the present-fields byte.
        var fields = data
        fields[10] |= 0x10
        Self.expectCorrupt(fields, "an unknown optional field")
        // A change count far beyond the bytes left must fail before anything is allocated for it.
        let huge = Data([0xB1, 2]) + Data(count: 8) + Data([0]) + Data([0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x7F])
        Self.expectCorrupt(huge, "a huge change count")
        let overlong = Data([0xB1]) + Data(repeating: 0xFF, count: 10) + Data([0x01])
        Self.expectCorrupt(overlong, "a varint beyond 64 bits")
        let change = Data([0xB1, 2]) + Data(count: 8) + Data([0, 1])
        Self.expectCorrupt(change + Data([3, 0, 1, 0x41, 2]) + Data(count: 16), "kind 3")
        Self.expectCorrupt(change + Data([0, 1, 1, 0x41, 2]) + Data(count: 16), "a reference to an unwritten name")
        Self.expectCorrupt(change + Data([0, 0, 1, 0xFF, 2]) + Data(count: 16), "an entity name that is not UTF-8")
        let repeated = change + Data([10, 0, 1, 0x41, 2]) + Data(count: 16) + Data([2, 0, 1, 0x6B, 0, 1, 0x6B, 0])
        Self.expectCorrupt(repeated, "a tombstone key twice")
        // The same bytes with distinct keys read: the checks above fail for their own reason.
        let distinct = change + Data([10, 0, 1, 0x41, 2]) + Data(count: 16) + Data([2, 0, 1, 0x6B, 0, 0, 1, 0x6C, 0])
        #expect(try HistoryTransaction.decode(distinct, url: Self.store).changes.first?.tombstone == ["k": "", "l": ""])
        Self.expectCorrupt(Data(), "no bytes")
        Self.expectCorrupt(Data("not json".utf8), "neither encoding")
    }

    /// Random byte flips: each either still decodes (to something that survives its own round trip) or is refused
    /// as the store's corruption.
    @Test func randomByteFlipsNeverCrash() throws {
        var random = SeededGenerator(seed: 0x4849_5354)
        let encodings = try Self.samples().map { try $0.encoded() }
        var refused = 0
        var read = 0
        for round in 0..<2000 {
            var data = encodings[round % encodings.count]
            for _ in 0...random.below(3) {
                data[random.below(data.count)] ^= UInt8(1 << random.below(8))
            }
            do {
                let t = try HistoryTransaction.decode(data, url: Self.store)
                #expect(try HistoryTransaction.decode(t.encoded(), url: Self.store) == t)
                read += 1
            } catch StoreError.corruptStore(let url, _) {
                #expect(url == Self.store)
                refused += 1
            }
        }
        #expect(refused > 0 && read > 0, "flips exercised both paths: \(refused) refused, \(read) read")
    }

    @discardableResult
    static func expectCorrupt(_ data: Data, _ what: String, sourceLocation: SourceLocation = #_sourceLocation) -> String {
        do {
            let t = try HistoryTransaction.decode(data, url: store)
            Issue.record("\(what): decoded as \(t)", sourceLocation: sourceLocation)
        } catch StoreError.corruptStore(let url, let reason) {
            #expect(url == store, sourceLocation: sourceLocation)
            #expect(reason.contains("history"), sourceLocation: sourceLocation)
            return reason
        } catch {
            Issue.record("\(what): \(error)", sourceLocation: sourceLocation)
        }
        return ""
    }
}
