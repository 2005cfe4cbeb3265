import Foundation
import StoreAPI

/// The XML store type (`xml`): an atomic store in Core Data's XML store layout (see ``XMLStoreFormat``).
///
/// The whole file is read into memory when the store opens and rewritten on every save — staged, fsynced and
/// renamed over the old file by the framework — so queries run in memory and a crash never leaves a partial file.
/// Files are read and written by streaming through libxml2 (`xmlTextReader`, `xmlTextWriter`); no document tree
/// is ever built. Reading is hardened: no entity substitution, no DTD or network loading, a DOCTYPE that declares
/// entities refused, libxml2's size limits left on, nesting capped at ``XMLStoreFormat/maxDepth``, an element with
/// more than 256 attributes refused before libxml2 sees it (its duplicate check is quadratic), and every problem
/// reported as ``StoreError/corruptStore(_:reason:)`` with its line number.
///
/// Stores written by Core Data (`NSXMLStoreType`) open too: their schema, primary keys and global IDs are inferred
/// from the file, the same way every time (entities from object types, attribute types from `type`, relationship
/// cardinality from `min/max`, inverses where the data pairs them unambiguously, primary keys from `z` ids, global
/// IDs derived from the store UUID and the id); saving rewrites them in this framework's layout.
///
/// ```swift
/// let registry = BackendRegistry()
/// registry.register(XMLStoreBackend())
/// ```
public struct XMLStoreBackend: AtomicStoreBackend {
    /// The type identifier, `xml`.
    public static let typeIdentifier = "xml"

    /// Creates the backend. It holds no state.
    public init() {}

    /// `xml`.
    public var typeIdentifier: String { Self.typeIdentifier }
    /// `xml` (what Core Data's XML stores usually use) and `storexml`.
    public var fileExtensions: [String] { ["xml", "storexml"] }
    /// Persistent, transactional (a failed save leaves the file as it was), with history, ordered relationships,
    /// a file-copy fast path, and atomic (the whole store lives in memory while open).
    public var capabilities: BackendCapabilities {
        [.persistent, .transactions, .history, .orderedRelationships, .fastCopy, .atomic]
    }

    /// Reads at most ``XMLStoreFormat/sniffBytes`` bytes: a `database` root element is a store (ours or Core
    /// Data's); other well-formed XML is ``SniffResult/foreign(_:)``; anything else, ``SniffResult/none``.
    public func sniff(_ url: URL) -> SniffResult {
        var st = stat()
        guard stat(url.path, &st) == 0, (st.st_mode & S_IFMT) == S_IFREG, st.st_size > 0,
              let handle = try? FileHandle(forReadingFrom: url)
        else { return .none }
        defer { try? handle.close() }
        guard let prefix = try? handle.read(upToCount: XMLStoreFormat.sniffBytes), !prefix.isEmpty else { return .none }
        // Quick refusal of binary files: XML starts with `<`, after an optional byte-order mark and whitespace
        // (UTF-16 files start with a BOM or a NUL byte next to the `<`).
        guard let first = prefix.first(where: { !($0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09) }),
              first == UInt8(ascii: "<") || first == 0xEF || first == 0xFE || first == 0xFF || first == 0x00
        else { return .none }
        guard let reader = try? LibXMLReader(bytes: prefix, url: url),
              let found = try? reader.moveToRoot(), found
        else { return .none }
        return reader.name == "database" ? .store : .foreign("XML document, but not a store")
    }

    /// Streams the file: metadata, then records, then history. A Core Data file's records come after the whole
    /// file was read, since its schema is inferred from them.
    public func readStore(at url: URL, _ body: (AtomicStoreElement) throws -> Void) throws {
        try XMLStoreReader(url: url).read(body)
    }

    /// Every record's entity and key, without decoding values (their elements are skipped).
    public func readPrimaryKeys(at url: URL, _ body: (_ entity: String, _ primaryKey: Int64) throws -> Void) throws {
        try XMLStoreReader(url: url).readKeys(body)
    }

    /// Every history transaction, without decoding records (their elements are skipped).
    public func readHistory(at url: URL, _ body: (HistoryTransaction) throws -> Void) throws {
        try XMLStoreReader(url: url).readHistory(body)
    }

    /// Writes the whole store to `url` (a fresh staging path) in the layout of ``XMLStoreFormat``.
    public func writeStore(_ contents: any AtomicStoreContents, to url: URL) throws {
        try XMLStoreWriter(url: url).write(contents)
    }

    /// Reads the whole file as a load would and reports what is wrong with it (empty when it loads).
    public func checkIntegrity(at url: URL) throws -> [String] {
        guard FileManager.default.fileExists(atPath: url.path) else { throw StoreError.storeNotFound(url) }
        do {
            try readStore(at: url) { _ in }
        } catch let error as StoreError {
            if case .corruptStore = error { return [error.description] }
            throw error
        }
        return []
    }
}
