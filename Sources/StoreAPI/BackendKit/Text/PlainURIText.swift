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
        var i = 0
        // scheme = ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ), then "://"
        guard n > 3, isAlpha(text[0]) else { return false }
        i = 1
        while i < n, isAlpha(text[i]) || isDigit(text[i]) || text[i] == UInt8(ascii: "+") || text[i] == UInt8(ascii: "-")
            || text[i] == UInt8(ascii: ".")
        {
            i += 1
        }
        guard i + 3 <= n, text[i] == UInt8(ascii: ":"), text[i + 1] == UInt8(ascii: "/"), text[i + 2] == UInt8(ascii: "/")
        else { return false }
        i += 3
        // host: a non-empty registered name of letters, digits, "-" and "." (no port, user info or IP literal)
        let hostStart = i
        while i < n, isAlpha(text[i]) || isDigit(text[i]) || text[i] == UInt8(ascii: "-") || text[i] == UInt8(ascii: ".") {
            i += 1
        }
        guard i > hostStart else { return false }
        // path-abempty, then an optional query and fragment
        guard i == n || text[i] == UInt8(ascii: "/") || text[i] == UInt8(ascii: "?") || text[i] == UInt8(ascii: "#") else {
            return false
        }
        var inFragment = false
        while i < n {
            let c = text[i]
            if c == UInt8(ascii: "%") {
                guard i + 2 < n, isHex(text[i + 1]), isHex(text[i + 2]) else { return false }
                i += 3
                continue
            }
            if c == UInt8(ascii: "#") {
                guard !inFragment else { return false }
                inFragment = true
            } else if !isPathOrQueryCharacter(c) {
                return false
            }
            i += 1
        }
        return true
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
