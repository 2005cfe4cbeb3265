import Foundation

/// Recognises the URI texts that need no parser to be checked: those of the common shape
/// `scheme://host/path?query#fragment` made only of characters RFC 3986 allows there unescaped (and well-formed
/// `%XX` escapes). `URL(string:)` accepts every such text and keeps it as its `absoluteString`, so a store copying
/// URI text from one file to another (a ``RecordPage``) may copy it as it is; anything else — ports, user info,
/// IP literals, empty hosts, relative references, characters that need escaping — is left to `URL(string:)`.
///
/// Parsing a URL costs thousands of instructions (Foundation's full RFC 3986 parser); this check, one pass over the
/// bytes.
@_spi(BackendKit) public enum PlainURIText {
    /// Whether `text` has the plain shape described above.
    public static func isPlain(_ text: UnsafeRawBufferPointer) -> Bool {
        let n = text.count
        // Each byte's classes looked up in one table: testing the characters one by one cost several comparisons
        // per byte, and a store checks every URI it copies.
        return classes.withUnsafeBufferPointer { table -> Bool in
            @inline(__always) func has(_ c: UInt8, _ mask: UInt8) -> Bool { table[Int(c)] & mask != 0 }
            var i = 0
            // scheme = ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ), then "://"
            guard n > 3, has(text[0], alpha) else { return false }
            i = 1
            while i < n, has(text[i], schemeCharacter) { i += 1 }
            guard i + 3 <= n, text[i] == UInt8(ascii: ":"), text[i + 1] == UInt8(ascii: "/"), text[i + 2] == UInt8(ascii: "/")
            else { return false }
            i += 3
            // host: a non-empty registered name of letters, digits, "-" and "." (no port, user info or IP literal)
            let hostStart = i
            while i < n, has(text[i], hostCharacter) { i += 1 }
            guard i > hostStart else { return false }
            // path-abempty, then an optional query and fragment
            guard i == n || text[i] == UInt8(ascii: "/") || text[i] == UInt8(ascii: "?") || text[i] == UInt8(ascii: "#") else {
                return false
            }
            var inFragment = false
            while i < n {
                let c = text[i]
                if has(c, pathOrQuery) {
                    i += 1
                    continue
                }
                if c == UInt8(ascii: "%") {
                    guard i + 2 < n, has(text[i + 1], hex), has(text[i + 2], hex) else { return false }
                    i += 3
                    continue
                }
                guard c == UInt8(ascii: "#"), !inFragment else { return false }
                inFragment = true
                i += 1
            }
            return true
        }
    }

    // The classes of the table, one bit each.
    private static let alpha: UInt8 = 1
    private static let schemeCharacter: UInt8 = 2
    private static let hostCharacter: UInt8 = 4
    private static let pathOrQuery: UInt8 = 8
    private static let hex: UInt8 = 16

    /// Every byte's classes, made from the rules below.
    private static let classes: [UInt8] = (0..<256).map { i in
        let c = UInt8(i)
        var bits: UInt8 = 0
        if isAlpha(c) { bits |= alpha }
        if isAlpha(c) || isDigit(c) || c == UInt8(ascii: "+") || c == UInt8(ascii: "-") || c == UInt8(ascii: ".") {
            bits |= schemeCharacter
        }
        if isAlpha(c) || isDigit(c) || c == UInt8(ascii: "-") || c == UInt8(ascii: ".") { bits |= hostCharacter }
        if isPathOrQueryCharacter(c) { bits |= pathOrQuery }
        if isHex(c) { bits |= hex }
        return bits
    }

    @inline(__always) static func isAlpha(_ c: UInt8) -> Bool { (c | 0x20) >= UInt8(ascii: "a") && (c | 0x20) <= UInt8(ascii: "z") }
    @inline(__always) static func isDigit(_ c: UInt8) -> Bool { c >= UInt8(ascii: "0") && c <= UInt8(ascii: "9") }
    @inline(__always) static func isHex(_ c: UInt8) -> Bool {
        isDigit(c) || ((c | 0x20) >= UInt8(ascii: "a") && (c | 0x20) <= UInt8(ascii: "f"))
    }

    /// unreserved / sub-delims / ":" / "@" / "/" / "?" — what a path, query or fragment holds unescaped.
    @inline(__always) static func isPathOrQueryCharacter(_ c: UInt8) -> Bool {
        if isAlpha(c) || isDigit(c) { return true }
        switch c {
        case UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"),  // unreserved
            UInt8(ascii: "!"), UInt8(ascii: "$"), UInt8(ascii: "&"), UInt8(ascii: "'"), UInt8(ascii: "("),
            UInt8(ascii: ")"), UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: ","), UInt8(ascii: ";"),
            UInt8(ascii: "="),  // sub-delims
            UInt8(ascii: ":"), UInt8(ascii: "@"), UInt8(ascii: "/"), UInt8(ascii: "?"):
            return true
        default:
            return false
        }
    }
}
