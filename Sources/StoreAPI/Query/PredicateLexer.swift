import Foundation

/// The lexical rules the parser and the printer share, so that what one prints the other reads.
enum PredicateSyntax {
    /// Words that cannot be keys unless escaped with `#`.
    static let keywords: Set<String> = [
        "AND", "OR", "NOT", "ANY", "ALL", "SOME", "NONE", "IN", "BETWEEN", "LIKE", "MATCHES", "CONTAINS",
        "BEGINSWITH", "ENDSWITH", "TRUEPREDICATE", "FALSEPREDICATE", "NIL", "NULL", "YES", "NO", "TRUE", "FALSE",
        "SELF",
    ]

    /// The keyword a word spells, upper-cased, or `nil`. Only ASCII words can be keywords, so a key such as `ın`
    /// (dotless i) never turns into `IN` by Unicode case mapping.
    static func keyword(_ word: String) -> String? {
        guard word.unicodeScalars.allSatisfy(\.isASCII) else { return nil }
        let upper = word.uppercased()
        return keywords.contains(upper) ? upper : nil
    }

    static func isIdentifierStart(_ s: Unicode.Scalar) -> Bool {
        s == "_" || s.properties.isAlphabetic
    }

    static func isIdentifierContinue(_ s: Unicode.Scalar) -> Bool {
        if isIdentifierStart(s) || ("0"..."9").contains(s) { return true }
        switch s.properties.generalCategory {
        case .decimalNumber, .nonspacingMark, .spacingMark, .enclosingMark, .connectorPunctuation: return true
        default: return false
        }
    }

    /// Whether `word` can be written as a bare key (possibly after a `#`).
    static func isIdentifier(_ word: String) -> Bool {
        var scalars = word.unicodeScalars.makeIterator()
        guard let first = scalars.next(), isIdentifierStart(first) else { return false }
        while let s = scalars.next() { if !isIdentifierContinue(s) { return false } }
        return true
    }

    /// The `CAST` type names and the attribute type each one produces (`nil`: a number left as it is).
    static let castTypes: [String: AttributeType?] = [
        "date": .date, "nsdate": .date,
        "uuid": .uuid, "nsuuid": .uuid,
        "uri": .uri, "url": .uri, "nsurl": .uri,
        "binary": .binary, "data": .binary, "nsdata": .binary,
        "decimal": .decimal, "nsdecimalnumber": .decimal,
        "integer16": .integer16, "integer32": .integer32, "integer64": .integer64,
        "double": .double, "float": .float,
        "string": .string, "nsstring": .string,
        "boolean": .boolean, "bool": .boolean,
        "nsnumber": AttributeType?.none,
    ]
}

/// One lexical token, located by its offsets in the source's Unicode scalars.
struct PredicateToken {
    enum Kind: Equatable {
        /// An identifier or keyword.
        case word(String)
        /// `#word`: always a key, never a keyword.
        case escapedWord(String)
        /// `@word`: a collection operator.
        case atWord(String)
        case string(String)
        /// The literal's text, sign included, so `CAST` can read it at full precision for its type.
        case number(String)
        /// The conversion after `%`: `@`, `K`, `d`, `ld`, `f`, …
        case placeholder(String)
        case symbol(String)
        case end
    }

    var kind: Kind
    var start: Int
    var end: Int
}

/// Splits a predicate format string into ``PredicateToken``s, one at a time as the parser asks for them, so the
/// first error in the text is the one reported.
struct PredicateLexer {
    let source: String
    let scalars: [Unicode.Scalar]
    private var cursor = 0

    init(_ source: String) {
        self.source = source
        self.scalars = Array(source.unicodeScalars)
    }

