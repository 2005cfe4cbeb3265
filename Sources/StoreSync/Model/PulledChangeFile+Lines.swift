import Foundation

/// The reader of format 2 change files (the layout is described in `ChangeBatch+Lines.swift`).
extension PulledChangeFile {
    /// Reads a format 2 file; `nil` when anything in it is not as ``ChangeBatch/encoded()`` writes it. Texts are
    /// checked here and made into strings only when asked for (``text(_:)``).
    static func decodeLines(_ bytes: [UInt8]) -> PulledChangeFile? {
        bytes.withUnsafeBufferPointer { decodeLines(bytes, $0) }
    }

    private static func decodeLines(_ file: [UInt8], _ bytes: UnsafeBufferPointer<UInt8>) -> PulledChangeFile? {
        var lines = LineReader(bytes)
        guard let header = lines.next(), header.count == 5, header.string(0) == ChangeBatch.linesMagic, header.int(1) == 2,
              let peer = header.uuid(2), let sequence = header.int(3), let count = header.int(4), count >= 0
        else { return nil }
        var names: [String] = []
        // Each name's first number, and each number's first number: a name listed twice is one key.
        var firstNumbers: [String: Int] = [:]
        var canonical: [Int] = []
        var stamps: [HybridLogicalClock] = []
        var stampedAfterZero: [Bool] = []
        var records: [Record] = []
        var values: [Value] = []
        var members: [Member] = []
        records.reserveCapacity(min(count, 1 << 20))
        // Records mostly have a handful of values each: the list is made about its size once, not by regrowing.
        values.reserveCapacity(min(bytes.count / 20, 1 << 22))
        // The record being read; it goes into `records` when the next one starts, or at the end.
        var current: Record?
        // Per key number, the last record that named it: a key named twice in a record makes it not plain.
        var lastRecordOfKey: [Int] = []
        var ended = false
        func stamp(_ n: Int?) -> Int? {
            guard let n, n >= 0, n < stamps.count else { return nil }
            return n
        }
        func name(_ n: Int?) -> Int? {
            guard let n, n >= 0, n < names.count else { return nil }
            return canonical[n]
        }
        func close() {
            guard var r = current else { return }
            r.values = r.values.lowerBound..<values.count
            r.members = r.members.lowerBound..<members.count
            records.append(r)
        }
        while let f = lines.next() {
            guard !ended, f.count > 0, f.length(0) == 1 else { return nil }
            switch (f.byte(0), f.count) {
            case (UInt8(ascii: "S"), 2):
                guard current == nil, stamps.isEmpty, let s = f.unescaped(1) else { return nil }
                if let first = firstNumbers[s] {
                    canonical.append(first)
                } else {
                    firstNumbers[s] = names.count
                    canonical.append(names.count)
                }
                names.append(s)
            case (UInt8(ascii: "C"), 4):
                guard current == nil, let wall = f.int(1), let counter = f.int(2), let counter32 = Int32(exactly: counter),
                      let p = f.uuid(3)
                else { return nil }
                let clock = HybridLogicalClock(wall: Int64(wall), counter: counter32, peer: p)
                stamps.append(clock)
                stampedAfterZero.append(clock > .zero)
            case (UInt8(ascii: "R"), 3):
                guard let id = f.uuid(1), let entity = name(f.int(2)) else { return nil }
                if current == nil {
                    // No name comes after the first record.
                    lastRecordOfKey = Array(repeating: -1, count: names.count)
                }
                close()
                current = Record(id: id, entity: entity, deleted: nil, values: values.count..<values.count,
                                 members: members.count..<members.count, isPlain: true)
            case (UInt8(ascii: "D"), 2):
                guard current != nil, current?.deleted == nil, let d = stamp(f.int(1)) else { return nil }
                current?.deleted = d
            case (UInt8(ascii: "V"), 4):
                guard current != nil, let key = name(f.int(1)), let s = stamp(f.int(2)), let escaped = f.escapes(3)
                else { return nil }
                if lastRecordOfKey[key] == records.count || !stampedAfterZero[s] {
                    current?.isPlain = false
                }
                lastRecordOfKey[key] = records.count
                values.append(Value(key: key, stamp: s, text: f.range(3), escaped: escaped))
            case (UInt8(ascii: "M"), 6):
                guard current != nil, let rel = name(f.int(1)), let target = f.uuid(2), f.length(3) == 1,
                      let s = stamp(f.int(4))
                else { return nil }
                let present: Bool
                switch f.byte(3) {
                case UInt8(ascii: "1"): present = true
                case UInt8(ascii: "0"): present = false
                default: return nil
                }
                var observed: Int?
                if f.length(5) > 0 {
                    guard let o = stamp(f.int(5)) else { return nil }
                    observed = o
                }
                members.append(Member(relationship: rel, target: target, present: present, stamp: s, observed: observed))
            case (UInt8(ascii: "E"), 1):
                ended = true
            default:
                return nil
            }
        }
        close()
        guard ended, records.count == count else { return nil }
        return PulledChangeFile(peer: peer, sequence: Int64(sequence), bytes: file, names: names, stamps: stamps,
                                records: records, values: values, members: members)
    }
}
