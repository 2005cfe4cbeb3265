import Foundation

extension FetchPredicate {
    /// Parses a predicate written in the NSPredicate-like string syntax, substituting `arguments` for its
    /// placeholders in order.
    ///
    /// The syntax, in brief (keywords are case-insensitive):
    /// - Comparisons: `==` `=` `!=` `<>` `<` `<=` `=<` `>` `>=` `=>`, `BEGINSWITH` `ENDSWITH` `CONTAINS` `LIKE`
    ///   (`*` any run, `?` one character) `MATCHES` (a regular expression matching the whole string) `IN` `BETWEEN`,
    ///   each optionally followed by `[c]` (case-insensitive), `[d]` (diacritic-insensitive) or `[cd]`.
    /// - Logic: `NOT`/`!` binds tightest, then `AND`/`&&`, then `OR`/`||`; parentheses group.
    ///   `TRUEPREDICATE` and `FALSEPREDICATE` match everything and nothing.
    /// - Values: integers (`42`, `-7`, `0x2A`), decimals (`1.5`, `1e3`), strings in single or double quotes with
    ///   backslash escapes (`\n` `\t` `\r` `\0` `\"` `\'` `\\` `\u{1F600}` `\u00E9`), `nil`/`NULL`,
    ///   `YES`/`TRUE`/`NO`/`FALSE`, lists `{1, 2, 3}` (for `IN` and `BETWEEN`), and
    ///   `CAST(value, "type")` for the other stored types (`date` from ISO 8601 text or seconds since 2001,
    ///   `uuid`, `uri`, `binary` from base64, `decimal`, `integer16`, `integer32`, `float`, …; the Foundation
    ///   names `NSDate`, `NSUUID`, … work too).
    /// - Key paths: `title`, `author.name` (through to-one relationships), `tags.@count`, `self` (the record's
    ///   primary key), and `ANY tags.name`, `SOME …` (same as `ANY`), `ALL …`, `NONE …` (same as `NOT ANY …`)
    ///   before a comparison. A key that is also a keyword is written with a `#` in front (`#in == 1`).
    /// - Placeholders: `%@` (any value), `%d` `%i` `%ld` `%u` (an integer), `%f` `%g` (a number) and `%K` (a key
    ///   path given as a string, for keys that are not identifiers or are chosen at run time).
    ///
    /// `AND` and `OR` chains become one ``FetchPredicate/and(_:)`` or ``FetchPredicate/or(_:)`` each; a parenthesised group
    /// stays a nested predicate, so ``description`` prints back a string that parses to the same tree.
    ///
    /// - Throws: ``StoreError/predicateSyntax(message:position:source:)`` for the first error in the string, with
    ///   the 0-based offset (in `Character`s) of the token at fault, and for placeholders without an argument, of
    ///   the wrong kind, or arguments left over.
    public init(_ format: String, _ arguments: StoreValue...) throws(StoreError) {
        var parser = PredicateParser(format, arguments: arguments)
        self = try parser.parse()
    }

    /// Parses a predicate with its placeholder arguments given as an array; see ``init(_:_:)``.
    public init(_ format: String, arguments: [StoreValue]) throws(StoreError) {
        var parser = PredicateParser(format, arguments: arguments)
        self = try parser.parse()
    }
}

/// A recursive-descent parser over a lazily lexed token stream, so the first error in the text is the one
/// reported.
struct PredicateParser {
    private var lexer: PredicateLexer
    private let arguments: [StoreValue]
    private var nextArgument = 0
    private var buffered: [PredicateToken] = []
    private var previous: PredicateToken?
    private var depth = 0

    /// Deeper nesting than this is refused rather than risking the stack on hostile input.
    static let maxDepth = 200

    /// The deepest tree of `NOT`, `AND` and `OR` inside one another a predicate may build (redundant parentheses
    /// do not count). Kept, with a margin, under the nesting SQLite's parser takes once a predicate is translated to
    /// SQL (deeper, it fails with "parser stack overflow"), so that a predicate that parses runs on every backend,
    /// not only on those that evaluate it themselves.
    static let maxTreeDepth = 24

