import Foundation
import StoreAPI

/// Writes a whole store as one JSON document, one record at a time, into the staging file the framework handed
/// out. The framework fsyncs and renames it over the store afterwards; if this throws, it deletes it instead, so
/// the writer never has to clean up after itself.
struct JSONStoreWriter {
    let url: URL
    let maxFileBytes: Int

    func write(_ contents: any AtomicStoreContents) throws {
        guard FileManager.default.createFile(atPath: url.path, contents: nil),
              let handle = try? FileHandle(forWritingTo: url)
        else { throw StoreError.io(url, operation: "create", reason: "cannot create the file") }
        defer { try? handle.close() }
        var output = BufferedOutput(handle: handle, url: url, limit: maxFileBytes)
        let schema = contents.metadata.schema

        try output.append(JSONStoreFormat.headerLine + "\n" + JSONStoreFormat.metadataPrefix)
        try output.append(try contents.metadata.encoded())  // one line: JSONEncoder escapes newlines in strings
        try output.append(",\n\"records\":[")
        var separator = "\n"
        try contents.forEachRecord { record in
            guard let entity = schema.entity(named: record.entity) else { throw StoreError.unknownEntity(record.entity) }
            try output.append(separator)
            try output.append(try Self.serialize(JSONRecordCoding.object(for: record, in: entity), url: url))
            separator = ",\n"
        }
        try output.append("\n],\n\"history\":[")
        separator = "\n"
        try contents.forEachHistoryTransaction { transaction in
            try output.append(separator)
            try output.append(try Self.serialize(transaction, url: url))
            separator = ",\n"
        }
        try output.append("\n]}\n")
        try output.flush()
    }

    // Sorted keys make the output deterministic: the same store always gives the same bytes.

    private static func serialize(_ record: [String: Any], url: URL) throws -> Data {
        do { return try JSONSerialization.data(withJSONObject: record, options: [.sortedKeys, .withoutEscapingSlashes]) } catch {
            throw StoreError.io(url, operation: "encoding a record", reason: "\(error)")
        }
    }

    /// History transactions in their Codable form (JSON, with sorted keys; `HistoryTransaction.encoded()` is the
    /// framework's binary storage encoding, not meant to be read by people).
    private static func serialize(_ transaction: HistoryTransaction, url: URL) throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        do { return try encoder.encode(transaction) } catch {
            throw StoreError.io(url, operation: "encoding history", reason: "\(error)")
        }
    }
}

/// Collects small writes into large ones, and refuses to grow the file past what the reader accepts: a save that
/// would make the store unreadable must fail now (leaving the old file in place), not on the next open.
private struct BufferedOutput {
    let handle: FileHandle
    let url: URL
    let limit: Int
    private var buffer = Data()
    private var written = 0

    init(handle: FileHandle, url: URL, limit: Int) {
        self.handle = handle
        self.url = url
        self.limit = limit
    }

    mutating func append(_ text: String) throws { try append(Data(text.utf8)) }

    mutating func append(_ json: Data) throws {
        let data = Self.escapingByteOrderMarks(json)
        written += data.count
        guard written <= limit else {
            throw StoreError.refused(url, reason: "the store would exceed \(limit) bytes, the most this backend reads back")
        }
        buffer.append(data)
        if buffer.count >= 1 << 20 { try flush() }
    }

    /// Foundation's `JSONSerialization` on Linux drops a U+FEFF at the start of a string when it reads one, as if it
    /// were a byte-order mark; written as the escape `\ufeff`, it survives. In JSON text the character can only be
    /// inside a string, and its UTF-8 bytes cannot occur inside another character's, so replacing them is safe.
    private static func escapingByteOrderMarks(_ json: Data) -> Data {
        let bom = Data([0xEF, 0xBB, 0xBF])
        guard json.range(of: bom) != nil else { return json }
        var escaped = Data()
        var rest = json[...]
        while let found = rest.range(of: bom) {
            escaped.append(rest[..<found.lowerBound])
            escaped.append(contentsOf: #"\ufeff"#.utf8)
            rest = rest[found.upperBound...]
        }
        escaped.append(rest)
        return escaped
    }

    mutating func flush() throws {
        do { try handle.write(contentsOf: buffer) } catch {
            throw StoreError.io(url, operation: "write", reason: error.localizedDescription)
        }
        buffer.removeAll(keepingCapacity: true)
    }
}
