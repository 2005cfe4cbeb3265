import Foundation

/// Why a document (an NDJSON line, stored metadata, a schema file) is not valid JSON, and where: the 0-based byte
/// offset in it.
@_spi(BackendKit) public struct JSONSyntaxError: Error {
    /// What is wrong, in a few words.
    public let message: String
    /// Where: the 0-based byte offset in the document.
    public let offset: Int
}

/// A strict JSON parser (RFC 8259) for one document: objects, arrays, strings with every escape, numbers, literals.
/// Rejects trailing garbage, invalid UTF-8, control characters in strings, duplicate keys, and nesting deeper than
/// ``maxDepth`` (so hostile input cannot exhaust the stack).
@_spi(BackendKit) public struct JSONParser {
    /// The deepest nesting of arrays and objects a document may have.
    public static let maxDepth = 256

    private let bytes: UnsafeBufferPointer<UInt8>
    private var i = 0

    private init(_ bytes: UnsafeBufferPointer<UInt8>) {
        self.bytes = bytes
    }

    /// Parses `bytes` as one JSON document (UTF-8, surrounding whitespace allowed, nothing after the value).
    public static func parse(_ bytes: ArraySlice<UInt8>) throws(JSONSyntaxError) -> JSONValue {
        let result: Result<JSONValue, JSONSyntaxError> = bytes.withUnsafeBufferPointer { buffer in
            var parser = JSONParser(buffer)
            do throws(JSONSyntaxError) {
                parser.skipWhitespace()
                let value = try parser.value(depth: 0)
                parser.skipWhitespace()
                guard parser.i == buffer.count else { throw parser.error("unexpected text after the JSON value") }
                return .success(value)
            } catch {
                return .failure(error)
            }
        }
        return try result.get()
    }

    private func error(_ message: String) -> JSONSyntaxError {
        JSONSyntaxError(message: message, offset: i)
    }

    private mutating func skipWhitespace() {
        while i < bytes.count, bytes[i] == 0x20 || bytes[i] == 0x09 || bytes[i] == 0x0A || bytes[i] == 0x0D { i += 1 }
    }

    private mutating func value(depth: Int) throws(JSONSyntaxError) -> JSONValue {
        guard i < bytes.count else { throw error("unexpected end of input") }
        switch bytes[i] {
        case UInt8(ascii: "{"): return try object(depth: depth + 1)
        case UInt8(ascii: "["): return try array(depth: depth + 1)
        case UInt8(ascii: "\""): return .string(try string())
        case UInt8(ascii: "t"): try literal("true"); return .bool(true)
        case UInt8(ascii: "f"): try literal("false"); return .bool(false)
        case UInt8(ascii: "n"): try literal("null"); return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return .number(try number())
        default: throw error("unexpected character '\(Self.show(bytes[i]))'")
        }
    }

    private mutating func literal(_ word: StaticString) throws(JSONSyntaxError) {
        let n = word.utf8CodeUnitCount
        guard i + n <= bytes.count else { throw error("unexpected end of input") }
        let matches = word.withUTF8Buffer { w in (0..<n).allSatisfy { bytes[i + $0] == w[$0] } }
        guard matches else { throw error("unexpected character '\(Self.show(bytes[i]))'") }
        i += n
    }

    private mutating func object(depth: Int) throws(JSONSyntaxError) -> JSONValue {
        guard depth <= Self.maxDepth else { throw error("nested deeper than \(Self.maxDepth) levels") }
        i += 1
        var members: [(key: String, value: JSONValue)] = []
        // Small objects (every interchange line) check duplicates by scanning; large ones with a set.
        var keys: Set<String>?
        skipWhitespace()
        if i < bytes.count, bytes[i] == UInt8(ascii: "}") { i += 1; return .object(members) }
        while true {
            skipWhitespace()
            guard i < bytes.count, bytes[i] == UInt8(ascii: "\"") else { throw error("expected a key in quotes") }
            let keyStart = i
            let key = try string()
            skipWhitespace()
            guard i < bytes.count, bytes[i] == UInt8(ascii: ":") else { throw error("expected ':' after a key") }
            i += 1
            skipWhitespace()
            let v = try value(depth: depth)
            let duplicate: Bool
            if let inserted = keys?.insert(key).inserted {
                duplicate = !inserted
            } else {
                duplicate = members.contains { $0.key == key }
                if members.count >= 32 { keys = Set(members.map(\.key) + [key]) }
            }
            if duplicate { throw JSONSyntaxError(message: "duplicate key \"\(key)\"", offset: keyStart) }
            members.append((key, v))
            skipWhitespace()
            guard i < bytes.count else { throw error("unexpected end of input (missing '}')") }
            if bytes[i] == UInt8(ascii: ",") { i += 1; continue }
            if bytes[i] == UInt8(ascii: "}") { i += 1; return .object(members) }
            throw error("expected ',' or '}'")
        }
    }

    private mutating func array(depth: Int) throws(JSONSyntaxError) -> JSONValue {
        guard depth <= Self.maxDepth else { throw error("nested deeper than \(Self.maxDepth) levels") }
        i += 1
        var items: [JSONValue] = []
        skipWhitespace()
        if i < bytes.count, bytes[i] == UInt8(ascii: "]") { i += 1; return .array(items) }
        while true {
            skipWhitespace()
            items.append(try value(depth: depth))
            skipWhitespace()
            guard i < bytes.count else { throw error("unexpected end of input (missing ']')") }
            if bytes[i] == UInt8(ascii: ",") { i += 1; continue }
            if bytes[i] == UInt8(ascii: "]") { i += 1; return .array(items) }
            throw error("expected ',' or ']'")
        }
    }

