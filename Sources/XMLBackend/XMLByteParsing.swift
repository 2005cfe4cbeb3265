import Foundation

/// Parsing and formatting on raw bytes for the hot paths of loading and saving (keys, UUIDs), where going through
/// `String` and Foundation's `sscanf`-based UUID parser costs more than the XML itself.
enum XMLBytes {
    /// A decimal `Int64` (optional sign) spanning all of `bytes`.
    static func int64<C: Collection>(_ bytes: C) -> Int64? where C.Element == UInt8 {
        var it = bytes.makeIterator()
        guard var c = it.next() else { return nil }
        let negative = c == UInt8(ascii: "-")
        if negative || c == UInt8(ascii: "+") {
            guard let next = it.next() else { return nil }
            c = next
        }
        var value: Int64 = 0
        var digits = 0
        while true {
            let d = c &- 0x30
            guard d < 10 else { return nil }
            // Accumulate negatively so Int64.min parses.
            let (m, o1) = value.multipliedReportingOverflow(by: 10)
            let (v, o2) = m.subtractingReportingOverflow(Int64(d))
            guard !o1, !o2 else { return nil }
            value = v
            digits += 1
            guard let next = it.next() else { break }
            c = next
        }
        guard digits > 0 else { return nil }
        if negative { return value }
        return value == .min ? nil : -value
    }

    /// A decimal `Int64` from a C string.
    static func int64(cString p: UnsafePointer<UInt8>) -> Int64? {
        int64(UnsafeBufferPointer(start: p, count: strlen(UnsafeRawPointer(p).assumingMemoryBound(to: CChar.self))))
    }

    private static func hex(_ c: UInt8) -> UInt8? {
        switch c {
        case 0x30...0x39: c - 0x30
        case 0x41...0x46: c - 0x41 + 10
        case 0x61...0x66: c - 0x61 + 10
        default: nil
        }
    }

    /// A UUID in its 36-character form (either case) from a C string.
    static func uuid(cString p: UnsafePointer<UInt8>) -> UUID? {
        var bytes = [UInt8](repeating: 0, count: 16)
        var i = 0
        var b = 0
        while b < 16 {
            if i == 8 || i == 13 || i == 18 || i == 23 {
                guard p[i] == UInt8(ascii: "-") else { return nil }
                i += 1
                continue
            }
            guard let hi = hex(p[i]), let lo = hex(p[i + 1]) else { return nil }
            bytes[b] = hi << 4 | lo
            b += 1
            i += 2
        }
        guard p[36] == 0 else { return nil }
        return UUID(uuid: (bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7],
                           bytes[8], bytes[9], bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15]))
    }

    private static let hexDigits: [UInt8] = Array("0123456789ABCDEF".utf8)

    /// The upper-case 36-character form, as `UUID.uuidString` writes it.
    static func string(_ u: UUID) -> String {
        let t = u.uuid
        return withUnsafeBytes(of: t) { raw in
            String(unsafeUninitializedCapacity: 36) { out in
                var o = 0
                for (i, byte) in raw.enumerated() {
                    if i == 4 || i == 6 || i == 8 || i == 10 { out[o] = UInt8(ascii: "-"); o += 1 }
                    out[o] = hexDigits[Int(byte >> 4)]
                    out[o + 1] = hexDigits[Int(byte & 0x0F)]
                    o += 2
                }
                return o
            }
        }
    }
}