    init(_ source: String, arguments: [StoreValue]) {
        self.lexer = PredicateLexer(source)
        self.arguments = arguments
    }

    mutating func parse() throws(StoreError) -> FetchPredicate {
        if try peek().kind == .end { throw error("expected a predicate, found an empty string", at: try peek()) }
        let result = try parseOr()
        let t = try peek()
        if t.kind != .end {
            if t.kind == .symbol(")") { throw error("unexpected ')' without a matching '('", at: t) }
            throw error("expected AND, OR or the end after '\(text(previous))', found \(describe(t))", at: t)
        }
        if nextArgument < arguments.count {
            throw error(
                "\(arguments.count) argument\(arguments.count == 1 ? "" : "s") given but the format uses only \(nextArgument)",
                atScalar: lexer.scalars.count)
        }
        if Self.treeDepth(result) > Self.maxTreeDepth {
            throw error("predicate nested more than \(Self.maxTreeDepth) levels deep (NOT, AND and OR inside one another)",
                        atScalar: 0)
        }
        return result
    }

    /// How deeply `NOT`, `AND` and `OR` nest in `p` (a comparison is 1).
    static func treeDepth(_ p: FetchPredicate) -> Int {
        switch p {
        case .true, .false, .comparison: 1
        case .not(let inner): 1 + treeDepth(inner)
        case .and(let items), .or(let items): 1 + (items.map(treeDepth).max() ?? 0)
        }
    }

    // MARK: Logic

    private mutating func parseOr() throws(StoreError) -> FetchPredicate {
        var items = [try parseAnd()]
        while isConnective(try peek(), symbol: "||", keyword: "OR") {
            advance()
            items.append(try parseAnd())
        }
        return items.count == 1 ? items[0] : .or(items)
    }

    private mutating func parseAnd() throws(StoreError) -> FetchPredicate {
        var items = [try parseNot()]
        while isConnective(try peek(), symbol: "&&", keyword: "AND") {
            advance()
            items.append(try parseNot())
        }
        return items.count == 1 ? items[0] : .and(items)
    }

    private mutating func parseNot() throws(StoreError) -> FetchPredicate {
        let t = try peek()
        guard isConnective(t, symbol: "!", keyword: "NOT") else { return try parsePrimary() }
        try enter(t)
        defer { depth -= 1 }
        advance()
        return .not(try parseNot())
    }

    private mutating func parsePrimary() throws(StoreError) -> FetchPredicate {
        let t = try peek()
        if t.kind == .symbol("(") {
            try enter(t)
            defer { depth -= 1 }
            advance()
            let inner = try parseOr()
            let close = try peek()
            guard close.kind == .symbol(")") else {
                throw error(
                    "expected ')' to close the '(' at position \(lexer.characterOffset(t.start)), found \(describe(close))",
                    at: close)
            }
            advance()
            return inner
        }
        if case .word(let w) = t.kind, let k = PredicateSyntax.keyword(w) {
            if k == "TRUEPREDICATE" { advance(); return .true }
            if k == "FALSEPREDICATE" { advance(); return .false }
        }
        return try parseComparison()
    }

    private func isConnective(_ t: PredicateToken, symbol: String, keyword: String) -> Bool {
        switch t.kind {
        case .symbol(let s): return s == symbol
        case .word(let w): return PredicateSyntax.keyword(w) == keyword
        default: return false
        }
    }

    private mutating func enter(_ t: PredicateToken) throws(StoreError) {
        depth += 1
        if depth > Self.maxDepth {
            throw error("predicate nested more than \(Self.maxDepth) levels deep", at: t)
        }
    }

    // MARK: Comparisons

