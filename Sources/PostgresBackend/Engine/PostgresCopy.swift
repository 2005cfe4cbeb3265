import CLibPQ
import Foundation
import StoreAPI

/// The rows of one `COPY … FROM STDIN` in PostgreSQL's text format, buffered and sent to the server in chunks.
///
/// Text format: fields separated by a tab, rows ended by a newline, `\N` for NULL, and a backslash, tab, newline or
/// carriage return inside a value escaped with a backslash. Values are the same text forms the statements bind as
/// parameters (``PostgresValueCodec``), so a row copied in reads back exactly as a row inserted.
struct PostgresCopyIn {
    /// Bytes gathered before they are handed to libpq: large enough that a call moves many rows, small enough to
    /// stay in the cache.
    static let chunk = 1 << 18

    fileprivate let connection: PostgresConnection
    fileprivate var buffer: [UInt8] = []
    private var fieldsInRow = 0

    fileprivate init(_ connection: PostgresConnection) {
        self.connection = connection
        buffer.reserveCapacity(Self.chunk + 4096)
    }

    /// Appends one field (`nil` is NULL), escaped.
    mutating func field(_ value: String?) {
        if fieldsInRow > 0 { buffer.append(UInt8(ascii: "\t")) }
        fieldsInRow += 1
        guard var value else {
            buffer.append(UInt8(ascii: "\\"))
            buffer.append(UInt8(ascii: "N"))
            return
        }
        value.withUTF8 { bytes in
            for b in bytes {
                switch b {
                case UInt8(ascii: "\\"): buffer.append(b); buffer.append(b)
                case UInt8(ascii: "\t"): buffer.append(UInt8(ascii: "\\")); buffer.append(UInt8(ascii: "t"))
                case UInt8(ascii: "\n"): buffer.append(UInt8(ascii: "\\")); buffer.append(UInt8(ascii: "n"))
                case UInt8(ascii: "\r"): buffer.append(UInt8(ascii: "\\")); buffer.append(UInt8(ascii: "r"))
                default: buffer.append(b)
                }
            }
        }
    }

    /// Appends an attribute value as ``PostgresValueCodec/parameter(_:type:entity:property:)`` writes it, the
    /// `bytea` of strings, URIs and binary values in hex straight from their bytes (no intermediate text is made
    /// per value: these are most of a bulk load's bytes).
    mutating func field(_ value: StoreValue, type: AttributeType, entity: String, property: String) throws {
        switch (type, value) {
        case (.string, .string(var s)):
            s.withUTF8 { hexField($0) }
        case (.uri, .uri(let u)):
            var s = u.absoluteString
            s.withUTF8 { hexField($0) }
        case (.binary, .binary(let d)), (.transformable, .binary(let d)):
            d.withUnsafeBytes { hexField($0.bindMemory(to: UInt8.self)) }
        case (.integer64, .integer64(let v)):
            field(v)
        case (.integer32, .integer32(let v)):
            field(Int64(v))
        case (.integer16, .integer16(let v)):
            field(Int64(v))
        default:
            // Numbers, dates, decimals, UUIDs and Booleans: short texts with nothing to escape.
            field(try PostgresValueCodec.parameter(value, type: type, entity: entity, property: property))
        }
    }

    private static let hexDigits: [UInt8] = Array("0123456789abcdef".utf8)

    /// A `bytea` field: `\\x` in the stream (`\x` with its backslash escaped, as the text format wants) and two hex
    /// digits per byte.
    private mutating func hexField(_ bytes: UnsafeBufferPointer<UInt8>) {
        if fieldsInRow > 0 { buffer.append(UInt8(ascii: "\t")) }
        fieldsInRow += 1
        buffer.append(UInt8(ascii: "\\"))
        buffer.append(UInt8(ascii: "\\"))
        buffer.append(UInt8(ascii: "x"))
        let start = buffer.count
        buffer.append(contentsOf: repeatElement(0, count: bytes.count * 2))
        Self.hexDigits.withUnsafeBufferPointer { digits in
            buffer.withUnsafeMutableBufferPointer { out in
                var i = start
                for b in bytes {
                    out[i] = digits[Int(b >> 4)]
                    out[i + 1] = digits[Int(b & 0xF)]
                    i += 2
                }
            }
        }
    }

    /// Appends an integer field (no escaping needed).
    mutating func field(_ value: Int64) {
        if fieldsInRow > 0 { buffer.append(UInt8(ascii: "\t")) }
        fieldsInRow += 1
        var text = String(value)
        text.withUTF8 { buffer.append(contentsOf: $0) }
    }

    /// Ends the row; sends the buffer when it is full.
    mutating func endRow() throws {
        buffer.append(UInt8(ascii: "\n"))
        fieldsInRow = 0
        if buffer.count >= Self.chunk { try flush() }
    }

    fileprivate mutating func flush() throws {
        guard !buffer.isEmpty else { return }
        try connection.putCopyData(buffer)
        buffer.removeAll(keepingCapacity: true)
    }
}

extension PostgresConnection {
    /// Runs `sql`, a `COPY … FROM STDIN` (text format), with the rows `body` writes. In the caller's transaction:
    /// when `body` throws, the copy is abandoned and the server discards every row of it; when the server refuses a
    /// row (a duplicate key, a bad value), the copy fails as a statement would. Returns the rows copied.
    @discardableResult
    func copyIn(_ sql: String, _ body: (inout PostgresCopyIn) throws -> Void) throws -> Int {
        try startStatement(sql, expecting: PGRES_COPY_IN, "starting a COPY")
        let c = try handle()
        var copy = PostgresCopyIn(self)
        do {
            try body(&copy)
            try copy.flush()
        } catch {
            // Abandons the COPY: the server fails the statement, and the transaction with it.
            if !isBroken, PQputCopyEnd(c, "abandoned by the client") == 1 {
                try? flush(c, "ending a COPY")
                if !isBroken { try? discardResults(c, "ending a COPY") }
            }
            if PQstatus(c) != CONNECTION_OK { markBroken() }
            throw error
        }
        guard PQputCopyEnd(c, nil) == 1 else { throw connectionFailure("ending a COPY") }
        try flush(c, "ending a COPY")
        let result = try collectResults(c, "ending a COPY")
        return result.affected
    }

    /// Sends `bytes` of a COPY in progress, waiting (at most ``answerTimeout``) until the server took them, so that
    /// the client holds one buffer of rows at a time.
    func putCopyData(_ bytes: [UInt8]) throws {
        let c = try handle()
        let sent = bytes.withUnsafeBufferPointer { b in
            b.baseAddress.map { p in
                p.withMemoryRebound(to: CChar.self, capacity: b.count) { PQputCopyData(c, $0, Int32(b.count)) }
            } ?? 1
        }
        guard sent == 1 else { throw connectionFailure("sending COPY data") }
        try flush(c, "sending COPY data")
    }
}
