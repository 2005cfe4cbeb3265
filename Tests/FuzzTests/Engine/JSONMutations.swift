import StoreTestSupport

/// JSON- and NDJSON-aware mutations: values replaced by interesting values or values of another kind, values and
/// keys swapped with others of the same input, members duplicated or removed, lines duplicated, dropped or
/// swapped, and deep nesting.
enum JSONMutations {
    enum Kind { case string, number, literal, open, close, punctuation }

    struct Token {
        let range: Range<Int>
        let kind: Kind
    }

    static let keys = [
        "entity", "id", "attributes", "relationships", "name", "type", "optional", "default", "transient",
        "destination", "inverse", "toMany", "ordered", "deleteRule", "minCount", "maxCount", "parent", "abstract",
        "uniquenessConstraints", "configurations", "entities", "userInfo", "versionHashModifier", "className",
        "valueTransformer", "storeType", "storeUUID", "schema", "configuration", "versionHashes", "custom",
        "syncOptions", "formatVersion", "primaryKeyCounters", "remote", "containerIdentifier", "scope", "",
    ]

    static let words = [
        "integer16", "integer32", "integer64", "decimal", "double", "float", "string", "boolean", "date", "binary",
        "uuid", "uri", "transformable", "nullify", "cascade", "deny", "noAction", "sqlite", "lmdb", "xml", "memory",
        "private", "public", "shared",
    ]

    static let replacements = [
        "null", "true", "false", "0", "-1", "\"\"", "[]", "{}", "[null]", "[1,2]", "{\"a\":1}", "[[]]", "{\"\":{}}",
        "\"\\u0000\"", "\"\\uD800\"", "\"\\ud83d\\ude00\"", "\"\\u00e9\"", "\"\\x\"", "\"\\u12\"", "1e400", "-0.0",
    ]