    private mutating func parseComparison() throws(StoreError) -> FetchPredicate {
        var quantifier: QuantifiedKey.Quantifier?
        let first = try peek()
        if case .word(let w) = first.kind, let k = PredicateSyntax.keyword(w) {
            switch k {
            case "ANY", "SOME": quantifier = .any
            case "ALL": quantifier = .all
            case "NONE": quantifier = .notAny
            default: break
            }
            if quantifier != nil { advance() }
        }

        let lhsToken = try peek()
        let lhs = try parseExpression(expecting: quantifier == nil ? "a predicate" : "a key path")
        var path: [String] = []
        if quantifier != nil {
            guard case .keyPath(let p) = lhs else {
                throw error("expected a key path after '\(text(first))', found \(describe(lhsToken))", at: lhsToken)
            }
            path = p
        }
        let lhsText = lexer.text(from: lhsToken.start, to: previous?.end ?? lhsToken.end)

        let opToken = try peek()
        let (op, options) = try parseOperator(after: lhsText)
        let opText = lexer.text(from: opToken.start, to: previous?.end ?? opToken.end)

        let rhsToken = try peek()
        let rhs = try parseExpression(expecting: "a value", after: opText)
        try check(op, lhs: lhs, lhsToken: lhsToken, rhs: rhs, rhsToken: rhsToken)

        switch quantifier {
        case nil: return .comparison(lhs, op, rhs, options)
        case .any: return .comparison(.any(path), op, rhs, options)
        case .all: return .comparison(.all(path), op, rhs, options)
        case .notAny: return .not(.comparison(.any(path), op, rhs, options))
        }
    }

    private mutating func parseOperator(after lhsText: String) throws(StoreError) -> (ComparisonOperator, ComparisonOptions) {
        let t = try peek()
        var op: ComparisonOperator?
        switch t.kind {
        case .symbol(let s):
            switch s {
            case "==", "=": op = .equal
            case "!=", "<>": op = .notEqual
            case "<": op = .less
            case "<=", "=<": op = .lessOrEqual
            case ">": op = .greater
            case ">=", "=>": op = .greaterOrEqual
            default: break
            }
        case .word(let w):
            switch PredicateSyntax.keyword(w) ?? w.uppercased() {
            case "BEGINSWITH": op = .beginsWith
            case "ENDSWITH": op = .endsWith
            case "CONTAINS": op = .contains
            case "LIKE": op = .like
            case "MATCHES": op = .matches
            case "IN": op = .in
            case "BETWEEN": op = .between
            default: break
            }
        default: break
        }
        guard let op else {
            throw error("expected a comparison operator after '\(lhsText)', found \(describe(t))", at: t)
        }
        advance()

        var options: ComparisonOptions = []
        guard try peek().kind == .symbol("[") else { return (op, options) }
        advance()
        let letters = try peek()
        guard case .word(let w) = letters.kind else {
            throw error("expected comparison options (c, d or cd) after '[', found \(describe(letters))", at: letters)
        }
        for (i, s) in w.unicodeScalars.enumerated() {
            switch s {
            case "c", "C": options.insert(.caseInsensitive)
            case "d", "D": options.insert(.diacriticInsensitive)
            default:
                throw error("unknown comparison option '\(s)' (use c, d or cd)", atScalar: letters.start + i)
            }
        }
        advance()
        let close = try peek()
        guard close.kind == .symbol("]") else {
            throw error("expected ']' after the comparison options, found \(describe(close))", at: close)
        }
        advance()
        return (op, options)
    }

    /// Rejects operand shapes the evaluator could never accept, at the position of the operand at fault.
    private func check(
        _ op: ComparisonOperator, lhs: FetchExpression, lhsToken: PredicateToken, rhs: FetchExpression, rhsToken: PredicateToken
    ) throws(StoreError) {
        if case .list = lhs, op != .contains {
            throw error("a list can only be on the left of CONTAINS", at: lhsToken)
        }
        switch op {
        case .in:
            switch rhs {
            case .list, .keyPath: break
            default: throw error("IN needs a list ({…}) or a key path on its right, found \(describe(rhsToken))", at: rhsToken)
            }
        case .between:
            guard case .list(let bounds) = rhs, bounds.count == 2 else {
                throw error("BETWEEN needs a list of two values ({low, high})", at: rhsToken)
            }
        default:
            if case .list = rhs {
                throw error("a list can only follow IN or BETWEEN, not \(op.rawValue)", at: rhsToken)
            }
        }
    }

