import Foundation

extension FetchPredicate: CustomStringConvertible {
    /// The predicate in the string syntax of ``init(_:_:)``, such that parsing it gives back this predicate.
    ///
    /// The round trip holds for every predicate the parser or the builder DSL produces, with any constant values
    /// (types the syntax has no literal for are written as `CAST(…, "type")`, exactly: dates to the last bit,
    /// `-0.0`, `Int64.min`). Shapes only hand-built trees have print as their meaning, so they parse back to an
    /// equivalent but not identical tree: an empty ``and(_:)`` prints as `TRUEPREDICATE`, an empty ``or(_:)`` as
    /// `FALSEPREDICATE`, a one-element group as its element, `ANY`/`ALL` on the right of an operator as written,
    /// and NaN payloads are not kept. Keys that are not identifiers (say, with a space) cannot be written in the
    /// syntax at all except through `%K`; they print as they are.
    public var description: String { PredicatePrinter.render(self).text }
}

extension FetchExpression: CustomStringConvertible {
    /// The expression in the string syntax: a key path, a constant or a list.
    public var description: String { PredicatePrinter.expression(self) }
}

/// Writes predicates in the string syntax, parenthesising exactly where the parser's grouping needs it.
enum PredicatePrinter {
    /// How an operand binds, from loosest to tightest.
    enum Binding: Int, Comparable {
        case or, and, unary
        static func < (a: Binding, b: Binding) -> Bool { a.rawValue < b.rawValue }
    }

    static func render(_ p: FetchPredicate) -> (text: String, binding: Binding) {
        switch p {
        case .true: return ("TRUEPREDICATE", .unary)
        case .false: return ("FALSEPREDICATE", .unary)
        case .and(let ps):
            if ps.isEmpty { return ("TRUEPREDICATE", .unary) }
            if ps.count == 1 { return render(ps[0]) }
            // A nested AND must keep its parentheses too, or it would merge into this chain.
            return (ps.map { group(render($0), unless: .unary) }.joined(separator: " AND "), .and)
        case .or(let ps):
            if ps.isEmpty { return ("FALSEPREDICATE", .unary) }
            if ps.count == 1 { return render(ps[0]) }
            return (ps.map { group(render($0), unless: .and) }.joined(separator: " OR "), .or)
        case .not(.comparison(.any(let path), let op, let rhs, let options)):
            return ("NONE " + comparison(.any(path), op, rhs, options).dropFirst(4), .unary)
        case .not(let inner):
            return ("NOT " + group(render(inner), unless: .unary), .unary)
        case .comparison(let lhs, let op, let rhs, let options):
            return (comparison(lhs, op, rhs, options), .unary)
        }
    }

    /// Parenthesises `r` unless it binds at least as tightly as `minimum`.
    private static func group(_ r: (text: String, binding: Binding), unless minimum: Binding) -> String {
        r.binding >= minimum ? r.text : "(" + r.text + ")"
    }

    static func comparison(_ lhs: FetchExpression, _ op: ComparisonOperator, _ rhs: FetchExpression, _ options: ComparisonOptions)
        -> String
    {
        var o = op.rawValue
        let letters = (options.contains(.caseInsensitive) ? "c" : "") + (options.contains(.diacriticInsensitive) ? "d" : "")
        if !letters.isEmpty { o += "[" + letters + "]" }
        return expression(lhs) + " " + o + " " + expression(rhs)
    }

    static func expression(_ e: FetchExpression) -> String {
        switch e {
        case .keyPath(let path): return keyPath(path)
        case .constant(let v): return constant(v)
        case .list(let vs): return "{" + vs.map(constant).joined(separator: ", ") + "}"
        case .any(let path): return "ANY " + keyPath(path)
        case .all(let path): return "ALL " + keyPath(path)
        }
    }

    static func keyPath(_ path: [String]) -> String {
        path.enumerated().map { i, key in
            if key == "@count" && i > 0 { return key }
            if key == "self" && path.count == 1 { return "self" }
            // Escape keywords everywhere, and `cast` where a following '(' is impossible anyway: keeps it simple.
            return PredicateSyntax.keyword(key) != nil ? "#" + key : key
        }.joined(separator: ".")
    }

    static func constant(_ v: StoreValue) -> String {
        switch v {
        case .null: return "nil"
        case .boolean(let b): return b ? "TRUE" : "FALSE"
        case .integer64(let i): return String(i)
        case .integer16(let i): return cast(String(i), "integer16")
        case .integer32(let i): return cast(String(i), "integer32")
        case .double(let d):
            return d.isFinite ? d.description : cast(quoted(nonFinite(d.isNaN, d.sign)), "double")
        case .float(let f):
            return cast(f.isFinite ? f.description : quoted(nonFinite(f.isNaN, f.sign)), "float")
        case .decimal(let d): return cast(quoted(d.description), "decimal")
        case .string(let s): return quoted(s)
        case .date(let d):
            let t = d.timeIntervalSinceReferenceDate
            if t.isFinite { return cast(quoted(ExactISO8601.string(from: d)), "date") }
            return cast(constant(.double(t)), "date")
        case .binary(let data): return cast(quoted(data.base64EncodedString()), "binary")
        case .uuid(let u): return cast(quoted(u.uuidString), "uuid")
        case .uri(let u): return cast(quoted(u.absoluteString), "uri")
        }
    }

    private static func nonFinite(_ isNaN: Bool, _ sign: FloatingPointSign) -> String {
        (sign == .minus ? "-" : "") + (isNaN ? "nan" : "inf")
    }

    private static func cast(_ value: String, _ type: String) -> String {
        "CAST(" + value + ", \"" + type + "\")"
    }

    /// A double-quoted string literal; control characters are escaped so the text stays on one line.
    static func quoted(_ s: String) -> String {
        var out = "\""
        for u in s.unicodeScalars {
            switch u {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\t": out += "\\t"
            case "\r": out += "\\r"
            default:
                if u.value < 0x20 || u.value == 0x7F || (0x80..<0xA0).contains(u.value) {
                    out += "\\u{" + String(u.value, radix: 16, uppercase: true) + "}"
                } else {
                    out.unicodeScalars.append(u)
                }
            }
        }
        return out + "\""
    }
}
