import Foundation

/// Writing a ``JSONValue`` as JSON text, spelled as `JSONEncoder` spells the framework's own documents.
///
/// The stored metadata and the schema's JSON form were written with `JSONEncoder`, whose first use in a process
/// instantiates Codable's generic machinery: a cost every store creation and every conversion paid once, larger than
/// the rest of writing the document. Their writers build a ``JSONValue`` and write it here instead. The text is the
/// one `JSONEncoder` writes with the same options (its spacing and indentation when pretty-printed, its escapes, keys
/// in the order of their UTF-8 bytes when sorted), so what was written before and what is written now read alike
/// everywhere and compare equal byte for byte (`JSONDocumentTextTests`).
extension JSONValue {
    /// How a document is spelled: `JSONEncoder.OutputFormatting`'s options that the framework's documents use.
    @_spi(BackendKit) public struct TextOptions: Sendable {
        /// `JSONEncoder`'s `.prettyPrinted`: a member or element a line, two spaces an indent, `" : "` after keys.
        public var prettyPrinted: Bool
        /// `JSONEncoder`'s `.sortedKeys`: object members in the order of their keys' UTF-8 bytes.
        public var sortedKeys: Bool
        /// The opposite of `JSONEncoder`'s `.withoutEscapingSlashes`: `/` written as `\/`.
        public var escapesSlashes: Bool

        /// Options; the defaults are `JSONEncoder`'s with `.sortedKeys`.
        public init(prettyPrinted: Bool = false, sortedKeys: Bool = true, escapesSlashes: Bool = true) {
            self.prettyPrinted = prettyPrinted
            self.sortedKeys = sortedKeys
            self.escapesSlashes = escapesSlashes
        }
    }

    /// The JSON text of this value.
    @_spi(BackendKit) public func text(_ options: TextOptions = TextOptions()) -> [UInt8] {
        var writer = JSONTextWriter(options: options)
        writer.write(self)
        return writer.bytes
    }

    /// A number's text as `JSONEncoder` writes a double: its shortest round-tripping form without a trailing `.0`.
    /// Non-finite doubles have no JSON form: `nil`.
    static func double(_ value: Double) -> JSONValue? {
        guard value.isFinite else { return nil }
        var text = value.description
        if text.hasSuffix(".0") { text.removeLast(2) }
        return .number(text)
    }

    /// An integer as a number.
    @_spi(BackendKit) public static func integer<T: FixedWidthInteger>(_ value: T) -> JSONValue { .number(String(value)) }

    /// An object of the members whose value is not `nil`, in the order given (the writer sorts them when asked).
    static func members(_ members: KeyValuePairs<String, JSONValue?>) -> JSONValue {
        .object(members.compactMap { member in member.value.map { (key: member.key, value: $0) } })
    }

    /// An object of a dictionary's entries.
    @_spi(BackendKit) public static func dictionary(_ dictionary: [String: JSONValue]) -> JSONValue {
        .object(dictionary.map { (key: $0.key, value: $0.value) })
    }

    /// An array of strings.
    static func strings(_ values: [String]) -> JSONValue { .array(values.map { .string($0) }) }
}

/// Appends JSON text to a byte buffer, following `JSONEncoder`'s writer for the options in ``JSONValue/TextOptions``.
private struct JSONTextWriter {
    let options: JSONValue.TextOptions
    var bytes: [UInt8] = []
    private var indent = 0

    init(options: JSONValue.TextOptions) {
        self.options = options
        bytes.reserveCapacity(1024)
    }

    mutating func write(_ value: JSONValue) {
        switch value {
        case .null: append("null")
        case .bool(let b): append(b ? "true" : "false")
        case .number(let text): append(text)
        case .string(let s): string(s)
        case .array(let elements): array(elements)
        case .object(let members): object(members)
        }
    }

    private mutating func append(_ text: String) { bytes.append(contentsOf: text.utf8) }

    private mutating func array(_ elements: [JSONValue]) {
        bytes.append(UInt8(ascii: "["))
        if options.prettyPrinted {
            bytes.append(UInt8(ascii: "\n"))
            indent += 1
        }
        for (i, element) in elements.enumerated() {
            if i > 0 { options.prettyPrinted ? append(",\n") : bytes.append(UInt8(ascii: ",")) }
            if options.prettyPrinted { writeIndent() }
            write(element)
        }
        if options.prettyPrinted {
            bytes.append(UInt8(ascii: "\n"))
            indent -= 1
            writeIndent()
        }
        bytes.append(UInt8(ascii: "]"))
    }

    private mutating func object(_ members: [(key: String, value: JSONValue)]) {
        bytes.append(UInt8(ascii: "{"))
        if options.prettyPrinted {
            bytes.append(UInt8(ascii: "\n"))
            indent += 1
            if !members.isEmpty { writeIndent() }
        }
        let ordered = options.sortedKeys ? members.sorted { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) } : members
        for (i, member) in ordered.enumerated() {
            if i > 0 {
                if options.prettyPrinted {
                    append(",\n")
                    writeIndent()
                } else {
                    bytes.append(UInt8(ascii: ","))
                }
            }
            string(member.key)
            options.prettyPrinted ? append(" : ") : bytes.append(UInt8(ascii: ":"))
            write(member.value)
        }
        if options.prettyPrinted {
            bytes.append(UInt8(ascii: "\n"))
            indent -= 1
            writeIndent()
        }
        bytes.append(UInt8(ascii: "}"))
    }

    private mutating func writeIndent() {
        for _ in 0..<indent { append("  ") }
    }

    private static let hex: [UInt8] = Array("0123456789abcdef".utf8)

    private mutating func string(_ text: String) {
        bytes.append(UInt8(ascii: "\""))
        for b in text.utf8 {
            switch b {
            case UInt8(ascii: "\""): append("\\\"")
            case UInt8(ascii: "\\"): append("\\\\")
            case UInt8(ascii: "/") where options.escapesSlashes: append("\\/")
            case 0x08: append("\\b")
            case 0x0C: append("\\f")
            case UInt8(ascii: "\n"): append("\\n")
            case UInt8(ascii: "\r"): append("\\r")
            case UInt8(ascii: "\t"): append("\\t")
            case 0x00..<0x20:
                append("\\u00")
                bytes.append(Self.hex[Int(b >> 4)])
                bytes.append(Self.hex[Int(b & 0xF)])
            default: bytes.append(b)
            }
        }
        bytes.append(UInt8(ascii: "\""))
    }
}
