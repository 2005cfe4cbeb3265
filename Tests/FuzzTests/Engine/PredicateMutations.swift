import StoreTestSupport

/// Predicate-aware mutations: tokens replaced, inserted, deleted or swapped with keywords, operators,
/// placeholders and hostile literals; deep parentheses, long `NOT` and `AND` chains, long key paths.
enum PredicateMutations {
    static let tokens = [
        "AND", "OR", "NOT", "&&", "||", "!", "ANY", "ALL", "SOME", "NONE", "IN", "BETWEEN", "LIKE", "MATCHES",
        "CONTAINS", "BEGINSWITH", "ENDSWITH", "TRUEPREDICATE", "FALSEPREDICATE", "NIL", "NULL", "YES", "NO", "TRUE",
        "FALSE", "SELF", "self", "==", "=", "!=", "<>", "<", "<=", "=<", ">", ">=", "=>", "(", ")", "{", "}", ",",
        "[c]", "[d]", "[cd]", "[x]", "[", "]", "%@", "%K", "%d", "%i", "%ld", "%u", "%f", "%g", "%s", "%%", "%",
        "@count", "@sum", "@avg", "tags.@count", "@", "CAST", "CAST(", "CAST(\"1\", \"date\")",
        "CAST(\"AAAA\", \"binary\")", "CAST(1e400, \"NSDate\")", "CAST(\"x\", \"nope\")", "CAST(\"12.5\", \"decimal\")",
        "CAST(\"D1E2667A-3268-45DB-8AA0-DF69A046A0F1\", \"uuid\")", "CAST(70000, \"integer16\")",
        "title", "pages", "author.name", "author", "tags", "tags.name", "#in", "#", "$x", "name.name.name",
        "'x'", "\"y\"", "'\\u{1F600}'", "'\\u00E9'", "'\\x'", "'\\u{110000}'", "'\\u{D800}'", "'\\u{'", "'\\u12'",
        "'unterminated", "\"", "'", "\\", "0x2A", "0x", "0xFFFFFFFFFFFFFFFFFF", "1e3", "1e999", "-7", "-0", ".5",
        "1.", "{1, 2, 3}", "{}", "{{1}}", "'*?[a-'", "'(a+)+$'", "'['", "'\\\\'", "\u{0}", "ı", "İN",
    ]

    static func apply(_ d: inout [UInt8], rng: inout SeededGenerator, maxSize: Int) {
        // Inputs may start with `Entity|` (which entity to run them on): mutate the predicate, mostly.
        var prefix: [UInt8] = []
        if rng.percent(95), let bar = d.prefix(16).firstIndex(of: UInt8(ascii: "|")) {
            prefix = Array(d[...bar])
            d.removeFirst(bar + 1)
        }
        defer { d = prefix + d }
        let spans = tokenSpans(d)
        switch rng.below(9) {
        case 0 where !spans.isEmpty:  // replace a token
            d.replaceSubrange(rng.pick(spans), with: Array(rng.pick(tokens).utf8))
            return
        case 1 where !spans.isEmpty:  // delete a token
            d.removeSubrange(rng.pick(spans))
            return
        case 2 where !spans.isEmpty:  // duplicate a token
            let t = rng.pick(spans)
            d.insert(contentsOf: Array(" ".utf8) + Array(d[t]), at: t.upperBound)
            return
        case 3:  // insert a token at a boundary
            let at = spans.isEmpty ? d.count : rng.pick(spans).upperBound
            d.insert(contentsOf: Array(" \(rng.pick(tokens)) ".utf8), at: at)
            return
        case 4 where spans.count > 1:  // swap two tokens
            let a = rng.pick(spans)
            let b = rng.pick(spans)
            guard a.upperBound <= b.lowerBound else { return }
            let x = Array(d[a])
            let y = Array(d[b])
            d.replaceSubrange(b, with: x)
            d.replaceSubrange(a, with: y)
            return
        default:
            break
        }
        // The rest rebuild the text (invalid UTF-8 becomes U+FFFD, which is damage too).
        var s = String(decoding: d, as: UTF8.self)
        switch rng.below(5) {
        case 0:  // deep parentheses
            let n = rng.pick([1, 10, 199, 200, 201, 1000, 10_000])
            guard 2 * n + d.count < maxSize else { return }
            s = String(repeating: "(", count: n) + s + (rng.percent(85) ? String(repeating: ")", count: n) : "")
        case 1:  // long NOT chains
            let n = rng.pick([1, 2, 199, 200, 201, 1000, 10_000])
            guard 4 * n + d.count < maxSize else { return }
            s = String(repeating: rng.percent(50) ? "NOT " : "!", count: n) + s
        case 2:  // long AND / OR chains
            let n = rng.pick([2, 100, 1000, 5000])
            let op = rng.pick([" AND ", " OR ", " && "])
            let part = rng.percent(50) ? s : "title == 'x'"
            guard (part.utf8.count + 5) * n < maxSize else { return }
            s = Array(repeating: "(\(part))", count: n).joined(separator: op)
        case 3:  // a hostile literal appended in a comparison
            let v = FuzzValues.text(&rng)
            let literal = rng.percent(50) ? v : "'" + v.replacingOccurrences(of: "'", with: "\\'") + "'"
            s += " \(rng.pick(["AND", "OR"])) \(rng.pick(["title", "i16", "str", "dbl", "when"])) \(rng.pick(["==", "<", "IN", "LIKE", "MATCHES", "BETWEEN"])) \(literal)"
        default:  // a long key path or list
            let n = rng.pick([10, 100, 1000, 5000])
            s += rng.percent(50)
                ? " AND " + Array(repeating: "author", count: n).joined(separator: ".") + " == 1"
                : " AND pages IN {" + Array(repeating: "1", count: n).joined(separator: ",") + "}"
        }
        d = Array(s.utf8)
    }

    /// Byte ranges of tokens: runs of word characters, quoted strings, and runs of operator characters.
    static func tokenSpans(_ d: [UInt8]) -> [Range<Int>] {
        var out: [Range<Int>] = []
        var i = 0
        func isWord(_ c: UInt8) -> Bool {
            (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5A) || (c >= 0x61 && c <= 0x7A) || c == UInt8(ascii: "_")
                || c == UInt8(ascii: ".") || c == UInt8(ascii: "@") || c == UInt8(ascii: "#") || c == UInt8(ascii: "%") || c >= 0x80
        }
        while i < d.count {
            let c = d[i]
            if c == 0x20 || c == 0x09 || c == 0x0A { i += 1; continue }
            var j = i + 1
            if c == UInt8(ascii: "'") || c == UInt8(ascii: "\"") {
                while j < d.count, d[j] != c { j += d[j] == UInt8(ascii: "\\") ? 2 : 1 }
                j = min(j + 1, d.count)
            } else if isWord(c) {
                while j < d.count, isWord(d[j]) { j += 1 }
            } else if "=!<>&|".utf8.contains(c) {
                while j < d.count, "=!<>&|".utf8.contains(d[j]) { j += 1 }
            }
            out.append(i..<j)
            i = j
        }
        return out
    }
}
