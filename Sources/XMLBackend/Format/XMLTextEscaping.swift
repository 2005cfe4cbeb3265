import Foundation

/// The `enc="escaped"` scheme for text XML 1.0 cannot carry (see ``XMLStoreFormat``).
///
/// XML 1.0 has no way — not even a character reference — to write NUL, most C0 control characters, U+FFFE or
/// U+FFFF, yet strings in records may hold them. Such text is written with each of those characters as `\uXXXX`
/// and every backslash doubled; text without them is written as is, so ordinary strings stay readable and
/// Core Data-compatible.
enum XMLTextEscaping {
    /// Whether XML 1.0 can carry `scalar` in character data or attribute values.
    @inline(__always)
    static func isXMLChar(_ v: UInt32) -> Bool {
        if v >= 0x20 { return v < 0xFFFE || v > 0xFFFF }
        return v == 0x09 || v == 0x0A || v == 0x0D
    }

    /// Whether `s` must be escaped to be written in XML. Scans UTF-8 bytes: only bytes below 0x20 and the
    /// three-byte sequences EF BF BE / EF BF BF (U+FFFE, U+FFFF) can be offending.
    static func needsEscaping(_ s: String) -> Bool {
        var s = s
        return s.withUTF8 { bytes in
            var i = 0
            let n = bytes.count
            while i < n {
                let b = bytes[i]
                if b < 0x20 {
                    if b != 0x09 && b != 0x0A && b != 0x0D { return true }
                } else if b == 0xEF, i + 2 < n, bytes[i + 1] == 0xBF, bytes[i + 2] >= 0xBE {
                    return true
                }
                i += 1
            }
            return false
        }
    }

    /// The escaped form of `s`.
    static func escape(_ s: String) -> String {
        var out = String.UnicodeScalarView()
        for scalar in s.unicodeScalars {
            if scalar == "\\" {
                out.append("\\")
                out.append("\\")
            } else if isXMLChar(scalar.value) {
                out.append(scalar)
            } else {
                let hex = String(scalar.value, radix: 16, uppercase: true)
                for c in "\\u" + String(repeating: "0", count: max(0, 4 - hex.count)) + hex {
                    out.append(contentsOf: c.unicodeScalars)
                }
            }
        }
        return String(out)
    }

    /// Reverses ``escape(_:)``; `nil` when `s` is not a valid escaped string.
    static func unescape(_ s: String) -> String? {
        var out = String.UnicodeScalarView()
        var it = s.unicodeScalars.makeIterator()
        while let c = it.next() {
            guard c == "\\" else { out.append(c); continue }
            guard let kind = it.next() else { return nil }
            if kind == "\\" { out.append("\\"); continue }
            guard kind == "u" else { return nil }
            var value: UInt32 = 0
            for _ in 0..<4 {
                guard let h = it.next(), let d = UInt32(String(h), radix: 16) else { return nil }
                value = value * 16 + d
            }
            guard let scalar = Unicode.Scalar(value) else { return nil }
            out.append(scalar)
        }
        return String(out)
    }
}
