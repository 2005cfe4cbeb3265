import Foundation

/// Text forms written straight into a byte buffer, for the files sync writes a line per record or value to (change
/// files, the record state log): the same text as the values' string forms, without a string made per value.
enum TextBytes {
    static let upperHex: [UInt8] = Array("0123456789ABCDEF".utf8)

    /// A UUID in its upper-case string form (``Foundation/UUID/uuidString``), made on the stack and appended in one
    /// piece: a push and a state write append one per record.
    static func append(_ id: UUID, to out: inout [UInt8]) {
        var text: (UInt64, UInt64, UInt64, UInt64, UInt32) = (0, 0, 0, 0, 0)
        withUnsafeMutableBytes(of: &text) { raw in
            let buffer = raw.bindMemory(to: UInt8.self)
            var i = 0
            withUnsafeBytes(of: id.uuid) { bytes in
                for (n, b) in bytes.enumerated() {
                    if n == 4 || n == 6 || n == 8 || n == 10 {
                        buffer[i] = UInt8(ascii: "-")
                        i += 1
                    }
                    buffer[i] = upperHex[Int(b >> 4)]
                    buffer[i + 1] = upperHex[Int(b & 0xF)]
                    i += 2
                }
            }
            out.append(contentsOf: UnsafeBufferPointer(rebasing: buffer[..<i]))
        }
    }

    static let lowerHex: [UInt8] = Array("0123456789abcdef".utf8)

    /// An integer in decimal, its digits written directly (no string made per number).
    static func append<T: FixedWidthInteger>(_ n: T, to out: inout [UInt8]) {
        if n >= 0, n < 10 {
            out.append(UInt8(ascii: "0") + UInt8(n))
            return
        }
        guard T.bitWidth <= 64 else {
            var text = String(n)
            text.withUTF8 { out.append(contentsOf: $0) }
            return
        }
        // The digits from the last, on the stack, then appended in one piece.
        var digits: (UInt64, UInt64, UInt64) = (0, 0, 0)
        withUnsafeMutableBytes(of: &digits) { raw in
            let buffer = raw.bindMemory(to: UInt8.self)
            var m = UInt64(n.magnitude)
            var i = buffer.count
            repeat {
                i -= 1
                buffer[i] = UInt8(ascii: "0") + UInt8(m % 10)
                m /= 10
            } while m > 0
            if n < 0 {
                i -= 1
                buffer[i] = UInt8(ascii: "-")
            }
            out.append(contentsOf: UnsafeBufferPointer(rebasing: buffer[i...]))
        }
    }

    /// A clock stamp in its compact form (``HybridLogicalClock/description``).
    static func append(_ c: HybridLogicalClock, to out: inout [UInt8]) {
        append(c.wall, to: &out)
        out.append(UInt8(ascii: "."))
        append(c.counter, to: &out)
        out.append(UInt8(ascii: "."))
        append(c.peer, to: &out)
    }
}

extension UUID {
    /// The same text as ``Foundation/UUID/uuidString``, made without formatting through the C library: a record's
    /// global ID in this form keys every per-record map of the sync state, so a big push or pull makes one per
    /// record and value.
    var keyString: String {
        String(unsafeUninitializedCapacity: 36) { out in
            var i = 0
            withUnsafeBytes(of: uuid) { raw in
                for (n, b) in raw.enumerated() {
                    if n == 4 || n == 6 || n == 8 || n == 10 {
                        out[i] = UInt8(ascii: "-")
                        i += 1
                    }
                    out[i] = TextBytes.upperHex[Int(b >> 4)]
                    out[i + 1] = TextBytes.upperHex[Int(b & 0xF)]
                    i += 2
                }
            }
            return i
        }
    }

    /// Whether this ID sorts before `other` in the order of their ``keyString``s, found from the bytes: the string is
    /// the bytes in order as upper-case hex digits with dashes at fixed places, so the two orders agree.
    func sortsBefore(_ other: UUID) -> Bool {
        withUnsafeBytes(of: uuid) { x in withUnsafeBytes(of: other.uuid) { y in x.lexicographicallyPrecedes(y) } }
    }
}
