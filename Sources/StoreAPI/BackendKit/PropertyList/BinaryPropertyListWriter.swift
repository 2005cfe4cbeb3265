import Foundation

/// Writes binary property lists (`bplist00`) that ``BinaryPropertyListReader``, Apple's frameworks and Python's
/// `plistlib` read.
///
/// Strings are written once and shared (as Apple's writer does); ASCII strings as ASCII, others as big-endian UTF-16.
/// Integers take the smallest size the format allows (negative ones 8 bytes, ``PropertyListValue/unsignedInteger(_:)``
/// 16), reals 8 bytes, dictionaries keep their member order.
@_spi(BackendKit) public enum BinaryPropertyListWriter {
    private enum Node {
        case scalar(PropertyListValue)
        case array([Int], marker: UInt8)
        case dictionary(keys: [Int], values: [Int])
    }

    /// The bytes of a binary property list holding `value`.
    public static func write(_ value: PropertyListValue) -> [UInt8] {
        var nodes: [Node] = []
        var strings: [String: Int] = [:]

        func add(_ v: PropertyListValue) -> Int {
            switch v {
            case .string(let s):
                if let known = strings[s] { return known }
                nodes.append(.scalar(v))
                strings[s] = nodes.count - 1
                return nodes.count - 1
            case .array(let items), .set(let items):
                let index = nodes.count
                nodes.append(.scalar(.null))
                let refs = items.map(add)
                if case .set = v { nodes[index] = .array(refs, marker: 0xC0) } else { nodes[index] = .array(refs, marker: 0xA0) }
                return index
            case .dictionary(let members):
                let index = nodes.count
                nodes.append(.scalar(.null))
                let keys = members.map { add(.string($0.key)) }
                let values = members.map { add($0.value) }
                nodes[index] = .dictionary(keys: keys, values: values)
                return index
            default:
                nodes.append(.scalar(v))
                return nodes.count - 1
            }
        }
        let top = add(value)
        let refSize = byteCount(UInt64(nodes.count))
        var out: [UInt8] = Array("bplist00".utf8)
        var offsets: [Int] = []
        offsets.reserveCapacity(nodes.count)
        for node in nodes {
            offsets.append(out.count)
            switch node {
            case .scalar(let v): encodeScalar(v, into: &out)
            case .array(let refs, let marker):
                header(marker, count: refs.count, into: &out)
                for r in refs { bigEndian(UInt64(r), size: refSize, into: &out) }
            case .dictionary(let keys, let values):
                header(0xD0, count: keys.count, into: &out)
                for r in keys { bigEndian(UInt64(r), size: refSize, into: &out) }
                for r in values { bigEndian(UInt64(r), size: refSize, into: &out) }
            }
        }
        let tableOffset = out.count
        let offsetSize = byteCount(UInt64(tableOffset))
        for o in offsets { bigEndian(UInt64(o), size: offsetSize, into: &out) }
        out += [0, 0, 0, 0, 0, 0, UInt8(offsetSize), UInt8(refSize)]
        bigEndian(UInt64(nodes.count), size: 8, into: &out)
        bigEndian(UInt64(top), size: 8, into: &out)
        bigEndian(UInt64(tableOffset), size: 8, into: &out)
        return out
    }

    /// 1, 2, 4 or 8: the fewest bytes that hold `v` in the format's power-of-two sizes.
    private static func byteCount(_ v: UInt64) -> Int {
        v <= 0xFF ? 1 : v <= 0xFFFF ? 2 : v <= 0xFFFF_FFFF ? 4 : 8
    }

    private static func bigEndian(_ v: UInt64, size: Int, into out: inout [UInt8]) {
        for i in stride(from: size - 1, through: 0, by: -1) { out.append(UInt8(truncatingIfNeeded: v >> (8 * UInt64(i)))) }
    }

    private static func header(_ marker: UInt8, count: Int, into out: inout [UInt8]) {
        if count < 15 {
            out.append(marker | UInt8(count))
        } else {
            out.append(marker | 0x0F)
            let size = byteCount(UInt64(count))
            out.append(0x10 | UInt8(size.trailingZeroBitCount))
            bigEndian(UInt64(count), size: size, into: &out)
        }
    }

    private static func encodeScalar(_ v: PropertyListValue, into out: inout [UInt8]) {
        switch v {
        case .null: out.append(0x00)
        case .bool(let b): out.append(b ? 0x09 : 0x08)
        case .integer(let i):
            if i < 0 {
                out.append(0x13)
                bigEndian(UInt64(bitPattern: i), size: 8, into: &out)
            } else {
                let size = byteCount(UInt64(i))
                out.append(0x10 | UInt8(size.trailingZeroBitCount))
                bigEndian(UInt64(i), size: size, into: &out)
            }
        case .unsignedInteger(let u):
            out.append(0x14)
            bigEndian(0, size: 8, into: &out)
            bigEndian(u, size: 8, into: &out)
        case .real(let d):
            out.append(0x23)
            bigEndian(d.bitPattern, size: 8, into: &out)
        case .date(let date):
            out.append(0x33)
            bigEndian(date.timeIntervalSinceReferenceDate.bitPattern, size: 8, into: &out)
        case .data(let d):
            header(0x40, count: d.count, into: &out)
            out += d
        case .string(let s):
            if s.utf8.allSatisfy({ $0 < 0x80 }) {
                header(0x50, count: s.utf8.count, into: &out)
                out += s.utf8
            } else {
                let units = Array(s.utf16)
                header(0x60, count: units.count, into: &out)
                for u in units { out.append(UInt8(u >> 8)); out.append(UInt8(u & 0xFF)) }
            }
        case .uid(let u):
            let size = byteCount(u)
            out.append(0x80 | UInt8(size - 1))
            bigEndian(u, size: size, into: &out)
        case .array, .set, .dictionary:
            break // containers are nodes of their own (see `write`)
        }
    }
}