    // MARK: Expressions

    private mutating func parseExpression(expecting what: String, after context: String? = nil) throws(StoreError)
        -> FetchExpression
    {
        let t = try peek()
        switch t.kind {
        case .string(let s):
            advance()
            return .constant(.string(s))
        case .number(let n):
            advance()
            return .constant(try number(n, at: t))
        case .symbol("{"):
            return .list(try parseList())
        case .placeholder(let spec):
            if spec == "K" { return .keyPath(try parseKeyPath()) }
            advance()
            return .constant(try argument(for: spec, at: t))
        case .escapedWord:
            return .keyPath(try parseKeyPath())
        case .word(let w):
            if let k = PredicateSyntax.keyword(w) {
                switch k {
                case "NIL", "NULL": advance(); return .constant(.null)
                case "YES", "TRUE": advance(); return .constant(.boolean(true))
                case "NO", "FALSE": advance(); return .constant(.boolean(false))
                case "SELF": return .keyPath(try parseKeyPath())
                default: break
                }
            } else if try peek(1).kind == .symbol("(") {
                if w.uppercased() == "CAST" { return .constant(try parseCast()) }
                throw error("function calls such as '\(w)(…)' are not supported", at: t)
            } else {
                return .keyPath(try parseKeyPath())
            }
        case .atWord(let w):
            throw error("'@\(w)' must follow a relationship key (as in 'tags.@count')", at: t)
        default:
            break
        }
        let where_ = context.map { " after '\($0)'" } ?? (previous.map { " after '\(text($0))'" } ?? "")
        throw error("expected \(what)\(where_), found \(describe(t))", at: t)
    }

    private mutating func parseKeyPath() throws(StoreError) -> [String] {
        var path: [String] = []
        let t = try peek()
        switch t.kind {
        case .word(let w): path = [PredicateSyntax.keyword(w) == "SELF" ? "self" : w]
        case .escapedWord(let w): path = [w]
        case .placeholder("K"): path = try keyPathArgument(at: t)
        default: throw error("expected a key path, found \(describe(t))", at: t)
        }
        advance()
        while try peek().kind == .symbol(".") {
            let dot = try peek()
            if path.last == "@count" { throw error("nothing can follow '@count' in a key path", at: dot) }
            advance()
            let k = try peek()
            switch k.kind {
            case .word(let w), .escapedWord(let w):
                path.append(w)
            case .placeholder("K"):
                path += try keyPathArgument(at: k)
            case .atWord(let w):
                guard w.lowercased() == "count" else {
                    throw error("unsupported collection operator '@\(w)' (only @count is supported)", at: k)
                }
                path.append("@count")
            default:
                throw error("expected a key after '.', found \(describe(k))", at: k)
            }
            advance()
        }
        if path.count > 1, path[0] == "self" { path.removeFirst() }
        return path
    }

    private mutating func parseList() throws(StoreError) -> [StoreValue] {
        let open = try peek()
        advance()
        var values: [StoreValue] = []
        if try peek().kind == .symbol("}") { advance(); return values }
        while true {
            let t = try peek()
            if t.kind == .symbol("{") { throw error("lists cannot be nested", at: t) }
            let e = try parseExpression(expecting: "a value", after: values.isEmpty ? "{" : ",")
            guard case .constant(let v) = e else {
                throw error("a list holds only constant values, not key paths", at: t)
            }
            values.append(v)
            let sep = try peek()
            if sep.kind == .symbol(",") { advance(); continue }
            if sep.kind == .symbol("}") { advance(); return values }
            throw error(
                "expected ',' or '}' in the list opened at position \(lexer.characterOffset(open.start)), found \(describe(sep))",
                at: sep)
        }
    }

