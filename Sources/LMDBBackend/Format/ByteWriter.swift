import Foundation

/// Writes the binary encodings into a fixed block of memory with raw stores, so encoding a record costs a few
/// instructions per field instead of an array append (with its uniqueness and capacity checks) per byte.
///
/// It never writes past its block: a field that does not fit is only counted, and ``ByteWriter`` then grows the
/// block to ``count`` bytes and encodes again. Stores are unaligned raw stores, which
/// Swift allows for trivial types.
struct RawWriter {
    private let start: UnsafeMutableRawPointer
    private var next: UnsafeMutableRawPointer
    private let end: UnsafeMutableRawPointer
    /// Bytes that did not fit. The encoding is redone in a larger block then, so what was stored after a field
    /// that did not fit does not matter.
    private var missing = 0

    /// A writer over the `capacity` bytes at `start`.
    init(start: UnsafeMutableRawPointer, capacity: Int) {
        self.start = start
        next = start
        end = start + max(0, capacity)
    }

    /// Bytes written so far — or needed so far, once the block has overflowed.
    var count: Int { next - start + missing }

    /// Whether a field did not fit.
    var overflowed: Bool { missing > 0 }

    /// The address for the next `n` bytes when they fit, `nil` otherwise (they are then only counted).
    @inline(__always) private mutating func claim(_ n: Int) -> UnsafeMutableRawPointer? {
        if end - next >= n {
            let p = next
            next += n
            return p
        }
        missing += n
        return nil
    }

    @inline(__always) mutating func byte(_ b: UInt8) {
        claim(1)?.storeBytes(of: b, as: UInt8.self)
    }

    /// Unsigned LEB128.
    @inline(__always) mutating func varint(_ value: UInt64) {
        var length = 1
        var rest = value >> 7
        while rest != 0 {
            length += 1
            rest >>= 7
        }
        guard let p = claim(length) else { return }
        var v = value
        for i in 0..<(length - 1) {
            p.storeBytes(of: UInt8(truncatingIfNeeded: v) | 0x80, toByteOffset: i, as: UInt8.self)
            v >>= 7
        }
        p.storeBytes(of: UInt8(truncatingIfNeeded: v), toByteOffset: length - 1, as: UInt8.self)
    }

    /// Zig-zag + LEB128, so small negative numbers stay small.
    @inline(__always) mutating func signed(_ value: Int64) {
        varint(UInt64(bitPattern: (value << 1) ^ (value >> 63)))
    }

    @inline(__always) mutating func fixed64(_ value: UInt64) {
        claim(8)?.storeBytes(of: value.littleEndian, as: UInt64.self)
    }

    @inline(__always) mutating func fixed32(_ value: UInt32) {
        claim(4)?.storeBytes(of: value.littleEndian, as: UInt32.self)
    }

    @inline(__always) mutating func uuid(_ u: UUID) {
        guard let p = claim(16) else { return }
        withUnsafeBytes(of: u.uuid) { UnsafeMutableRawBufferPointer(start: p, count: 16).copyMemory(from: $0) }
    }

    /// A block of bytes, copied as one.
    @inline(__always) mutating func raw(_ bytes: UnsafeRawBufferPointer) {
        guard let source = bytes.baseAddress, let p = claim(bytes.count) else { return }
        p.copyMemory(from: source, byteCount: bytes.count)
    }

    /// A length-prefixed byte string.
    mutating func lengthPrefixed(_ data: Data) {
        data.withUnsafeBytes { bytes in
            varint(UInt64(bytes.count))
            raw(bytes)
        }
    }

    /// A length-prefixed UTF-8 string (NUL-safe).
    mutating func string(_ s: String) {
        let done: Void? = s.utf8.withContiguousStorageIfAvailable { utf8 in
            varint(UInt64(utf8.count))
            raw(UnsafeRawBufferPointer(utf8))
        }
        if done == nil {
            var copy = s
            copy.withUTF8 { utf8 in
                varint(UInt64(utf8.count))
                raw(UnsafeRawBufferPointer(utf8))
            }
        }
    }
}

/// A reusable, growable buffer the encodings are written into with a ``RawWriter``. Reused between records, so a
/// bulk save neither allocates nor checks array bounds per field. A value type: a copy keeps the bytes it had.
struct ByteWriter {
    private var storage: ByteStorage
    /// The number of bytes of the last encoding.
    private(set) var count = 0

    init(capacity: Int = 256) {
        storage = ByteStorage(capacity: max(64, capacity))
    }

    /// Replaces the contents with what `body` writes. When it does not fit, the buffer grows to the size the
    /// writer counted and `body` runs again, so `body` must write the same bytes every time it is called.
    @discardableResult
    mutating func encode<T>(_ body: (inout RawWriter) throws -> T) rethrows -> T {
        if !isKnownUniquelyReferenced(&storage) { storage = ByteStorage(capacity: storage.capacity) }
        while true {
            var w = RawWriter(start: storage.base, capacity: storage.capacity)
            let result = try body(&w)
            if !w.overflowed {
                count = w.count
                return result
            }
            storage = ByteStorage(capacity: max(w.count, storage.capacity * 2))
        }
    }

    /// The bytes of the last encoding, valid while this writer is neither changed nor dropped. The save path
    /// hands them straight to liblmdb (which copies them); going through a closure would cost a reference count
    /// per record.
    var unsafeBytes: UnsafeRawBufferPointer { UnsafeRawBufferPointer(start: storage.base, count: count) }

    /// A copy of the bytes of the last encoding.
    var bytes: [UInt8] { withExtendedLifetime(storage) { Array(unsafeBytes) } }
}

/// The memory of a ``ByteWriter``.
private final class ByteStorage {
    let base: UnsafeMutableRawPointer
    let capacity: Int

    init(capacity: Int) {
        base = .allocate(byteCount: capacity, alignment: 8)
        self.capacity = capacity
    }

    deinit { base.deallocate() }
}