    /// The next token; `.end` (again and again) once the source is used up.
    mutating func nextToken() throws(StoreError) -> PredicateToken {
        while cursor < scalars.count, scalars[cursor].properties.isWhitespace { cursor += 1 }
        let start = cursor
        guard cursor < scalars.count else { return PredicateToken(kind: .end, start: start, end: start) }
        let c = scalars[cursor]
        func next(_ offset: Int = 1) -> Unicode.Scalar? {
            cursor + offset < scalars.count ? scalars[cursor + offset] : nil
        }
        func token(_ kind: PredicateToken.Kind, length: Int) -> PredicateToken {
            cursor = start + length
            return PredicateToken(kind: kind, start: start, end: cursor)
        }

        if PredicateSyntax.isIdentifierStart(c) {
            return PredicateToken(kind: .word(readWord()), start: start, end: cursor)
        }
        if ("0"..."9").contains(c) || (c == "-" && next().map { ("0"..."9").contains($0) } == true) {
            return readNumber()
        }
        switch c {
        case "\"", "'":
            return try readString(quote: c)
        case "#", "@":
            guard let n = next(), PredicateSyntax.isIdentifierStart(n) else {
                throw error(c == "#" ? "expected a key after '#'" : "expected a collection operator such as '@count' after '@'", atScalar: start)
            }
            cursor += 1
            let w = readWord()
            return PredicateToken(kind: c == "#" ? .escapedWord(w) : .atWord(w), start: start, end: cursor)
        case "%":
            for spec in ["@", "K", "lld", "ld", "lu", "lf", "d", "i", "u", "f", "g"] {
                let s = Array(spec.unicodeScalars)
                if cursor + s.count < scalars.count, Array(scalars[(cursor + 1)...(cursor + s.count)]) == s {
                    return token(.placeholder(spec == "lld" ? "ld" : spec), length: 1 + s.count)
                }
            }
            throw error("unknown placeholder '%\(next().map { String($0) } ?? "")' (use %@, %K, %d or %f)", atScalar: start)
        case "=":
            if next() == "=" || next() == "<" || next() == ">" { return token(.symbol("=" + String(next() ?? "=")), length: 2) }
            return token(.symbol("="), length: 1)
        case "!":
            return next() == "=" ? token(.symbol("!="), length: 2) : token(.symbol("!"), length: 1)
        case "<":
            if next() == "=" || next() == ">" { return token(.symbol("<" + String(next() ?? "=")), length: 2) }
            return token(.symbol("<"), length: 1)
        case ">":
            return next() == "=" ? token(.symbol(">="), length: 2) : token(.symbol(">"), length: 1)
        case "&", "|":
            guard next() == c else {
                throw error("unexpected '\(c)' (use '\(c)\(c)' or \(c == "&" ? "AND" : "OR"))", atScalar: start)
            }
            return token(.symbol(String(c) + String(c)), length: 2)
        case "(", ")", "{", "}", "[", "]", ",", ".":
            return token(.symbol(String(c)), length: 1)
        default:
            throw error("unexpected character '\(c)'", atScalar: start)
        }
    }

    private mutating func readWord() -> String {
        var w = String.UnicodeScalarView()
        while cursor < scalars.count, PredicateSyntax.isIdentifierContinue(scalars[cursor]) {
            w.append(scalars[cursor])
            cursor += 1
        }
        return String(w)
    }

    private mutating func readNumber() -> PredicateToken {
        let start = cursor
        func isDigit(_ s: Unicode.Scalar, radix: Int = 10) -> Bool {
            switch radix {
            case 16: return s.properties.isASCIIHexDigit
            case 8: return ("0"..."7").contains(s)
            case 2: return s == "0" || s == "1"
            default: return ("0"..."9").contains(s)
            }
        }
        func at(_ i: Int) -> Unicode.Scalar? { i < scalars.count ? scalars[i] : nil }
        if scalars[cursor] == "-" { cursor += 1 }
        if scalars[cursor] == "0", let p = at(cursor + 1), let radix = ["x": 16, "X": 16, "o": 8, "O": 8, "b": 2, "B": 2][p],
            let d = at(cursor + 2), isDigit(d, radix: radix)
        {
            cursor += 2
            while let d = at(cursor), isDigit(d, radix: radix) { cursor += 1 }
        } else {
            while let d = at(cursor), isDigit(d) { cursor += 1 }
            if at(cursor) == ".", let d = at(cursor + 1), isDigit(d) {
                cursor += 1
                while let d = at(cursor), isDigit(d) { cursor += 1 }
            }
            if let e = at(cursor), e == "e" || e == "E" {
                var i = cursor + 1
                if at(i) == "+" || at(i) == "-" { i += 1 }
                if let d = at(i), isDigit(d) {
                    cursor = i
                    while let d = at(cursor), isDigit(d) { cursor += 1 }
                }
            }
        }
        var text = String.UnicodeScalarView()
        text.append(contentsOf: scalars[start..<cursor])
        return PredicateToken(kind: .number(String(text)), start: start, end: cursor)
    }

