/// The value of one hexadecimal digit (either case), for the byte-level parsers of UUIDs and addresses.
@_spi(BackendKit) public enum HexDigit {
    /// The digit's value, `nil` for anything that is not a hexadecimal digit.
    @inline(__always)
    public static func value(_ c: UInt8) -> UInt8? {
        switch c {
        case 0x30...0x39: c - 0x30
        case 0x41...0x46: c - 0x41 + 10
        case 0x61...0x66: c - 0x61 + 10
        default: nil
        }
    }
}
