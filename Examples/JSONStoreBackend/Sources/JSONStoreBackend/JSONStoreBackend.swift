import Foundation
@_spi(BackendKit) import StoreAPI

/// The JSON store type (`json`): a whole store as one JSON document — Core Data's binary store, but JSON.
///
/// An atomic backend: it only reads and writes whole files (see ``JSONStoreFormat``). The framework does the
/// rest — it loads the records into memory and answers fetches, takes the writer lock, writes every save to a
/// staging file that it fsyncs and renames over the store, and refuses to overwrite a file that changed on disk.
///
/// Register it like any backend:
///
/// ```swift
/// BackendRegistry.shared.register(JSONStoreBackend())
/// ```
public struct JSONStoreBackend: AtomicStoreBackend {
    /// The type identifier, `json`.
    public static let typeIdentifier = "json"

    /// The largest file this backend reads or writes. Files are parsed whole, so this bounds the memory an open
    /// takes (several times the file's size, as Foundation objects).
    public let maxFileBytes: Int

    /// Creates the backend; `maxFileBytes` defaults to 1 GiB.
    public init(maxFileBytes: Int = JSONStoreFormat.defaultMaxFileBytes) {
        self.maxFileBytes = maxFileBytes
    }

    /// `json`.
    public var typeIdentifier: String { Self.typeIdentifier }

    /// New stores named `*.json` get this type.
    public var fileExtensions: [String] { ["json"] }

    /// Only what is true: files that survive the process (`persistent`); saves that fail leave the file as it was,
    /// because the framework stages them (`transactions`); history and ordered to-many relationships are stored
    /// (`history`, `orderedRelationships`); the inherited file copy is the fast same-type copy (`fastCopy`); and
    /// the whole store is in memory while open (`atomic`). Not `multiProcess`: a second writer waits on the lock.
    public var capabilities: BackendCapabilities {
        [.persistent, .transactions, .history, .orderedRelationships, .fastCopy, .atomic]
    }

    /// Three answers, and never a throw or a write:
    /// - `.store` when the file opens with the `format` member (read from the first few kilobytes only);
    /// - `.foreign("JSON document, but not a store")` for other JSON, so an error can say what the file is;
    /// - `.none` for everything else: a missing path, a directory, an empty or unreadable file, other formats.
    public func sniff(_ url: URL) -> SniffResult {
        // Regular, non-empty files only (`stat` follows symlinks): reading a FIFO or a device could block forever.
        var info = stat()
        guard stat(url.path, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG, info.st_size > 0,
              let handle = try? FileHandle(forReadingFrom: url)
        else { return .none }
        defer { try? handle.close() }
        guard let prefix = try? handle.read(upToCount: JSONStoreFormat.sniffBytes) else { return .none }
        if JSONStoreFormat.hasMagic(prefix) { return .store }
        guard JSONStoreFormat.startsLikeJSON(prefix) else { return .none }
        // Small files are checked properly; for big ones the first byte has to do, since sniffing must stay cheap
        // and `.foreign` only changes the wording of an error.
        if info.st_size <= JSONStoreFormat.sniffParseBytes {
            let rest = (try? handle.readToEnd()).flatMap { $0 } ?? Data()  // nil at the end of the file
            // The kit's strict parser: it never raises (JSONSerialization does on Apple platforms for some input)
            // and limits nesting, so a hostile file cannot exhaust the stack.
            guard (try? JSONParser.parse([UInt8](prefix + rest)[...])) != nil else { return .none }
        }
        return .foreign("JSON document, but not a store")
    }

    /// Parses the file (at most ``maxFileBytes``) and delivers metadata, records, then history.
    public func readStore(at url: URL, _ body: (AtomicStoreElement) throws -> Void) throws {
        try JSONStoreReader(url: url, maxFileBytes: maxFileBytes).read(body)
    }

    /// Writes the whole store to `url`, a fresh staging path (the framework fsyncs and renames it).
    public func writeStore(_ contents: any AtomicStoreContents, to url: URL) throws {
        try JSONStoreWriter(url: url, maxFileBytes: maxFileBytes).write(contents)
    }

    /// Overrides the default (which parses the whole store) to read only the metadata line.
    public func readMetadata(at url: URL) throws -> StoreMetadata {
        try JSONStoreReader(url: url, maxFileBytes: maxFileBytes).readMetadata()
    }

    /// Reads the whole file as an open would, and reports what is wrong with it (nothing when it loads).
    public func checkIntegrity(at url: URL) throws -> [String] {
        do {
            try readStore(at: url) { _ in }
        } catch let error as StoreError {
            guard case .corruptStore = error else { throw error }
            return [error.description]
        }
        return []
    }
}
