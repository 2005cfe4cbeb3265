import Foundation

/// UUID text parsing for the readers (the interchange reader, the XML store reader), which read UUIDs by the
/// million: Foundation's `UUID(uuidString:)` goes through `sscanf` and dominated their profiles.
@_spi(BackendKit) public enum FastUUID {
    /// Parses the canonical form `XXXXXXXX-XXXX-XXXX-XXXX-XXXXXXXXXXXX` (either case). Returns `nil` for anything
    /// else.
    public static func parse(_ text: String) -> UUID? {
        var text = text
        return text.withUTF8 { parse($0) }
    }

    /// Parses the canonical form from UTF-8 bytes spanning exactly the 36 characters.
    public static func parse(_ utf8: UnsafeBufferPointer<UInt8>) -> UUID? {
        guard utf8.count == 36 else { return nil }
        var bytes: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        let ok = withUnsafeMutableBytes(of: &bytes) { out -> Bool in
            var i = 0
            var o = 0
            while i < 36 {
                if i == 8 || i == 13 || i == 18 || i == 23 {
                    guard utf8[i] == 0x2D else { return false }
                    i += 1
                    continue
                }
                guard let hi = HexDigit.value(utf8[i]), let lo = HexDigit.value(utf8[i + 1]) else { return false }
                out[o] = hi << 4 | lo
                o += 1
                i += 2
            }
            return true
        }
        return ok ? UUID(uuid: bytes) : nil
    }
}
