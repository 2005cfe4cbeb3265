import Foundation
@_spi(BackendKit) import StoreAPI
import StoreTestSupport
import Testing

/// ``PlainURIText`` may only say yes to texts that `URL(string:)` accepts and keeps exactly: a store then copies
/// them without parsing. Checked against Foundation on every combination of tricky parts and on random texts.
@Suite struct PlainURITextTests {
    static func isPlain(_ s: String) -> Bool {
        var s = s
        return s.withUTF8 { PlainURIText.isPlain(UnsafeRawBufferPointer($0)) }
    }

    static let schemes = ["http", "https", "HTTP", "a+b-c.d", "x1", "1http", "", "ht tp", "h_t"]
    static let separators = ["://", ":/", ":", "//", ":///"]
    static let hosts = ["example.com", "a", "EXAMPLE.org", "a..b", "-x-", "", "[::1]", "user@host", "host:80", "host:",
                        "exa mple", "ex%41mple", "höst", "a_b", "127.0.0.1"]
    static let tails = ["", "/", "/a/b", "/a%20b", "/a%2", "/%zz", "/a b", "/a?b=c", "/a?b=c#d", "/#x#y", "?q", "#f",
                        "/~user/_x-y.z", "/!$&'()*+,;=:@", "/\"", "/<>", "/ü", "/a|b", "/a\\b", "/{}", "/`", "/^", "/%",
                        "/a?b?c/d", "/a#b?c/d", "/%2F%2f", "/ /", "/\u{0}", "/\t", "//double//slash"]

    @Test func plainTextsAreExactlyWhatURLKeeps() {
        var plain = 0
        var wrong: [String] = []
        for scheme in Self.schemes {
            for separator in Self.separators {
                for host in Self.hosts {
                    for tail in Self.tails {
                        let s = scheme + separator + host + tail
                        guard Self.isPlain(s) else { continue }
                        plain += 1
                        if URL(string: s)?.absoluteString != s { wrong.append(s) }
                    }
                }
            }
        }
        #expect(wrong.isEmpty, "said plain, but URL(string:) refuses or changes: \(wrong.prefix(20))")
        #expect(plain > 300, "the common shapes must be recognised (\(plain))")
        for common in ["https://example.com/books/123", "http://a.b/c?d=e&f=g#h", "ftp://files.example.org/pub/x%20y.tar.gz"] {
            #expect(Self.isPlain(common), "\(common)")
        }
    }

    /// Every byte in every part of a URI, against the characters RFC 3986 allows there unescaped (spelled out here
    /// apart from the checker's own table).
    @Test func everyByteInEveryPartIsJudgedByTheRules() {
        let alphanumerics = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789".utf8)
        let scheme = alphanumerics.union("+-.".utf8)
        let host = alphanumerics.union("-.".utf8).union("/?#".utf8)  // the last three end the host
        let path = alphanumerics.union("-._~!$&'()*+,;=:@/?#".utf8)
        let parts: [(before: String, after: String, allowed: Set<UInt8>)] = [
            ("h", "ttp://x/", scheme), ("http://h", "x/", host), ("http://h/a", "z", path), ("http://h/a?q=", "z", path),
            ("http://h/a#", "z", path.subtracting([UInt8(ascii: "#")])),
        ]
        for (before, after, allowed) in parts {
            for b in 0...255 {
                let bytes = Array(before.utf8) + [UInt8(b)] + Array(after.utf8)
                let plain = bytes.withUnsafeBytes { PlainURIText.isPlain($0) }
                #expect(plain == allowed.contains(UInt8(b)), "byte \(b) in \(before)_\(after)")
                if plain, let text = String(validating: bytes, as: UTF8.self) {
                    #expect(URL(string: text)?.absoluteString == text, "\(text)")
                }
            }
        }
    }

    @Test func randomTextsNeverFoolIt() {
        var generator = SeededGenerator(seed: 0x0081)
        let alphabet = Array(" !\"#$%&'()*+,-./0123456789:;<=>?@ABCXYZ[\\]^_`abcxyz{|}~\u{7F}é".unicodeScalars)
        var plain = 0
        for _ in 0..<30_000 {
            let prefix = ["http://", "https://ex.com", "a://b/", "", "x:"].randomElement(using: &generator) ?? ""
            let length = Int.random(in: 0...12, using: &generator)
            var s = prefix
            for _ in 0..<length { s.unicodeScalars.append(alphabet.randomElement(using: &generator) ?? "a") }
            guard Self.isPlain(s) else { continue }
            plain += 1
            #expect(URL(string: s)?.absoluteString == s, "\(String(reflecting: s))")
        }
        #expect(plain > 1_000)
    }
}
