import Foundation
import StoreAPI

/// Reads a JSON store file. Nothing in the file is trusted: a malformed, truncated or tampered file is a
/// `StoreError.corruptStore` naming what is wrong, never a crash and never a half-loaded store.
struct JSONStoreReader {
    let url: URL
    let maxFileBytes: Int

    /// Delivers the metadata, then every record, then every history transaction — the order
    /// `AtomicStoreBackend.readStore(at:_:)` promises.
    func read(_ body: (AtomicStoreElement) throws -> Void) throws {
        let document = try parseDocument()
        let metadata = try metadata(in: document)
        try body(.metadata(metadata))

        let coding = JSONRecordCoding(schema: metadata.schema, url: url)
        var seenKeys = Set<RecordKey>()  // per hierarchy root: a key names one record in the whole hierarchy
        for (index, object) in try array(named: "records", in: document).enumerated() {
            let record = try coding.record(from: object, at: index)
            let root = metadata.schema.entity(named: record.entity)?.rootName ?? record.entity
            guard seenKeys.insert(RecordKey(entity: root, primaryKey: record.primaryKey)).inserted else {
                throw StoreError.corruptStore(url, reason: "records[\(index)] reuses primary key \(record.primaryKey) of \(root)")
            }
            try body(.record(record))
        }
        var lastToken = Int64.min
        for (index, object) in try array(named: "history", in: document).enumerated() {
            // Only objects go back to JSONSerialization: on Apple platforms it raises (and crashes) on anything else.
            guard let members = object as? [String: Any] else {
                throw StoreError.corruptStore(url, reason: "history[\(index)] is not an object")
            }
            let transaction: HistoryTransaction
            do {
                // Like the metadata, a transaction is handed to its own Codable form.
                let data = try JSONSerialization.data(withJSONObject: members)
                transaction = try JSONDecoder().decode(HistoryTransaction.self, from: data)
            } catch {
                throw StoreError.corruptStore(url, reason: "history[\(index)] is not a history transaction: \(error)")
            }
            guard transaction.token > lastToken else {
                throw StoreError.corruptStore(url, reason: "history[\(index)] has token \(transaction.token), not after \(lastToken)")
            }
            lastToken = transaction.token
            try body(.history(transaction))
        }
    }

    /// The metadata, from the second line when the file is laid out as the writer lays it out (the common case,
    /// and cheap however many records follow), otherwise from the whole document.
    func readMetadata() throws -> StoreMetadata {
        if let line = try metadataLine() {
            return try StoreMetadata.decode(line, url: url)
        }
        return try metadata(in: try parseDocument())
    }

    // MARK: - The whole document

    /// Reads and parses the file, refusing one larger than `maxFileBytes` before reading it.
    private func parseDocument() throws -> [String: Any] {
        let handle = try openFile()
        defer { try? handle.close() }
        let data: Data
        do {
            let size = try handle.seekToEnd()
            guard size <= UInt64(maxFileBytes) else {
                throw StoreError.refused(url, reason: "the file is \(size) bytes; JSON stores are read whole into "
                    + "memory, and this backend reads at most \(maxFileBytes)")
            }
            try handle.seek(toOffset: 0)
            data = try handle.read(upToCount: Int(size)) ?? Data()
        } catch let error as StoreError {
            throw error
        } catch {
            throw StoreError.io(url, operation: "read", reason: error.localizedDescription)
        }
        let parsed: Any
        do { parsed = try JSONSerialization.jsonObject(with: data) } catch {
            let detail = (error as NSError).userInfo[NSDebugDescriptionErrorKey] as? String ?? "\(error)"
            throw StoreError.corruptStore(url, reason: "not valid JSON (damaged or truncated?): \(detail)")
        }
        guard let document = parsed as? [String: Any], document["format"] as? String == JSONStoreFormat.formatName else {
            throw StoreError.corruptStore(url, reason: "a JSON document, but not a store (no \"format\": \"\(JSONStoreFormat.formatName)\")")
        }
        guard let version = document["formatVersion"] as? Int, version >= 1 else {
            throw StoreError.corruptStore(url, reason: "\"formatVersion\" is missing or not a positive integer")
        }
        guard version <= JSONStoreFormat.formatVersion else {
            throw StoreError.unsupported("\(url.path): JSON store format \(version) is newer than this backend reads (\(JSONStoreFormat.formatVersion))")
        }
        return document
    }

    private func metadata(in document: [String: Any]) throws -> StoreMetadata {
        // StoreMetadata has its own Codable form; re-encoding the parsed object is the simplest way to hand it over.
        guard let object = document["metadata"] as? [String: Any], let data = try? JSONSerialization.data(withJSONObject: object) else {
            throw StoreError.corruptStore(url, reason: "\"metadata\" is missing or not an object")
        }
        return try StoreMetadata.decode(data, url: url)
    }

    private func array(named name: String, in document: [String: Any]) throws -> [Any] {
        guard let array = document[name] as? [Any] else {
            throw StoreError.corruptStore(url, reason: "\"\(name)\" is missing or not an array")
        }
        return array
    }

    // MARK: - The header lines

    /// The bytes of the metadata object on the second line, or `nil` when the first two lines are not what the
    /// writer writes (the file was re-indented, say) or are longer than `JSONStoreFormat.maxHeaderBytes`.
    private func metadataLine() throws -> Data? {
        let handle = try openFile()
        defer { try? handle.close() }
        var bytes = Data()
        var newlines = 0
        while newlines < 2 && bytes.count < JSONStoreFormat.maxHeaderBytes {
            guard let chunk = try? handle.read(upToCount: 64 << 10), !chunk.isEmpty else { break }
            newlines += chunk.reduce(0) { $1 == UInt8(ascii: "\n") ? $0 + 1 : $0 }
            bytes.append(chunk)
        }
        let lines = bytes.split(separator: UInt8(ascii: "\n"), maxSplits: 2, omittingEmptySubsequences: false)
        guard lines.count == 3, lines[0].elementsEqual(JSONStoreFormat.headerLine.utf8) else { return nil }
        let line = lines[1]
        let prefix = JSONStoreFormat.metadataPrefix.utf8
        guard line.starts(with: prefix), line.last == UInt8(ascii: ",") else { return nil }
        return Data(line.dropFirst(prefix.count).dropLast())
    }

    private func openFile() throws -> FileHandle {
        guard FileManager.default.fileExists(atPath: url.path) else { throw StoreError.storeNotFound(url) }
        do { return try FileHandle(forReadingFrom: url) } catch {
            throw StoreError.io(url, operation: "open", reason: error.localizedDescription)
        }
    }
}