    static func apply(_ d: inout [UInt8], rng: inout SeededGenerator, maxSize: Int) {
        let tokens = tokenize(d)
        let values = tokens.filter { $0.kind == .string || $0.kind == .number || $0.kind == .literal }
        switch rng.below(12) {
        case 0:  // a string value replaced by an interesting string
            guard let t = pick(tokens, .string, rng: &rng) else { return }
            d.replaceSubrange(t.range, with: Array(quoted(FuzzValues.text(&rng), raw: rng.percent(15)).utf8))
        case 1:  // a number or literal replaced by an interesting number
            let candidates = tokens.filter { $0.kind == .number || $0.kind == .literal }
            guard !candidates.isEmpty else { return }
            d.replaceSubrange(rng.pick(candidates).range, with: Array(rng.pick(FuzzValues.numbers).utf8))
        case 2:  // any value, containers included, replaced by a value of another kind
            guard let v = randomValue(d, tokens: tokens, rng: &rng) else { return }
            d.replaceSubrange(v, with: Array(rng.pick(replacements + [rng.pick(FuzzValues.numbers), quoted(rng.pick(words), raw: false)]).utf8))
        case 3 where values.count > 1:  // a value swapped for another value of the same input (names, ids, types)
            let a = rng.pick(values)
            let b = rng.pick(values)
            d.replaceSubrange(a.range, with: Array(d[b.range]))
        case 4:  // a key renamed
            guard let t = pickKey(d, tokens: tokens, rng: &rng) else { return }
            d.replaceSubrange(t.range, with: Array(quoted(rng.pick(keys), raw: false).utf8))
        case 5:  // a member duplicated or removed
            guard let m = randomMember(d, tokens: tokens, rng: &rng) else { return }
            if rng.percent(50) {
                let copy = Array(d[m]) + [UInt8(ascii: ",")]
                d.insert(contentsOf: copy, at: m.lowerBound)
            } else {
                var r = m
                if r.upperBound < d.count, d[r.upperBound] == UInt8(ascii: ",") { r = r.lowerBound..<(r.upperBound + 1) }
                d.removeSubrange(r)
            }
        case 6:  // a member added to an object
            let opens = tokens.filter { $0.kind == .open && d[$0.range.lowerBound] == UInt8(ascii: "{") }
            guard !opens.isEmpty else { return }
            let value = rng.percent(50) ? rng.pick(replacements) : quoted(rng.pick(words), raw: false)
            let member = "\(quoted(rng.pick(keys), raw: false)):\(value)\(rng.percent(80) ? "," : "")"
            d.insert(contentsOf: Array(member.utf8), at: rng.pick(opens).range.upperBound)
        case 7:  // a token deleted or duplicated (syntax damage)
            guard !tokens.isEmpty else { return }
            let t = rng.pick(tokens)
            if rng.percent(50) { d.removeSubrange(t.range) } else { d.insert(contentsOf: Array(d[t.range]), at: t.range.upperBound) }
        case 8:  // lines duplicated, dropped, swapped, emptied
            lineMutation(&d, rng: &rng)
        case 9:  // deep nesting around a value
            guard let v = randomValue(d, tokens: tokens, rng: &rng) else { return }
            let depth = rng.pick([2, 64, 255, 256, 257, 512, 1000, 5000])
            let inner = Array(d[v])
            let (open, close): ([UInt8], [UInt8]) = rng.percent(50) ? (Array("[".utf8), Array("]".utf8)) : (Array("{\"a\":".utf8), Array("}".utf8))
            guard inner.count + depth * (open.count + close.count) < maxSize else { return }
            var nested: [UInt8] = []
            for _ in 0..<depth { nested += open }
            nested += inner
            if rng.percent(85) { for _ in 0..<depth { nested += close } }
            d.replaceSubrange(v, with: nested)
        case 10:  // a string value replaced by a domain word (a type name, a delete rule, a store type)
            guard let t = pick(tokens, .string, rng: &rng) else { return }
            d.replaceSubrange(t.range, with: Array(quoted(rng.pick(words + keys), raw: false).utf8))
        default:  // a long string or array
            guard let v = randomValue(d, tokens: tokens, rng: &rng) else { return }
            let n = rng.pick([100, 1000, 10_000])
            let long = rng.percent(50)
                ? "\"" + String(repeating: rng.pick(["a", "\\n", "\\u00e9", "é", "🙂", "\\\\"]), count: n) + "\""
                : "[" + Array(repeating: rng.pick(["1", "null", "\"x\"", "{}"]), count: n).joined(separator: ",") + "]"
            d.replaceSubrange(v, with: Array(long.utf8))
        }
    }

    /// A JSON string literal of `s`; `raw` leaves quotes and backslashes unescaped (broken on purpose).
    static func quoted(_ s: String, raw: Bool) -> String {
        guard !raw else { return "\"" + s + "\"" }
        var out = "\""
        for c in s.unicodeScalars {
            switch c {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            default:
                if c.value < 0x20 { out += "\\u" + String(repeating: "0", count: 4 - String(c.value, radix: 16).count) + String(c.value, radix: 16) } else { out.unicodeScalars.append(c) }
            }
        }
        return out + "\""
    }

    static func tokenize(_ d: [UInt8]) -> [Token] {
        var out: [Token] = []
        var i = 0
        while i < d.count {
            let c = d[i]
            switch c {
            case UInt8(ascii: "\""):
                var j = i + 1
                while j < d.count, d[j] != UInt8(ascii: "\""), d[j] != 0x0A {
                    j += d[j] == UInt8(ascii: "\\") ? 2 : 1
                }
                let end = min(j + 1, d.count)
                out.append(Token(range: i..<end, kind: .string))
                i = end
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
                var j = i + 1
                while j < d.count, (d[j] >= 0x30 && d[j] <= 0x39) || d[j] == UInt8(ascii: ".") || d[j] == UInt8(ascii: "e")
                    || d[j] == UInt8(ascii: "E") || d[j] == UInt8(ascii: "+") || d[j] == UInt8(ascii: "-") { j += 1 }
                out.append(Token(range: i..<j, kind: .number))
                i = j
            case UInt8(ascii: "t"), UInt8(ascii: "f"), UInt8(ascii: "n"):
                var j = i + 1
                while j < d.count, d[j] >= UInt8(ascii: "a"), d[j] <= UInt8(ascii: "z") { j += 1 }
                out.append(Token(range: i..<j, kind: .literal))
                i = j
            case UInt8(ascii: "{"), UInt8(ascii: "["):
                out.append(Token(range: i..<(i + 1), kind: .open))
                i += 1
            case UInt8(ascii: "}"), UInt8(ascii: "]"):
                out.append(Token(range: i..<(i + 1), kind: .close))
                i += 1
            case UInt8(ascii: ","), UInt8(ascii: ":"):
                out.append(Token(range: i..<(i + 1), kind: .punctuation))
                i += 1
            default:
                i += 1
            }
        }
        return out
    }

