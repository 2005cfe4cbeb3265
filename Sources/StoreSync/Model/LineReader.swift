import Foundation

/// The lines of a format 2 change file, each split into its tab-separated fields.
struct LineReader {
    let bytes: UnsafeBufferPointer<UInt8>
    var offset = 0
    /// The field ranges' buffer, used again for every line: a file has a line per record and value.
    private var ranges: [Range<Int>] = []

    init(_ bytes: UnsafeBufferPointer<UInt8>) {
        self.bytes = bytes
        ranges.reserveCapacity(8)
    }

    /// The next line's fields; `nil` at the end. A last line without its newline is returned too (and then fails
    /// the end check, as the end marker is a whole line).
    mutating func next() -> LineFields? {
        guard offset < bytes.count else { return nil }
        ranges.removeAll(keepingCapacity: true)
        var start = offset
        var i = offset
        while i < bytes.count, bytes[i] != 10 {
            if bytes[i] == 9 {
                ranges.append(start..<i)
                start = i + 1
            }
            i += 1
        }
        ranges.append(start..<i)
        offset = i + 1
        if i == bytes.count { ranges.removeAll() }
        return LineFields(bytes: bytes, ranges: ranges)
    }
}

/// One line's fields.
struct LineFields {
    let bytes: UnsafeBufferPointer<UInt8>
    var ranges: [Range<Int>] = []

    var count: Int { ranges.count }

    func length(_ i: Int) -> Int { ranges[i].count }

    /// Where field `i` is in the file's bytes.
    func range(_ i: Int) -> Range<Int> { ranges[i] }

    func byte(_ i: Int) -> UInt8 { bytes[ranges[i].lowerBound] }

    func string(_ i: Int) -> String { String(decoding: UnsafeBufferPointer(rebasing: bytes[ranges[i]]), as: UTF8.self) }

    /// A non-negative decimal number (at most 18 digits).
    func int(_ i: Int) -> Int? {
        let r = ranges[i]
        guard !r.isEmpty, r.count <= 18 else { return nil }
        var v = 0
        for j in r {
            let d = bytes[j] &- UInt8(ascii: "0")
            guard d < 10 else { return nil }
            v = v * 10 + Int(d)
        }
        return v
    }

    /// A UUID in its upper-case string form (as written; other forms are not read).
    func uuid(_ i: Int) -> UUID? {
        let r = ranges[i]
        guard r.count == 36 else { return nil }
        var u: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        let ok = Self.hexValues.withUnsafeBufferPointer { hex in
            withUnsafeMutableBytes(of: &u) { out -> Bool in
                var j = r.lowerBound
                // Any byte that is not a digit has a value with high bits set: one check at the end, not a branch
                // per digit.
                var notHex: UInt8 = 0
                for n in 0..<16 {
                    if n == 4 || n == 6 || n == 8 || n == 10 {
                        guard bytes[j] == UInt8(ascii: "-") else { return false }
                        j += 1
                    }
                    let hi = hex[Int(bytes[j])], lo = hex[Int(bytes[j + 1])]
                    notHex |= hi | lo
                    out[n] = hi << 4 | lo
                    j += 2
                }
                return notHex & 0xF0 == 0
            }
        }
        return ok ? UUID(uuid: u) : nil
    }

    /// Each byte's value as an upper-case hex digit, 0xFF for every other byte. Looked up, not compared: the digits
    /// of random IDs are numbers or letters at random, and a branch on which was mispredicted about every other
    /// digit.
    private static let hexValues: [UInt8] = (0...255).map { (b: Int) -> UInt8 in
        switch UInt8(b) {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): UInt8(b) - UInt8(ascii: "0")
        case UInt8(ascii: "A")...UInt8(ascii: "F"): UInt8(b) - UInt8(ascii: "A") + 10
        default: 0xFF
        }
    }

    /// The field's text with its escapes undone; `nil` for an escape ``ChangeBatch/encoded()`` does not write.
    func unescaped(_ i: Int) -> String? { Self.unescaped(UnsafeBufferPointer(rebasing: bytes[ranges[i]])) }

    /// Whether the field's text has escapes (`true`), none (`false`), or an escape ``ChangeBatch/encoded()`` does
    /// not write (`nil`): a pull checks a value's text when it reads the file and makes its string only when it
    /// needs it.
    func escapes(_ i: Int) -> Bool? {
        let slice = UnsafeBufferPointer(rebasing: bytes[ranges[i]])
        guard slice.contains(UInt8(ascii: "\\")) else { return false }
        return Self.unescaped(slice) == nil ? nil : true
    }

    /// `text` with its escapes undone; `nil` for an escape ``ChangeBatch/encoded()`` does not write.
    static func unescaped(_ text: UnsafeBufferPointer<UInt8>) -> String? {
        guard text.contains(UInt8(ascii: "\\")) else { return String(decoding: text, as: UTF8.self) }
        var out: [UInt8] = []
        out.reserveCapacity(text.count)
        var escaping = false
        for b in text {
            if escaping {
                switch b {
                case UInt8(ascii: "\\"): out.append(b)
                case UInt8(ascii: "t"): out.append(9)
                case UInt8(ascii: "n"): out.append(10)
                default: return nil
                }
                escaping = false
            } else if b == UInt8(ascii: "\\") {
                escaping = true
            } else {
                out.append(b)
            }
        }
        return escaping ? nil : String(decoding: out, as: UTF8.self)
    }
}
