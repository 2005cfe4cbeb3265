import Foundation

/// Format 2 of change files: lines of tab-separated fields, with each entity or key name and each clock stamp written
/// once in a table and named by its number after that.
///
/// ```
/// storesync-changes  2  <peer>  <sequence>  <records>    the header
/// S  <name>                                             a name: entity, attribute or relationship (numbered from 0)
/// C  <wall>  <counter>  <peer>                          a clock stamp (numbered from 0)
/// R  <global ID>  <entity name number>                  a record's change starts
/// D  <stamp number>                                     it was deleted
/// V  <key name number>  <stamp number>  <text>          a stamped value
/// M  <relationship name number>  <target>  <1|0>  <stamp number>  <observed stamp number or nothing>
/// E                                                     the end: a file without it is cut short
/// ```
///
/// Every value of one push carries the same stamp, and in format 1 each repeated it in full (a peer ID per value):
/// the tables make a record's line about as long as its values. Texts escape backslash, tab and newline with a
/// backslash. Readers take format 1 (JSON) files too; a file of any other layout, or damaged in any way, is not
/// read at all.
extension ChangeBatch {
    /// The first field of a format 2 file.
    static let linesMagic = "storesync-changes"

    /// The file's bytes in format 2.
    func encoded() -> Data {
        var writer = ChangeFileWriter(capacity: changes.count)
        for c in changes { writer.add(c) }
        return writer.bytes(peer: peer, sequence: sequence)
    }

    /// Reads a format 2 file; `nil` when anything in it is not as ``encoded()`` writes it.
    static func decodeLines(_ bytes: UnsafeBufferPointer<UInt8>) -> ChangeBatch? {
        var lines = LineReader(bytes)
        guard let header = lines.next(), header.count == 5, header.string(0) == linesMagic, header.int(1) == 2,
              let peer = header.uuid(2), let sequence = header.int(3), let count = header.int(4), count >= 0
        else { return nil }
        var names: [String] = []
        var stamps: [HybridLogicalClock] = []
        var changes: [RecordChange] = []
        changes.reserveCapacity(min(count, 1 << 20))
        // The record being read is the last of `changes`, changed in place there, so that it is not copied (and its
        // maps retained and released) once more per record when the next one starts.
        var current: Int?
        var ended = false
        func stamp(_ n: Int?) -> HybridLogicalClock? {
            guard let n, n >= 0, n < stamps.count else { return nil }
            return stamps[n]
        }
        func name(_ n: Int?) -> String? {
            guard let n, n >= 0, n < names.count else { return nil }
            return names[n]
        }
        while let f = lines.next() {
            guard !ended, f.count > 0, f.length(0) == 1 else { return nil }
            switch (f.byte(0), f.count) {
            case (UInt8(ascii: "S"), 2):
                guard current == nil, stamps.isEmpty, let s = f.unescaped(1) else { return nil }
                names.append(s)
            case (UInt8(ascii: "C"), 4):
                guard current == nil, let wall = f.int(1), let counter = f.int(2), let counter32 = Int32(exactly: counter),
                      let p = f.uuid(3)
                else { return nil }
                stamps.append(HybridLogicalClock(wall: Int64(wall), counter: counter32, peer: p))
            case (UInt8(ascii: "R"), 3):
                guard let id = f.uuid(1), let entity = name(f.int(2)) else { return nil }
                // Room for as many values as the record before had: records of one file mostly have the same keys,
                // and a map grown value by value is made several times over.
                // Made at its size, not reserved after: reserving room in an empty map goes through the standard
                // library's unspecialized code, which looks the map's type up at run time per record.
                let values = [String: StampedValue](minimumCapacity: current.map { changes[$0].values.count } ?? 0)
                changes.append(RecordChange(entity: entity, id: id, values: values))
                current = changes.count - 1
            case (UInt8(ascii: "D"), 2):
                guard let c = current, changes[c].deleted == nil, let d = stamp(f.int(1)) else { return nil }
                changes[c].deleted = d
            case (UInt8(ascii: "V"), 4):
                guard let c = current, let key = name(f.int(1)), let clock = stamp(f.int(2)), let text = f.unescaped(3)
                else { return nil }
                changes[c].values[key] = StampedValue(clock: clock, text: text)
            case (UInt8(ascii: "M"), 6):
                guard let c = current, let rel = name(f.int(1)), let target = f.uuid(2), f.length(3) == 1,
                      let clock = stamp(f.int(4))
                else { return nil }
                let present: Bool
                switch f.byte(3) {
                case UInt8(ascii: "1"): present = true
                case UInt8(ascii: "0"): present = false
                default: return nil
                }
                var observed: HybridLogicalClock?
                if f.length(5) > 0 {
                    guard let o = stamp(f.int(5)) else { return nil }
                    observed = o
                }
                changes[c].members[rel, default: []].append(MemberChange(target: target, present: present, clock: clock,
                                                                       observed: observed))
            case (UInt8(ascii: "E"), 1):
                ended = true
            default:
                return nil
            }
        }
        guard ended else { return nil }
        guard changes.count == count else { return nil }
        var batch = ChangeBatch(peer: peer, sequence: Int64(sequence), changes: changes)
        batch.format = 2
        return batch
    }
}