    private static func pick(_ tokens: [Token], _ kind: Kind, rng: inout SeededGenerator) -> Token? {
        let matching = tokens.filter { $0.kind == kind }
        return matching.isEmpty ? nil : rng.pick(matching)
    }

    /// A string token followed by `:` (an object key).
    private static func pickKey(_ d: [UInt8], tokens: [Token], rng: inout SeededGenerator) -> Token? {
        var keys: [Token] = []
        for (i, t) in tokens.enumerated() where t.kind == .string && i + 1 < tokens.count
            && tokens[i + 1].kind == .punctuation && d[tokens[i + 1].range.lowerBound] == UInt8(ascii: ":") {
            keys.append(t)
        }
        return keys.isEmpty ? nil : rng.pick(keys)
    }

    /// The range of a whole value: a scalar token, or a container through its matching close.
    static func randomValue(_ d: [UInt8], tokens: [Token], rng: inout SeededGenerator) -> Range<Int>? {
        let starts = tokens.indices.filter { tokens[$0].kind != .close && tokens[$0].kind != .punctuation }
        guard !starts.isEmpty else { return nil }
        return valueRange(tokens, from: rng.pick(starts))
    }

    private static func valueRange(_ tokens: [Token], from i: Int) -> Range<Int>? {
        let t = tokens[i]
        guard t.kind == .open else { return t.range }
        var depth = 0
        for j in i..<tokens.count {
            if tokens[j].kind == .open { depth += 1 }
            if tokens[j].kind == .close {
                depth -= 1
                if depth == 0 { return t.range.lowerBound..<tokens[j].range.upperBound }
            }
        }
        return nil
    }

    /// A `"key": value` member of an object.
    private static func randomMember(_ d: [UInt8], tokens: [Token], rng: inout SeededGenerator) -> Range<Int>? {
        var starts: [Int] = []
        for (i, t) in tokens.enumerated() where t.kind == .string && i + 2 < tokens.count
            && tokens[i + 1].kind == .punctuation && d[tokens[i + 1].range.lowerBound] == UInt8(ascii: ":") {
            starts.append(i)
        }
        guard !starts.isEmpty else { return nil }
        let i = rng.pick(starts)
        guard let value = valueRange(tokens, from: i + 2) else { return nil }
        return tokens[i].range.lowerBound..<value.upperBound
    }

    private static func lineMutation(_ d: inout [UInt8], rng: inout SeededGenerator) {
        var lines = d.split(separator: 0x0A, omittingEmptySubsequences: false).map(Array.init)
        guard !lines.isEmpty else { return }
        let i = rng.below(lines.count)
        switch rng.below(5) {
        case 0: lines.insert(lines[i], at: rng.below(lines.count + 1))
        case 1: lines.remove(at: i)
        case 2: lines.swapAt(i, rng.below(lines.count))
        case 3: lines.insert(rng.pick([[], [0x20, 0x09], [0x0D], Array("{}".utf8), Array("[]".utf8), Array("null".utf8)]), at: i)
        default: lines[i] = Array(lines[i].prefix(rng.below(lines[i].count + 1)))
        }
        d = Array(lines.joined(separator: [0x0A]))
    }
}
