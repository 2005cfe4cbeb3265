import Foundation

/// Checks on UTF-8 text held as bytes, for stores that copy text from one file to another without making Strings.
@_spi(BackendKit) public enum UTF8Bytes {
    /// Whether every byte is below 0x80 (then the bytes are valid UTF-8 as they are), eight at a time.
    public static func isASCII(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard let base = bytes.baseAddress else { return true }
        var i = 0
        var any: UInt64 = 0
        while i &+ 8 <= bytes.count {
            any |= base.loadUnaligned(fromByteOffset: i, as: UInt64.self)
            i &+= 8
        }
        while i < bytes.count {
            any |= UInt64(base.load(fromByteOffset: i, as: UInt8.self))
            i &+= 1
        }
        return any & 0x8080_8080_8080_8080 == 0
    }

    /// Whether the bytes are valid UTF-8. ASCII (most stored text) is recognised without the UTF-8 decoder, which
    /// walks every byte through its state machine.
    public static func isValid(_ bytes: UnsafeRawBufferPointer) -> Bool {
        isASCII(bytes) || String(validating: bytes, as: UTF8.self) != nil
    }
}
