import Foundation
import StoreAPI

/// Writes the lines of a format 2 change file (see `ChangeBatch+Lines.swift`) as a push makes them: a record's
/// lines go straight into one byte buffer, values as their JSON text without a string made per value, names and
/// stamps numbered in tables as they are first used. The header, which names the peer and sequence, is made when
/// the file is written (``bytes(peer:sequence:)``): a file that must go out under another peer identity keeps its
/// lines.
///
/// Written in the same order as ``ChangeBatch/encoded()`` always wrote a batch (a record's values by key name, then
/// its memberships by relationship name), the bytes are the same.
struct ChangeFileWriter {
    private var names: [String: Int] = [:]
    private var nameList: [String] = []
    private var stamps = StampTable()
    private var body: [UInt8] = []
    /// The records written.
    private(set) var count = 0

    init(capacity records: Int = 0) {
        body.reserveCapacity(records * 96)
    }

    /// The number of a name (entity, attribute or relationship), given it the first time it is asked for.
    mutating func number(ofName s: String) -> Int {
        if let n = names[s] { return n }
        let n = nameList.count
        names[s] = n
        nameList.append(s)
        return n
    }

    /// Starts a record's lines.
    mutating func record(_ id: UUID, entity: Int) {
        count += 1
        body.append(UInt8(ascii: "R"))
        body.append(9)
        TextBytes.append(id, to: &body)
        body.append(9)
        TextBytes.append(entity, to: &body)
        body.append(10)
    }

    /// The record was deleted.
    mutating func deleted(_ stamp: HybridLogicalClock) {
        let n = stamps.number(stamp)
        body.append(UInt8(ascii: "D"))
        body.append(9)
        TextBytes.append(n, to: &body)
        body.append(10)
    }

    /// A value line whose text `text` writes (unescaped: it escapes what it writes itself, or writes nothing that
    /// needs it).
    private mutating func value(_ key: Int, _ stamp: HybridLogicalClock, _ text: (inout [UInt8]) -> Void) {
        let n = stamps.number(stamp)
        body.append(UInt8(ascii: "V"))
        body.append(9)
        TextBytes.append(key, to: &body)
        body.append(9)
        TextBytes.append(n, to: &body)
        body.append(9)
        text(&body)
        body.append(10)
    }

    /// A value given as its text.
    mutating func value(_ key: Int, _ stamp: HybridLogicalClock, text: String) {
        value(key, stamp) { Self.escape(text, to: &$0) }
    }

    /// An attribute value, written as ``SyncedSchema/text(of:)`` makes its text.
    mutating func value(_ key: Int, _ stamp: HybridLogicalClock, of v: StoreValue) throws {
        switch v {
        case .string(let s):
            value(key, stamp) { Self.jsonString(s, to: &$0) }
        case .integer16(let i):
            value(key, stamp) { Self.bracketed(i, to: &$0) }
        case .integer32(let i):
            value(key, stamp) { Self.bracketed(i, to: &$0) }
        case .integer64(let i):
            value(key, stamp) { Self.bracketed(i, to: &$0) }
        case .boolean(let b):
            value(key, stamp) { $0.append(contentsOf: b ? Self.trueText : Self.falseText) }
        case .null:
            value(key, stamp) { $0.append(contentsOf: Self.nullText) }
        case .double(let d) where d.isFinite && !(d == 0 && d.sign == .minus):
            // The number's shortest exact form, as `Double.description` writes it: a small string, kept inline.
            var text = d.description
            value(key, stamp) { out in
                out.append(UInt8(ascii: "["))
                text.withUTF8 { out.append(contentsOf: $0) }
                out.append(UInt8(ascii: "]"))
            }
        default:
            value(key, stamp, text: try SyncedSchema.text(of: v))
        }
    }

    /// A to-one relationship's value: the target's global ID, or empty for none.
    mutating func value(_ key: Int, _ stamp: HybridLogicalClock, target: UUID?) {
        value(key, stamp) { out in if let target { TextBytes.append(target, to: &out) } }
    }

    /// An ordered to-many relationship's value, as ``SyncedSchema/text(ofOrdered:)`` makes it: a JSON array of
    /// global IDs.
    mutating func value(_ key: Int, _ stamp: HybridLogicalClock, ordered ids: [UUID]) {
        value(key, stamp) { out in Self.ordered(ids, to: &out) }
    }

    /// A membership change of the relationship named `relationship`.
    mutating func member(_ relationship: Int, _ m: MemberChange) {
        let clock = stamps.number(m.clock)
        let observed = m.observed.map { stamps.number($0) }
        body.append(UInt8(ascii: "M"))
        body.append(9)
        TextBytes.append(relationship, to: &body)
        body.append(9)
        TextBytes.append(m.target, to: &body)
        body.append(9)
        body.append(m.present ? UInt8(ascii: "1") : UInt8(ascii: "0"))
        body.append(9)
        TextBytes.append(clock, to: &body)
        body.append(9)
        if let observed { TextBytes.append(observed, to: &body) }
        body.append(10)
    }

