import Foundation
@_spi(BackendKit) import StoreAPI

/// Format 1 of change files, JSON, written and read directly: the same document `Codable` makes of a ``ChangeBatch``
/// (keys sorted, absent optionals left out), without building and walking a container per value. Peers write
/// format 2 (`ChangeBatch+Lines.swift`) and read both.
extension ChangeBatch {
    /// The file's bytes in format 1 (for files of peers of earlier versions, and tests).
    func jsonEncoded() -> Data {
        var out: [UInt8] = []
        out.reserveCapacity(changes.count * 200 + 128)
        out += Array(#"{"changes":["#.utf8)
        for (n, c) in changes.enumerated() {
            if n > 0 { out.append(UInt8(ascii: ",")) }
            out.append(UInt8(ascii: "{"))
            if let d = c.deleted {
                out += Array(#""deleted":"#.utf8)
                Self.string(d.description, into: &out)
                out.append(UInt8(ascii: ","))
            }
            out += Array(#""entity":"#.utf8)
            Self.string(c.entity, into: &out)
            out += Array(#","id":"#.utf8)
            Self.string(c.id.uuidString, into: &out)
            out += Array(#","members":{"#.utf8)
            for (i, rel) in c.members.keys.sorted().enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                Self.string(rel, into: &out)
                out += Array(":[".utf8)
                for (j, m) in (c.members[rel] ?? []).enumerated() {
                    if j > 0 { out.append(UInt8(ascii: ",")) }
                    out += Array(#"{"clock":"#.utf8)
                    Self.string(m.clock.description, into: &out)
                    if let observed = m.observed {
                        out += Array(#","observed":"#.utf8)
                        Self.string(observed.description, into: &out)
                    }
                    out += Array((m.present ? #","present":true,"target":"# : #","present":false,"target":"#).utf8)
                    Self.string(m.target.uuidString, into: &out)
                    out.append(UInt8(ascii: "}"))
                }
                out.append(UInt8(ascii: "]"))
            }
            out += Array(#"},"values":{"#.utf8)
            for (i, key) in c.values.keys.sorted().enumerated() {
                guard let v = c.values[key] else { continue }
                if i > 0 { out.append(UInt8(ascii: ",")) }
                Self.string(key, into: &out)
                out += Array(#":{"clock":"#.utf8)
                Self.string(v.clock.description, into: &out)
                out += Array(#","text":"#.utf8)
                Self.string(v.text, into: &out)
                out.append(UInt8(ascii: "}"))
            }
            out += Array("}}".utf8)
        }
        out += Array(#"],"format":1,"peer":"#.utf8)
        Self.string(peer.uuidString, into: &out)
        out += Array(#","sequence":\#(sequence)}"#.utf8)
        return Data(out)
    }

    /// A JSON string: quotes, backslashes and control characters escaped, everything else as its UTF-8 bytes.
    private static func string(_ s: String, into out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        for b in s.utf8 {
            switch b {
            case UInt8(ascii: "\""): out += [UInt8(ascii: "\\"), UInt8(ascii: "\"")]
            case UInt8(ascii: "\\"): out += [UInt8(ascii: "\\"), UInt8(ascii: "\\")]
            case 0x0A: out += [UInt8(ascii: "\\"), UInt8(ascii: "n")]
            case 0x0D: out += [UInt8(ascii: "\\"), UInt8(ascii: "r")]
            case 0x09: out += [UInt8(ascii: "\\"), UInt8(ascii: "t")]
            case 0..<0x20:
                let hex = Array("0123456789abcdef".utf8)
                out += [UInt8(ascii: "\\"), UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0"), hex[Int(b >> 4)], hex[Int(b & 15)]]
            default: out.append(b)
            }
        }
        out.append(UInt8(ascii: "\""))
    }

    /// The newest change file format this version reads.
    static let newestFormat = 2

    /// The format of a change file a later version wrote (its first field is format 2's, its second a format number
    /// above ``newestFormat``); `nil` for every other file. A pull stops at such a file instead of skipping it: a
    /// skipped file is never fetched again, so its changes would be lost to this peer even after it upgrades.
    static func laterFormat(_ data: Data) -> Int? {
        let prefix = Array((linesMagic + "\t").utf8)
        guard data.starts(with: prefix) else { return nil }
        let digits = data.dropFirst(prefix.count).prefix { $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }
        guard (1...9).contains(digits.count), let format = Int(String(decoding: digits, as: UTF8.self)),
              format > newestFormat
        else { return nil }
        return format
    }

    /// Decodes a fetched file of format 1 or 2; `nil` when it is not a change file of either layout (a foreign or
    /// damaged file, or one of a later version: see ``laterFormat(_:)``).
    static func decode(_ data: Data) -> ChangeBatch? {
        // One reader of format 2 for pulls and for this: what a pull reads of a file is what this reads.
        if data.starts(with: linesMagic.utf8) { return PulledChangeFile.decodeLines([UInt8](data))?.batch }
        return decodeJSON(data)
    }

    /// Reads a format 1 file.
    static func decodeJSON(_ data: Data) -> ChangeBatch? {
        guard let root = try? JSONParser.parse([UInt8](data)[...]), case .object(let top) = root,
              let format = Self.int(Self.member(top, "format")), format == 1,
              let peer = Self.uuid(Self.member(top, "peer")), let sequence = Self.int(Self.member(top, "sequence")),
              case .array(let items)? = Self.member(top, "changes")
        else { return nil }
        var changes: [RecordChange] = []
        changes.reserveCapacity(items.count)
        for item in items {
            guard case .object(let fields) = item, case .string(let entity)? = Self.member(fields, "entity"),
                  let id = Self.uuid(Self.member(fields, "id")),
                  case .object(let values)? = Self.member(fields, "values"),
                  case .object(let members)? = Self.member(fields, "members")
            else { return nil }
            var change = RecordChange(entity: entity, id: id)
            if let d = Self.member(fields, "deleted") {
                guard let clock = Self.clock(d) else { return nil }
                change.deleted = clock
            }
            for (key, value) in values {
                guard case .object(let v) = value, let clock = Self.clock(Self.member(v, "clock")),
                      case .string(let text)? = Self.member(v, "text")
                else { return nil }
                change.values[key] = StampedValue(clock: clock, text: text)
            }
            for (rel, list) in members {
                guard case .array(let entries) = list else { return nil }
                var parsed: [MemberChange] = []
                for entry in entries {
                    guard case .object(let m) = entry, let target = Self.uuid(Self.member(m, "target")),
                          case .bool(let present)? = Self.member(m, "present"), let clock = Self.clock(Self.member(m, "clock"))
                    else { return nil }
                    var observed: HybridLogicalClock?
                    if let o = Self.member(m, "observed") {
                        guard let c = Self.clock(o) else { return nil }
                        observed = c
                    }
                    parsed.append(MemberChange(target: target, present: present, clock: clock, observed: observed))
                }
                change.members[rel] = parsed
            }
            changes.append(change)
        }
        var batch = ChangeBatch(peer: peer, sequence: sequence, changes: changes)
        batch.format = Int(format)
        return batch
    }

    private static func member(_ fields: [(key: String, value: JSONValue)], _ key: String) -> JSONValue? {
        for f in fields where f.key == key {
            if case .null = f.value { return nil }
            return f.value
        }
        return nil
    }

    private static func int(_ v: JSONValue?) -> Int64? {
        guard case .number(let text)? = v else { return nil }
        return Int64(text)
    }

    private static func uuid(_ v: JSONValue?) -> UUID? {
        guard case .string(let text)? = v else { return nil }
        return UUID(uuidString: text)
    }

    private static func clock(_ v: JSONValue?) -> HybridLogicalClock? {
        guard case .string(let text)? = v else { return nil }
        return HybridLogicalClock(text: text)
    }
}
