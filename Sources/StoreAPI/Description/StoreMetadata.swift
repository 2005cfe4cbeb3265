import Foundation
import Synchronization

/// What a store carries about itself, readable without opening it (``StoreBackend/readMetadata(at:)``): its type,
/// identity, the schema it was written with and custom keys.
///
/// Backends persist the whole value as its JSON encoding (``encoded()`` / ``decode(_:url:)``), so a store is
/// self-describing: it can be inspected and converted without the schema file.
///
/// Equality compares what a store says about itself — type, UUID, schema, configuration, hashes, custom keys, sync
/// options, format — and ignores ``primaryKeyCounters``, which is allocation bookkeeping.
public struct StoreMetadata: Sendable, Hashable, Codable {
    /// The version of this metadata layout that new stores get: 2, whose ``versionHashes`` are Core Data's
    /// (``Entity/versionHash``).
    public static let currentFormatVersion = 2
    /// The last layout whose ``versionHashes`` are the framework's first, legacy hash: stores written before the
    /// hashes became Core Data's. They are still read, and checked against a schema with that hash.
    public static let legacyVersionHashFormatVersion = 1

    /// The type identifier of the backend that wrote the store. Operations that change the type update it.
    public var storeType: String
    /// The store's UUID. Preserved by every store operation.
    public var storeUUID: UUID
    /// The schema the store was written with (the whole schema, whatever the configuration).
    public var schema: Schema
    /// The configuration the store holds, `nil` for every entity.
    public var configuration: String?
    /// Entity → version hash, as written. Compared with the schema a store is opened with
    /// (``mismatchedEntities(_:)``): Core Data's hashes in base64 (``Entity/versionHash``), or in a store of
    /// ``legacyVersionHashFormatVersion`` the legacy hex hashes.
    public var versionHashes: [String: String]
    /// Application-defined keys.
    public var custom: [String: MetadataValue]
    /// The sync options of the description the store was last written with.
    public var syncOptions: SyncOptions?
    /// The metadata layout version: ``currentFormatVersion`` for new stores, ``legacyVersionHashFormatVersion``
    /// for stores written before version hashes became Core Data's. It decides which hash ``versionHashes`` holds.
    public var formatVersion: Int
    /// Hierarchy root → the next primary key to hand out, for stores that keep no allocator of their own: atomic
    /// stores write it with every save so a key is never reused after its record was deleted. Incremental
    /// backends keep their allocator in their own tables and leave this `nil`.
    public var primaryKeyCounters: [String: Int64]?

    /// Creates metadata for a new store.
    public init(
        storeType: String, storeUUID: UUID = UUID(), schema: Schema, configuration: String? = nil,
        custom: [String: MetadataValue] = [:], syncOptions: SyncOptions? = nil
    ) {
        self.storeType = storeType
        self.storeUUID = storeUUID
        self.schema = schema
        self.configuration = configuration
        self.versionHashes = schema.versionHashes
        self.custom = custom
        self.syncOptions = syncOptions
        self.formatVersion = Self.currentFormatVersion
    }

    public static func == (a: StoreMetadata, b: StoreMetadata) -> Bool {
        a.storeType == b.storeType && a.storeUUID == b.storeUUID && a.schema == b.schema && a.configuration == b.configuration
            && a.versionHashes == b.versionHashes && a.custom == b.custom && a.syncOptions == b.syncOptions
            && a.formatVersion == b.formatVersion
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(storeUUID)
        hasher.combine(storeType)
        hasher.combine(versionHashes)
    }

    /// Whether ``versionHashes`` hold the legacy hash (a store written before version hashes became Core Data's).
    public var hasLegacyVersionHashes: Bool { formatVersion <= Self.legacyVersionHashFormatVersion }

    /// The version hash of `entity` in the algorithm this metadata's ``versionHashes`` were written with: its
    /// ``Entity/versionHash``, or for a legacy store the legacy hash.
    public func versionHash(of entity: Entity) -> String {
        hasLegacyVersionHashes ? LegacyVersionHash.of(entity) : entity.versionHash
    }

    /// The names of those of `entities` whose version hash in the store differs from theirs (a missing one
    /// counts), sorted: the store cannot be opened with a schema that has them.
    public func mismatchedEntities(_ entities: [Entity]) -> [String] {
        entities.filter { versionHashes[$0.name] != versionHash(of: $0) }.map(\.name).sorted()
    }

    /// The entities whose version hash in the store differs from `schema`'s (missing on either side counts).
    public func incompatibleEntities(with schema: Schema) -> [String] {
        let known = Set(schema.entities.map(\.name))
        let extra = versionHashes.keys.filter { !known.contains($0) }
        return (mismatchedEntities(schema.entities) + extra).sorted()
    }

