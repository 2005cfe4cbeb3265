import Foundation
@_spi(BackendKit) import StoreAPI

/// A cursor over encoded bytes (usually straight from the memory map). Every read checks bounds and throws
/// ``ByteReader/Malformed`` instead of reading past the end, so damaged values are reported, not crashed on.
struct ByteReader {
    struct Malformed: Error {
        let reason: String
    }

    let buffer: UnsafeRawBufferPointer
    private(set) var offset = 0

    init(_ buffer: UnsafeRawBufferPointer) { self.buffer = buffer }

    var isAtEnd: Bool { offset == buffer.count }

    @inline(__always) mutating func byte() throws -> UInt8 {
        guard offset < buffer.count else { throw Malformed(reason: "value ends early at byte \(offset)") }
        defer { offset += 1 }
        return buffer[offset]
    }

    @inline(__always) mutating func varint() throws -> UInt64 {
        var result: UInt64 = 0
        var shift: UInt64 = 0
        while true {
            let b = try byte()
            guard shift < 64 else { throw Malformed(reason: "integer too long at byte \(offset)") }
            result |= UInt64(b & 0x7F) << shift
            if b < 0x80 { return result }
            shift += 7
        }
    }

    @inline(__always) mutating func signed() throws -> Int64 {
        let raw = try varint()
        return Int64(bitPattern: (raw >> 1) ^ (0 &- (raw & 1)))
    }

    // Inlined, like `byte()`: a record's fields are read by the thousand, and the call cost more than the check.
    @inline(__always) mutating func raw(_ count: Int) throws -> UnsafeRawBufferPointer {
        guard count >= 0, count <= buffer.count - offset else { throw Self.pastTheEnd(count, at: offset, of: buffer.count) }
        defer { offset += count }
        return UnsafeRawBufferPointer(rebasing: buffer[offset..<(offset + count)])
    }

    /// The error of a field running past the end, made out of line (only a damaged record gets here).
    @inline(never) static func pastTheEnd(_ count: some BinaryInteger, at offset: Int, of total: Int) -> Malformed {
        Malformed(reason: "a \(count)-byte field at byte \(offset) runs past the end (\(total) bytes)")
    }

    mutating func fixed64() throws -> UInt64 {
        let r = try raw(8)
        var v: UInt64 = 0
        withUnsafeMutableBytes(of: &v) { $0.copyMemory(from: r) }
        return UInt64(littleEndian: v)
    }

    mutating func fixed32() throws -> UInt32 {
        let r = try raw(4)
        var v: UInt32 = 0
        withUnsafeMutableBytes(of: &v) { $0.copyMemory(from: r) }
        return UInt32(littleEndian: v)
    }

    mutating func uuid() throws -> UUID {
        let r = try raw(16)
        var t: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        withUnsafeMutableBytes(of: &t) { $0.copyMemory(from: r) }
        return UUID(uuid: t)
    }

    @inline(__always) mutating func lengthPrefixed() throws -> UnsafeRawBufferPointer {
        let n = try varint()
        guard n <= UInt64(buffer.count - offset) else { throw Self.pastTheEnd(n, at: offset, of: buffer.count) }
        return try raw(Int(n))
    }

    mutating func string() throws -> String {
        let r = try lengthPrefixed()
        // ASCII (most stored text) needs no validation: `String(decoding:)` takes it by its own ASCII fast path,
        // where `String(validating:)` walks every byte through the UTF-8 state machine.
        if UTF8Bytes.isASCII(r) { return String(decoding: r, as: UTF8.self) }
        guard let s = String(validating: r, as: UTF8.self) else {
            throw Malformed(reason: "invalid UTF-8 in a string ending at byte \(offset)")
        }
        return s
    }
}
