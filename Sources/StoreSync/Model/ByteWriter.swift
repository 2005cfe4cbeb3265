import Foundation

/// Bytes written through a pointer into room made ahead of them, for the files sync writes a line per record or
/// value to: appending to an array byte by byte checks the array's uniqueness and capacity for every byte, which
/// was most of writing a state log snapshot of many records.
///
/// A writer asks for room for at most so many bytes (``room(_:)``), writes them through the pointer it gets, and says
/// where it stopped (``commit(upTo:)``). A noncopyable struct, not a class: a class's stored properties are checked
/// for exclusive access at run time on every use, which cost as much as the appends did.
struct ByteWriter: ~Copyable {
    private var base: UnsafeMutablePointer<UInt8>
    private var capacity: Int
    /// How many bytes are written.
    private(set) var count = 0

    init(capacity: Int) {
        self.capacity = max(capacity, 256)
        base = .allocate(capacity: self.capacity)
    }

    deinit { base.deallocate() }

    /// Where the next `n` bytes (at most) go; valid until the next call of ``room(_:)``.
    mutating func room(_ n: Int) -> UnsafeMutablePointer<UInt8> {
        if count + n > capacity {
            let grown = max(capacity * 2, count + n)
            let moved = UnsafeMutablePointer<UInt8>.allocate(capacity: grown)
            moved.update(from: base, count: count)
            base.deallocate()
            base = moved
            capacity = grown
        }
        return base + count
    }

    /// Counts the bytes written up to `end`, a pointer into the room ``room(_:)`` gave.
    mutating func commit(upTo end: UnsafeMutablePointer<UInt8>) {
        count = end - base
    }

    /// The bytes written, valid while the writer is.
    var bytes: UnsafeBufferPointer<UInt8> { UnsafeBufferPointer(start: base, count: count) }

    /// Room a line needs for an escaped text of `text`'s bytes (see ``escape(_:at:)``): twice them, at most.
    static func escapedRoom(_ text: String) -> Int { 2 * text.utf8.count }

    /// Writes `text` at `p` with backslash, tab and newline escaped with a backslash (as the state log's lines
    /// write names and hints); returns where it ended.
    static func escape(_ text: String, at p: UnsafeMutablePointer<UInt8>) -> UnsafeMutablePointer<UInt8> {
        if let end = text.utf8.withContiguousStorageIfAvailable({ escape($0, at: p) }) { return end }
        return Array(text.utf8).withUnsafeBufferPointer { escape($0, at: p) }
    }

    private static func escape(_ bytes: UnsafeBufferPointer<UInt8>, at start: UnsafeMutablePointer<UInt8>)
        -> UnsafeMutablePointer<UInt8>
    {
        var p = start
        for b in bytes {
            switch b {
            case UInt8(ascii: "\\"):
                p[0] = b
                p[1] = b
                p += 2
            case 9:
                p[0] = UInt8(ascii: "\\")
                p[1] = UInt8(ascii: "t")
                p += 2
            case 10:
                p[0] = UInt8(ascii: "\\")
                p[1] = UInt8(ascii: "n")
                p += 2
            default:
                p[0] = b
                p += 1
            }
        }
        return p
    }

    /// Room ``decimal(_:at:)`` needs at most.
    static let decimalRoom = 20

    /// Writes an integer in decimal at `p` (as `String(n)` writes it); returns where it ended.
    static func decimal(_ n: Int, at p: UnsafeMutablePointer<UInt8>) -> UnsafeMutablePointer<UInt8> {
        var p = p
        if n < 0 {
            p[0] = UInt8(ascii: "-")
            p += 1
        }
        var rest = n.magnitude
        var digits = 1
        while rest >= 10 {
            digits += 1
            rest /= 10
        }
        rest = n.magnitude
        for i in stride(from: digits - 1, through: 0, by: -1) {
            p[i] = UInt8(ascii: "0") + UInt8(rest % 10)
            rest /= 10
        }
        return p + digits
    }

    /// Room ``uuid(_:at:)`` needs.
    static let uuidRoom = 36

    /// Writes a UUID in its upper-case string form (``Foundation/UUID/uuidString``) at `p`; returns where it ended.
    static func uuid(_ id: UUID, at p: UnsafeMutablePointer<UInt8>) -> UnsafeMutablePointer<UInt8> {
        var p = p
        withUnsafeBytes(of: id.uuid) { raw in
            for (n, b) in raw.enumerated() {
                if n == 4 || n == 6 || n == 8 || n == 10 {
                    p[0] = UInt8(ascii: "-")
                    p += 1
                }
                p[0] = hexDigit(b >> 4)
                p[1] = hexDigit(b & 0xF)
                p += 2
            }
        }
        return p
    }

    private static func hexDigit(_ v: UInt8) -> UInt8 {
        v < 10 ? UInt8(ascii: "0") + v : UInt8(ascii: "A") + v - 10
    }
}