    private mutating func parseCast() throws(StoreError) -> StoreValue {
        let castToken = try peek()
        try enter(castToken)
        defer { depth -= 1 }
        advance()  // CAST
        advance()  // (
        let valueToken = try peek()
        var raw: String?
        let value: StoreValue
        if case .number(let n) = valueToken.kind {
            raw = n
            advance()
            value = (try? number(n, at: valueToken)) ?? .null
        } else {
            guard case .constant(let v) = try parseExpression(expecting: "a value", after: "CAST(") else {
                throw error("CAST needs a constant value, not a key path", at: valueToken)
            }
            value = v
        }
        let comma = try peek()
        guard comma.kind == .symbol(",") else {
            throw error("expected ',' and a type name after the value in CAST, found \(describe(comma))", at: comma)
        }
        advance()
        let typeToken = try peek()
        guard case .string(let typeName) = typeToken.kind else {
            throw error("expected a type name string (such as \"date\") in CAST, found \(describe(typeToken))", at: typeToken)
        }
        advance()
        let close = try peek()
        guard close.kind == .symbol(")") else {
            throw error("expected ')' to close the CAST at position \(lexer.characterOffset(castToken.start)), found \(describe(close))", at: close)
        }
        advance()
        guard let target = PredicateSyntax.castTypes[typeName.lowercased()] else {
            let known = PredicateSyntax.castTypes.keys.filter { !$0.hasPrefix("ns") }.sorted().joined(separator: ", ")
            throw error("unknown CAST type \"\(typeName)\" (use one of: \(known))", at: typeToken)
        }
        guard let converted = Self.cast(value, raw: raw, to: target) else {
            throw error("cannot convert \(describe(valueToken)) to \(target?.rawValue ?? "a number")", at: valueToken)
        }
        return converted
    }

    /// Converts a `CAST` operand. `raw` is the literal's text when the operand was a number, so floats and
    /// decimals are read from the digits rather than through a double.
    static func cast(_ value: StoreValue, raw: String?, to target: AttributeType?) -> StoreValue? {
        guard let target else {
            if let raw { return Self.numberValue(raw) }
            return value.doubleValue != nil && value.type != .date ? value : nil
        }
        switch (target, value) {
        case (.date, .date): return value
        case (.date, .string(let s)):
            return ExactISO8601.date(from: s).map { .date($0) }
        case (.date, _):
            if let raw, let d = Double(raw) { return .date(Date(timeIntervalSinceReferenceDate: d)) }
            return value.doubleValue.map { .date(Date(timeIntervalSinceReferenceDate: $0)) }
        case (.float, _):
            if let raw { return Float(raw).map { .float($0) } }
            if case .string(let s) = value { return Float(s).map { .float($0) } }
            if case .double(let d) = value { return .float(Float(d)) }
            return value.coerced(to: .float)
        case (.double, _):
            if let raw { return Double(raw).map { .double($0) } }
            if case .string(let s) = value { return Double(s).map { .double($0) } }
            return value.coerced(to: .double)
        case (.decimal, _):
            if let raw {
                return Decimal(string: raw, locale: Locale(identifier: "en_US_POSIX")).map { .decimal($0) }
            }
            if case .string(let s) = value, s.lowercased() == "nan" { return .decimal(.nan) }
            return value.coerced(to: .decimal)
        case (.binary, .string(let s)), (.transformable, .string(let s)):
            return Data(base64Encoded: s).map { .binary($0) }
        case (.integer16, _), (.integer32, _), (.integer64, _):
            let v = raw.flatMap { Self.numberValue($0) } ?? value
            if case .string(let s) = v, let i = Int64(s) { return StoreValue.integer64(i).coerced(to: target) }
            return v.coerced(to: target)
        case (.string, .string): return value
        case (.string, _):
            return raw.map { .string($0) }
        default:
            return value.coerced(to: target)
        }
    }

    // MARK: Values and arguments

    private func number(_ text: String, at t: PredicateToken) throws(StoreError) -> StoreValue {
        if let v = Self.numberValue(text) { return v }
        if Self.isFloatingLiteral(text) {
            throw error("number \(text) is out of range for a double", at: t)
        }
        throw error("integer \(text) does not fit in 64 bits", at: t)
    }