    private mutating func number() throws(JSONSyntaxError) -> String {
        let start = i
        if bytes[i] == UInt8(ascii: "-") { i += 1 }
        func digits(_ i: inout Int) -> Int {
            let s = i
            while i < bytes.count, bytes[i] >= 0x30, bytes[i] <= 0x39 { i += 1 }
            return i - s
        }
        guard i < bytes.count, bytes[i] >= 0x30, bytes[i] <= 0x39 else { throw error("a number needs digits") }
        if bytes[i] == 0x30 {
            i += 1
            if i < bytes.count, bytes[i] >= 0x30, bytes[i] <= 0x39 { throw error("numbers must not have leading zeros") }
        } else {
            _ = digits(&i)
        }
        if i < bytes.count, bytes[i] == UInt8(ascii: ".") {
            i += 1
            guard digits(&i) > 0 else { throw error("a decimal point must be followed by digits") }
        }
        if i < bytes.count, bytes[i] == UInt8(ascii: "e") || bytes[i] == UInt8(ascii: "E") {
            i += 1
            if i < bytes.count, bytes[i] == UInt8(ascii: "+") || bytes[i] == UInt8(ascii: "-") { i += 1 }
            guard digits(&i) > 0 else { throw error("an exponent needs digits") }
        }
        return String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<i]), as: UTF8.self)
    }

    private mutating func string() throws(JSONSyntaxError) -> String {
        i += 1
        let start = i
        // Fast path: no escapes (and no validation needed when every byte is ASCII).
        var ascii = true
        while i < bytes.count {
            let b = bytes[i]
            if b == UInt8(ascii: "\"") {
                let s = ascii ? String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<i]), as: UTF8.self) : try text(start..<i)
                i += 1
                return s
            }
            if b >= 0x80 { ascii = false }
            if b == UInt8(ascii: "\\") { break }
            if b < 0x20 { throw error("control character in a string (escape it)") }
            i += 1
        }
        var out = Array(bytes[start..<i])
        while i < bytes.count {
            let b = bytes[i]
            switch b {
            case UInt8(ascii: "\""):
                i += 1
                guard let s = String(validating: out, as: UTF8.self) else {
                    throw JSONSyntaxError(message: "a string is not valid UTF-8", offset: start)
                }
                return s
            case UInt8(ascii: "\\"):
                i += 1
                guard i < bytes.count else { throw error("unexpected end of input in a string") }
                let e = bytes[i]
                i += 1
                switch e {
                case UInt8(ascii: "\""): out.append(0x22)
                case UInt8(ascii: "\\"): out.append(0x5C)
                case UInt8(ascii: "/"): out.append(0x2F)
                case UInt8(ascii: "b"): out.append(0x08)
                case UInt8(ascii: "f"): out.append(0x0C)
                case UInt8(ascii: "n"): out.append(0x0A)
                case UInt8(ascii: "r"): out.append(0x0D)
                case UInt8(ascii: "t"): out.append(0x09)
                case UInt8(ascii: "u"):
                    var scalar = try hex4()
                    if (0xD800...0xDBFF).contains(scalar) {
                        guard i + 1 < bytes.count, bytes[i] == UInt8(ascii: "\\"), bytes[i + 1] == UInt8(ascii: "u") else {
                            throw error("a lone UTF-16 surrogate in a \\u escape")
                        }
                        i += 2
                        let low = try hex4()
                        guard (0xDC00...0xDFFF).contains(low) else { throw error("a lone UTF-16 surrogate in a \\u escape") }
                        scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                    } else if (0xDC00...0xDFFF).contains(scalar) {
                        throw error("a lone UTF-16 surrogate in a \\u escape")
                    }
                    guard let u = Unicode.Scalar(scalar) else { throw error("an invalid \\u escape") }
                    out.append(contentsOf: Array(String(Character(u)).utf8))
                default:
                    throw error("an invalid escape '\\\(Self.show(e))'")
                }
            default:
                if b < 0x20 { throw error("control character in a string (escape it)") }
                out.append(b)
                i += 1
            }
        }
        throw error("unexpected end of input in a string")
    }

    private mutating func hex4() throws(JSONSyntaxError) -> UInt32 {
        guard i + 4 <= bytes.count else { throw error("a \\u escape needs four hex digits") }
        var v: UInt32 = 0
        for _ in 0..<4 {
            let b = bytes[i]
            let d: UInt32
            switch b {
            case 0x30...0x39: d = UInt32(b - 0x30)
            case 0x41...0x46: d = UInt32(b - 0x41 + 10)
            case 0x61...0x66: d = UInt32(b - 0x61 + 10)
            default: throw error("a \\u escape needs four hex digits")
            }
            v = v << 4 | d
            i += 1
        }
        return v
    }

    private func text(_ range: Range<Int>) throws(JSONSyntaxError) -> String {
        guard let s = String(validating: UnsafeBufferPointer(rebasing: bytes[range]), as: UTF8.self) else {
            throw JSONSyntaxError(message: "a string is not valid UTF-8", offset: range.lowerBound)
        }
        return s
    }

    private static func show(_ b: UInt8) -> String {
        b >= 0x20 && b < 0x7F ? String(UnicodeScalar(b)) : String(format: "\\x%02X", b)
    }
}
