import Foundation

/// UUID text parsing for the interchange reader, which reads several UUIDs per line: Foundation's
/// `UUID(uuidString:)` goes through `sscanf` and dominated import profiles.
enum FastUUID {
    /// Parses the canonical form `XXXXXXXX-XXXX-XXXX-XXXX-XXXXXXXXXXXX` (either case). Returns `nil` for anything
    /// else.
    static func parse(_ text: String) -> UUID? {
        var text = text
        return text.withUTF8 { utf8 -> UUID? in
            guard utf8.count == 36 else { return nil }
            var bytes: (UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8,
                        UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8) = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
            let ok = withUnsafeMutableBytes(of: &bytes) { out -> Bool in
                var i = 0
                var o = 0
                while i < 36 {
                    if i == 8 || i == 13 || i == 18 || i == 23 {
                        guard utf8[i] == 0x2D else { return false }
                        i += 1
                        continue
                    }
                    guard let hi = nibble(utf8[i]), let lo = nibble(utf8[i + 1]) else { return false }
                    out[o] = hi << 4 | lo
                    o += 1
                    i += 2
                }
                return true
            }
            return ok ? UUID(uuid: bytes) : nil
        }
    }

    @inline(__always)
    private static func nibble(_ c: UInt8) -> UInt8? {
        switch c {
        case 0x30...0x39: c - 0x30
        case 0x41...0x46: c - 0x41 + 10
        case 0x61...0x66: c - 0x61 + 10
        default: nil
        }
    }
}