    static func isFloatingLiteral(_ text: String) -> Bool {
        let body = text.hasPrefix("-") ? text.dropFirst() : Substring(text)
        if body.hasPrefix("0x") || body.hasPrefix("0X") { return false }
        return body.contains(".") || body.contains("e") || body.contains("E")
    }

    /// The value of a number literal: ``StoreValue/integer64(_:)`` for whole numbers, ``StoreValue/double(_:)``
    /// when it has a fraction or exponent; `nil` when it does not fit.
    static func numberValue(_ text: String) -> StoreValue? {
        if isFloatingLiteral(text) {
            guard let d = Double(text), d.isFinite else { return nil }
            return .double(d)
        }
        let negative = text.hasPrefix("-")
        var body = negative ? text.dropFirst() : Substring(text)
        var radix = 10
        if body.count > 2, body.first == "0", let r = ["x": 16, "X": 16, "o": 8, "O": 8, "b": 2, "B": 2][body.dropFirst().first ?? " "] {
            radix = r
            body = body.dropFirst(2)
        }
        return Int64((negative ? "-" : "") + body, radix: radix).map { .integer64($0) }
    }

    private mutating func argument(for spec: String, at t: PredicateToken) throws(StoreError) -> StoreValue {
        let v = try takeArgument(for: spec, at: t)
        switch spec {
        case "@":
            return v
        case "f", "lf", "g":
            guard v.doubleValue != nil, v.type != .date, v.type != .boolean else {
                throw error("%\(spec) needs a number argument, got \(v.type?.rawValue ?? "nil") \(v)", at: t)
            }
            return v
        default:
            guard v.int64Value != nil, v.type != .boolean else {
                throw error("%\(spec) needs an integer argument, got \(v.type?.rawValue ?? "nil") \(v)", at: t)
            }
            return v
        }
    }

    private mutating func keyPathArgument(at t: PredicateToken) throws(StoreError) -> [String] {
        let v = try takeArgument(for: "K", at: t)
        guard case .string(let s) = v else {
            throw error("%K needs a key path string argument, got \(v.type?.rawValue ?? "nil") \(v)", at: t)
        }
        let parts = s.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        guard !parts.contains(where: \.isEmpty) else {
            throw error("%K argument \(String(reflecting: s)) is not a key path", at: t)
        }
        return parts
    }

    private mutating func takeArgument(for spec: String, at t: PredicateToken) throws(StoreError) -> StoreValue {
        guard nextArgument < arguments.count else {
            throw error(
                "no argument for '%\(spec)' (placeholder \(nextArgument + 1), but \(arguments.count) argument\(arguments.count == 1 ? "" : "s") given)",
                at: t)
        }
        defer { nextArgument += 1 }
        return arguments[nextArgument]
    }

    // MARK: Tokens

    private mutating func peek(_ ahead: Int = 0) throws(StoreError) -> PredicateToken {
        while buffered.count <= ahead { buffered.append(try lexer.nextToken()) }
        return buffered[ahead]
    }

    /// Consumes the token last peeked.
    private mutating func advance() {
        guard !buffered.isEmpty else { return }
        previous = buffered.removeFirst()
    }

    // MARK: Errors

    private func error(_ message: String, at token: PredicateToken) -> StoreError {
        error(message, atScalar: token.start)
    }

    private func error(_ message: String, atScalar offset: Int) -> StoreError {
        lexer.error(message, atScalar: offset)
    }

    private func text(_ t: PredicateToken?) -> String {
        guard let t else { return "" }
        return lexer.text(from: t.start, to: t.end)
    }

    private func describe(_ t: PredicateToken) -> String {
        switch t.kind {
        case .end: return "the end"
        case .word(let w) where PredicateSyntax.keyword(w) != nil: return "keyword '\(text(t))'"
        case .string: return text(t).count > 40 ? String(text(t).prefix(40)) + "…" : text(t)
        default:
            let s = text(t)
            return "'\(s.count > 40 ? String(s.prefix(40)) + "…" : s)'"
        }
    }
}