    /// A whole record change, its values by key name and memberships by relationship name.
    mutating func add(_ c: RecordChange) {
        record(c.id, entity: number(ofName: c.entity))
        if let d = c.deleted { deleted(d) }
        for key in c.values.keys.sorted() {
            guard let v = c.values[key] else { continue }
            value(number(ofName: key), v.clock, text: v.text)
        }
        for rel in c.members.keys.sorted() {
            let n = number(ofName: rel)
            for m in c.members[rel] ?? [] { member(n, m) }
        }
    }

    /// The file: its header, the tables and the lines.
    func bytes(peer: UUID, sequence: Int64) -> Data {
        var out: [UInt8] = []
        out.reserveCapacity(body.count + nameList.count * 16 + stamps.stamps.count * 64 + 128)
        out.append(contentsOf: ChangeBatch.linesMagic.utf8)
        out.append(9)
        out.append(UInt8(ascii: "2"))
        out.append(9)
        TextBytes.append(peer, to: &out)
        out.append(9)
        TextBytes.append(sequence, to: &out)
        out.append(9)
        TextBytes.append(count, to: &out)
        out.append(10)
        for s in nameList {
            out.append(UInt8(ascii: "S"))
            out.append(9)
            Self.escape(s, to: &out)
            out.append(10)
        }
        for c in stamps.stamps {
            out.append(UInt8(ascii: "C"))
            out.append(9)
            TextBytes.append(c.wall, to: &out)
            out.append(9)
            TextBytes.append(c.counter, to: &out)
            out.append(9)
            TextBytes.append(c.peer, to: &out)
            out.append(10)
        }
        out.append(contentsOf: body)
        out.append(UInt8(ascii: "E"))
        out.append(10)
        return Data(out)
    }

    private static let trueText = Array("[true]".utf8), falseText = Array("[false]".utf8), nullText = Array("[null]".utf8)

    /// Backslash, tab and newline escaped with a backslash.
    static func escape(_ s: String, to out: inout [UInt8]) {
        // Names and most texts hold none of those: their bytes go in one copy.
        let copied = s.utf8.withContiguousStorageIfAvailable { bytes -> Bool in
            guard !bytes.contains(where: { $0 == UInt8(ascii: "\\") || $0 == 9 || $0 == 10 }) else { return false }
            out.append(contentsOf: bytes)
            return true
        }
        if copied == true { return }
        for b in s.utf8 { escape(b, to: &out) }
    }

    private static func escape(_ b: UInt8, to out: inout [UInt8]) {
        switch b {
        case UInt8(ascii: "\\"): out += [b, b]
        case 9: out += [UInt8(ascii: "\\"), UInt8(ascii: "t")]
        case 10: out += [UInt8(ascii: "\\"), UInt8(ascii: "n")]
        default: out.append(b)
        }
    }

    /// `[` the string as JSON `]`, escaped for the line: the text ``SyncedSchema/text(of:)`` makes of a string.
    private static func jsonString(_ s: String, to out: inout [UInt8]) {
        out.append(UInt8(ascii: "["))
        out.append(UInt8(ascii: "\""))
        // Without quotes, backslashes and control characters (most strings), the bytes are the text as they are.
        let copied = s.utf8.withContiguousStorageIfAvailable { bytes -> Bool in
            guard !bytes.contains(where: { $0 < 0x20 || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") }) else { return false }
            out.append(contentsOf: bytes)
            return true
        }
        if copied != true {
            let hex = TextBytes.lowerHex
            for b in s.utf8 {
                // JSON's escapes, each byte of which then takes the line's escape (a JSON backslash doubles).
                switch b {
                case UInt8(ascii: "\""): out += [UInt8(ascii: "\\"), UInt8(ascii: "\\"), b]
                case UInt8(ascii: "\\"): out += [b, b, b, b]
                case 0x0A: out += [UInt8(ascii: "\\"), UInt8(ascii: "\\"), UInt8(ascii: "n")]
                case 0x0D: out += [UInt8(ascii: "\\"), UInt8(ascii: "\\"), UInt8(ascii: "r")]
                case 0x09: out += [UInt8(ascii: "\\"), UInt8(ascii: "\\"), UInt8(ascii: "t")]
                case 0..<0x20:
                    out += [UInt8(ascii: "\\"), UInt8(ascii: "\\"), UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0"),
                            hex[Int(b >> 4)], hex[Int(b & 15)]]
                default: out.append(b)
                }
            }
        }
        out.append(UInt8(ascii: "\""))
        out.append(UInt8(ascii: "]"))
    }

    private static func bracketed<T: FixedWidthInteger>(_ n: T, to out: inout [UInt8]) {
        out.append(UInt8(ascii: "["))
        TextBytes.append(n, to: &out)
        out.append(UInt8(ascii: "]"))
    }

    /// A JSON array of global IDs (none of which needs an escape).
    private static func ordered(_ ids: [UUID], to out: inout [UInt8]) {
        out.append(UInt8(ascii: "["))
        for (n, id) in ids.enumerated() {
            if n > 0 { out.append(UInt8(ascii: ",")) }
            out.append(UInt8(ascii: "\""))
            TextBytes.append(id, to: &out)
            out.append(UInt8(ascii: "\""))
        }
        out.append(UInt8(ascii: "]"))
    }
}
