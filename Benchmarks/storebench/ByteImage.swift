import Foundation

/// A compact, append-only byte buffer the references capture a store's exact contents into before the clock
/// starts, and replay from while it runs: tags, LEB128 lengths and raw bytes, no per-value allocation.
struct ByteImage {
    private(set) var bytes: [UInt8] = []

    mutating func tag(_ t: UInt8) { bytes.append(t) }

    mutating func length(_ n: Int) {
        var v = UInt64(n)
        while v >= 0x80 {
            bytes.append(UInt8(v & 0x7F) | 0x80)
            v >>= 7
        }
        bytes.append(UInt8(v))
    }

    mutating func word(_ w: UInt64) {
        withUnsafeBytes(of: w.littleEndian) { bytes.append(contentsOf: $0) }
    }

    mutating func blob(_ p: UnsafeRawPointer?, _ n: Int) {
        length(n)
        if n > 0, let p { bytes.append(contentsOf: UnsafeRawBufferPointer(start: p, count: n)) }
    }

    mutating func string(_ s: String) {
        var s = s
        s.withUTF8 { blob($0.baseAddress, $0.count) }
    }
}

/// Reads a ``ByteImage`` back, in the order it was written.
struct ByteCursor {
    let base: UnsafeRawPointer
    let end: Int
    var offset = 0

    init(_ buffer: UnsafeRawBufferPointer) {
        base = buffer.baseAddress.map(UnsafeRawPointer.init) ?? UnsafeRawPointer(Self.emptyBase)
        end = buffer.count
    }

    /// Stands in for the base of an empty buffer (never read: `end` is 0).
    nonisolated(unsafe) private static let emptyBase = UnsafeMutableRawPointer.allocate(byteCount: 8, alignment: 8)

    var atEnd: Bool { offset >= end }

    @inline(__always) mutating func tag() -> UInt8 {
        let t = base.load(fromByteOffset: offset, as: UInt8.self)
        offset += 1
        return t
    }

    @inline(__always) mutating func length() -> Int {
        var shift: UInt64 = 0
        var v: UInt64 = 0
        while true {
            let b = base.load(fromByteOffset: offset, as: UInt8.self)
            offset += 1
            v |= UInt64(b & 0x7F) << shift
            if b < 0x80 { return Int(v) }
            shift += 7
        }
    }

    @inline(__always) mutating func word() -> UInt64 {
        let w = base.loadUnaligned(fromByteOffset: offset, as: UInt64.self)
        offset += 8
        return UInt64(littleEndian: w)
    }

    /// A pointer to the next blob and its length.
    @inline(__always) mutating func blob() -> (UnsafeRawPointer, Int) {
        let n = length()
        let p = base + offset
        offset += n
        return (p, n)
    }
}

/// Sums every 8-byte word of a buffer, so a reference read touches all the bytes a decoder would.
@inline(__always) func touch(_ p: UnsafeRawPointer?, _ n: Int) -> UInt64 {
    guard let p, n > 0 else { return 0 }
    var sum: UInt64 = 0
    var i = 0
    while i + 8 <= n {
        sum &+= p.loadUnaligned(fromByteOffset: i, as: UInt64.self)
        i += 8
    }
    while i < n {
        sum &+= UInt64(p.load(fromByteOffset: i, as: UInt8.self))
        i += 1
    }
    return sum
}