    private mutating func readString(quote: Unicode.Scalar) throws(StoreError) -> PredicateToken {
        let start = cursor
        cursor += 1
        var out = String.UnicodeScalarView()
        while cursor < scalars.count {
            let c = scalars[cursor]
            if c == quote {
                cursor += 1
                return PredicateToken(kind: .string(String(out)), start: start, end: cursor)
            }
            if c != "\\" {
                out.append(c)
                cursor += 1
                continue
            }
            let escape = cursor
            guard cursor + 1 < scalars.count else { break }
            let e = scalars[cursor + 1]
            cursor += 2
            switch e {
            case "n": out.append("\n")
            case "t": out.append("\t")
            case "r": out.append("\r")
            case "0": out.append("\0")
            case "\"", "'", "\\": out.append(e)
            case "u": out.append(try readUnicodeEscape(escape))
            default: throw error("unknown escape '\\\(e)' in string", atScalar: escape)
            }
        }
        throw error("unterminated string (no closing \(quote))", atScalar: start)
    }

    /// Reads the rest of `\u{…}` or `\uXXXX` (pairing UTF-16 surrogates); `escape` is where the backslash was.
    private mutating func readUnicodeEscape(_ escape: Int) throws(StoreError) -> Unicode.Scalar {
        func hex(_ count: Int) -> UInt32? {
            guard cursor + count <= scalars.count else { return nil }
            var v: UInt32 = 0
            for s in scalars[cursor..<(cursor + count)] {
                guard s.properties.isASCIIHexDigit, let d = UInt32(String(s), radix: 16) else { return nil }
                v = v * 16 + d
            }
            cursor += count
            return v
        }
        if cursor < scalars.count, scalars[cursor] == "{" {
            var end = cursor + 1
            while end < scalars.count, scalars[end] != "}", end - cursor <= 9 { end += 1 }
            cursor += 1
            guard end < scalars.count, scalars[end] == "}", end > cursor, end - cursor <= 8, let v = hex(end - cursor),
                let s = Unicode.Scalar(v)
            else { throw error("invalid unicode escape (use \\u{1F600} or \\u00E9)", atScalar: escape) }
            cursor += 1
            return s
        }
        guard let unit = hex(4) else {
            throw error("invalid unicode escape (use \\u{1F600} or \\u00E9)", atScalar: escape)
        }
        if let s = Unicode.Scalar(unit) { return s }
        // A UTF-16 surrogate: a high one must be followed by `\u` and a low one.
        guard (0xD800...0xDBFF).contains(unit), cursor + 1 < scalars.count, scalars[cursor] == "\\",
            scalars[cursor + 1] == "u"
        else { throw error("unpaired UTF-16 surrogate in unicode escape", atScalar: escape) }
        cursor += 2
        guard let low = hex(4), (0xDC00...0xDFFF).contains(low),
            let s = Unicode.Scalar(0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00))
        else { throw error("unpaired UTF-16 surrogate in unicode escape", atScalar: escape) }
        return s
    }

    // MARK: Errors and text

    func error(_ message: String, atScalar offset: Int) -> StoreError {
        .predicateSyntax(message: message, position: characterOffset(offset), source: source)
    }

    /// Positions are reported in `Character`s, the unit a caret under the source lines up with.
    func characterOffset(_ scalarOffset: Int) -> Int {
        var seen = 0
        var characters = 0
        for ch in source {
            let n = ch.unicodeScalars.count
            if seen + n > scalarOffset { return characters }
            seen += n
            characters += 1
        }
        return characters
    }

    func text(from start: Int, to end: Int) -> String {
        guard start < end, end <= scalars.count else { return "" }
        var v = String.UnicodeScalarView()
        v.append(contentsOf: scalars[start..<end])
        return String(v)
    }
}