/// The lines of a format 2 change file, each split into its tab-separated fields.
private struct LineReader {
    let bytes: UnsafeBufferPointer<UInt8>
    var offset = 0
    /// The field ranges' buffer, used again for every line: a file has a line per record and value.
    private var ranges: [Range<Int>] = []

    init(_ bytes: UnsafeBufferPointer<UInt8>) {
        self.bytes = bytes
        ranges.reserveCapacity(8)
    }

    /// The next line's fields; `nil` at the end. A last line without its newline is returned too (and then fails
    /// the end check, as the end marker is a whole line).
    mutating func next() -> Fields? {
        guard offset < bytes.count else { return nil }
        ranges.removeAll(keepingCapacity: true)
        var start = offset
        var i = offset
        while i < bytes.count, bytes[i] != 10 {
            if bytes[i] == 9 {
                ranges.append(start..<i)
                start = i + 1
            }
            i += 1
        }
        ranges.append(start..<i)
        offset = i + 1
        if i == bytes.count { ranges.removeAll() }
        return Fields(bytes: bytes, ranges: ranges)
    }
}

/// One line's fields.
private struct Fields {
    let bytes: UnsafeBufferPointer<UInt8>
    var ranges: [Range<Int>] = []

    var count: Int { ranges.count }

    func length(_ i: Int) -> Int { ranges[i].count }

    func byte(_ i: Int) -> UInt8 { bytes[ranges[i].lowerBound] }

    func string(_ i: Int) -> String { String(decoding: UnsafeBufferPointer(rebasing: bytes[ranges[i]]), as: UTF8.self) }

    /// A non-negative decimal number (at most 18 digits).
    func int(_ i: Int) -> Int? {
        let r = ranges[i]
        guard !r.isEmpty, r.count <= 18 else { return nil }
        var v = 0
        for j in r {
            let d = bytes[j] &- UInt8(ascii: "0")
            guard d < 10 else { return nil }
            v = v * 10 + Int(d)
        }
        return v
    }

    /// A UUID in its upper-case string form (as written; other forms are not read).
    func uuid(_ i: Int) -> UUID? {
        let r = ranges[i]
        guard r.count == 36 else { return nil }
        var u: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        let ok = Self.hexValues.withUnsafeBufferPointer { hex in
            withUnsafeMutableBytes(of: &u) { out -> Bool in
                var j = r.lowerBound
                // Any byte that is not a digit has a value with high bits set: one check at the end, not a branch
                // per digit.
                var notHex: UInt8 = 0
                for n in 0..<16 {
                    if n == 4 || n == 6 || n == 8 || n == 10 {
                        guard bytes[j] == UInt8(ascii: "-") else { return false }
                        j += 1
                    }
                    let hi = hex[Int(bytes[j])], lo = hex[Int(bytes[j + 1])]
                    notHex |= hi | lo
                    out[n] = hi << 4 | lo
                    j += 2
                }
                return notHex & 0xF0 == 0
            }
        }
        return ok ? UUID(uuid: u) : nil
    }

    /// Each byte's value as an upper-case hex digit, 0xFF for every other byte. Looked up, not compared: the digits
    /// of random IDs are numbers or letters at random, and a branch on which was mispredicted about every other
    /// digit.
    private static let hexValues: [UInt8] = (0...255).map { (b: Int) -> UInt8 in
        switch UInt8(b) {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): UInt8(b) - UInt8(ascii: "0")
        case UInt8(ascii: "A")...UInt8(ascii: "F"): UInt8(b) - UInt8(ascii: "A") + 10
        default: 0xFF
        }
    }

    /// The field's text with its escapes undone; `nil` for an escape ``ChangeBatch/encoded()`` does not write.
    func unescaped(_ i: Int) -> String? {
        let slice = UnsafeBufferPointer(rebasing: bytes[ranges[i]])
        guard slice.contains(UInt8(ascii: "\\")) else { return String(decoding: slice, as: UTF8.self) }
        var out: [UInt8] = []
        out.reserveCapacity(slice.count)
        var escaping = false
        for b in slice {
            if escaping {
                switch b {
                case UInt8(ascii: "\\"): out.append(b)
                case UInt8(ascii: "t"): out.append(9)
                case UInt8(ascii: "n"): out.append(10)
                default: return nil
                }
                escaping = false
            } else if b == UInt8(ascii: "\\") {
                escaping = true
            } else {
                out.append(b)
            }
        }
        return escaping ? nil : String(decoding: out, as: UTF8.self)
    }
}