    /// The JSON encoding backends store: the Codable conformance's, in `JSONEncoder`'s text with sorted keys.
    public func encoded() throws -> Data {
        if let json = jsonValue { return Data(json.text(.init(sortedKeys: true, escapesSlashes: true))) }
        // Only a value JSON cannot hold comes here; JSONEncoder says which.
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        do { return try encoder.encode(self) } catch {
            throw StoreError.io(nil, operation: "encoding metadata", reason: "\(error)")
        }
    }

    /// Decodes stored metadata; `url` names the store in the error.
    ///
    /// Reads what ``encoded()`` writes (and what the Codable conformance reads) with the framework's own JSON
    /// parser: every store open comes here, and `JSONDecoder`'s first use in a process cost more than the rest of
    /// opening a store.
    public static func decode(_ data: Data, url: URL) throws -> StoreMetadata {
        if let kept = DecodedMetadata.shared.kept(for: data) { return kept }
        let metadata: StoreMetadata
        do {
            let json = try JSONParser.parse(ArraySlice(data))
            metadata = try StoreMetadata(json: json)
        } catch let e as SchemaError {
            throw StoreError.corruptStore(url, reason: "stored schema is invalid: \(e)")
        } catch let e as JSONSyntaxError {
            throw StoreError.corruptStore(url, reason: "unreadable metadata: invalid JSON at byte \(e.offset): \(e.message)")
        } catch {
            throw StoreError.corruptStore(url, reason: "unreadable metadata: \(error)")
        }
        // A later layout may hash differently: comparing its hashes would call a matching schema incompatible.
        guard (1...currentFormatVersion).contains(metadata.formatVersion) else {
            throw StoreError.corruptStore(url, reason: "metadata format version \(metadata.formatVersion) is not one this "
                + "version reads (1 to \(currentFormatVersion)); was the store written by a newer version?")
        }
        DecodedMetadata.shared.keep(metadata, for: data)
        return metadata
    }
}

/// The metadata this process last decoded, by its bytes: a command reads a store's metadata and then opens the store,
/// which reads it again, and parsing and validating its schema twice cost more than the records of a small
/// conversion. Decoding is a pure function of the bytes, compared whole; failures are not kept, so each read reports
/// its own (naming its file).
private final class DecodedMetadata: Sendable {
    static let shared = DecodedMetadata()
    /// Stores a process works with at once are few: the oldest entry goes first.
    private static let capacity = 4
    private let entries = Mutex<[(bytes: Data, metadata: StoreMetadata)]>([])

    func kept(for bytes: Data) -> StoreMetadata? {
        entries.withLock { $0.first { $0.bytes == bytes }?.metadata }
    }

    func keep(_ metadata: StoreMetadata, for bytes: Data) {
        // A copy of its own: the caller's bytes may be a view of a mapped file that goes away.
        let own = Data([UInt8](bytes))
        entries.withLock { entries in
            entries.removeAll { $0.bytes == own }
            if entries.count >= Self.capacity { entries.removeFirst() }
            entries.append((own, metadata))
        }
    }
}

/// A custom metadata value: the JSON data model (strings, numbers, booleans, arrays, dictionaries, null).
///
/// JSON does not tell `2` from `2.0`: numbers that are whole and fit `Int64` read back as ``MetadataValue/integer(_:)``, all others as
/// ``MetadataValue/double(_:)``. Keep whole-number doubles as strings if the distinction matters to you.
public enum MetadataValue: Sendable, Hashable, Codable {
    case string(String)
    case integer(Int64)
    case double(Double)
    case bool(Bool)
    case array([MetadataValue])
    case dictionary([String: MetadataValue])
    case null

    public init(from decoder: Decoder) throws {
        let c = try decoder.singleValueContainer()
        if c.decodeNil() { self = .null }
        else if let b = try? c.decode(Bool.self) { self = .bool(b) }
        else if let i = try? c.decode(Int64.self) { self = .integer(i) }
        else if let d = try? c.decode(Double.self) { self = .double(d) }
        else if let s = try? c.decode(String.self) { self = .string(s) }
        else if let a = try? c.decode([MetadataValue].self) { self = .array(a) }
        else { self = .dictionary(try c.decode([String: MetadataValue].self)) }
    }

    public func encode(to encoder: Encoder) throws {
        var c = encoder.singleValueContainer()
        switch self {
        case .string(let s): try c.encode(s)
        case .integer(let i): try c.encode(i)
        case .double(let d): try c.encode(d)
        case .bool(let b): try c.encode(b)
        case .array(let a): try c.encode(a)
        case .dictionary(let d): try c.encode(d)
        case .null: try c.encodeNil()
        }
    }
}
