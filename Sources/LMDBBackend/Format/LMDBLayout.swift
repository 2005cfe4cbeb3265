import Foundation
@_spi(BackendKit) import StoreAPI

/// Names of the named databases inside a store's environment, and the keys of the metadata database.
enum DatabaseName {
    /// Metadata: ``MetaKey`` → value.
    static let meta = "storeapi.meta"
    /// Key allocator: hierarchy root name → next primary key (8 ordered bytes).
    static let keys = "storeapi.keys"
    /// Global-ID index: 16-byte UUID → entity ID (4 bytes, big-endian) + primary key (8 ordered bytes).
    static let globalIDs = "storeapi.globalIDs"
    /// History: token (8 ordered bytes) → ``HistoryTransaction`` JSON.
    static let history = "storeapi.history"

    /// One database per hierarchy root: primary key (8 ordered bytes) → encoded record.
    static func records(_ root: String) -> String { bounded("records:" + root) }

    /// One database per uniqueness constraint: encoded constrained values → primary key (8 ordered bytes).
    static func unique(owner: String, attributes: [String]) -> String {
        bounded("unique:" + owner + ":" + attributes.joined(separator: ","))
    }

    /// Database names are keys of the main database, so they must stay under liblmdb's 511-byte key limit.
    private static func bounded(_ name: String) -> String {
        name.utf8.count <= 400 ? name : String(name.prefix(64)) + "#" + StoreDigest.sha256Hex(Array(name.utf8))
    }
}

/// Keys of the metadata database.
enum MetaKey {
    /// Identifies a store written by this framework: ``StoreFormat/magic``.
    static let magic = "magic"
    /// The store format version, a decimal string (``StoreFormat/version``).
    static let formatVersion = "formatVersion"
    /// ``StoreMetadata`` JSON.
    static let metadata = "metadata"
    /// Entity name → entity ID, JSON. IDs are assigned once and never reused, so records stay readable when the
    /// schema's entity order changes.
    static let entityIDs = "entityIDs"
    /// `"1"` when creating the store created its directory (so destroy may remove it again).
    static let createdDirectory = "createdDirectory"
}

/// The store format written into every store.
enum StoreFormat {
    static let magic = "storeapi.lmdb"
    static let version = 1
}

/// One uniqueness constraint and the database that indexes it.
struct UniqueIndex: Sendable, Hashable {
    /// The entity that declares the constraint; it spans that entity's whole sub-hierarchy.
    let owner: String
    /// The constrained attribute names.
    let attributes: [String]
    /// The index database's name.
    let databaseName: String
}

/// What reading and writing one entity's records needs, looked up once per run of records of the entity (a class,
/// so passing it around costs one reference count, not one per field).
final class LMDBEntityInfo: Sendable {
    let entity: Entity
    /// The entity's ID in record values and global-ID entries.
    let id: UInt32
    /// The name of its hierarchy's records database.
    let recordsDatabase: String
    /// The uniqueness indexes its records are entered in (own and inherited constraints).
    let indexes: [UniqueIndex]
    /// The stored attributes' types, aligned with ``Entity/attributes`` (checked for every saved value).
    let attributeTypes: [AttributeType]
    /// Whether each stored relationship is to-many, aligned with ``Entity/relationships``.
    let toMany: [Bool]
    /// The value tags each attribute accepts (bit `1 << tag`, see ``LMDBValueCodec/acceptedTags(_:)``), aligned with
    /// ``Entity/attributes``: the save checks values by the tag it writes anyway.
    let acceptedTags: [UInt16]
    /// Records of an abstract entity cannot be saved.
    let isAbstract: Bool

    init(entity: Entity, id: UInt32, recordsDatabase: String, indexes: [UniqueIndex]) {
        self.entity = entity
        self.id = id
        self.recordsDatabase = recordsDatabase
        self.indexes = indexes
        self.attributeTypes = entity.attributes.map(\.type)
        self.toMany = entity.relationships.map(\.isToMany)
        self.acceptedTags = entity.attributes.map { LMDBValueCodec.acceptedTags($0.type) }
        self.isAbstract = entity.isAbstract
    }
}

/// Everything derived from a store's metadata that reading and writing records needs: entity IDs, database names,
/// and which uniqueness indexes apply to which entity. Immutable and shared by every store open on the files.
final class LMDBLayout: Sendable {
    let metadata: StoreMetadata
    let metadataJSON: [UInt8]
    let entityIDs: [String: UInt32]
    /// Keyed by `Int`, not the stored `UInt32`: the first dictionary or set with a key type of its own costs a
    /// process one scan of every protocol conformance record in the binary (the runtime checks the key's
    /// `Hashable` conformance when it instantiates the storage type), a large share of what opening a store costs.
    /// `Int` and `String` keys are checked once by everything else. This is the rule for every backend's open path:
    /// no hashed collection keyed by a type of the backend's own (elsewhere, comments point here).
    private let entitiesByID: [Int: Entity]
    /// Entity name → the uniqueness indexes its records are entered in (own and inherited constraints).
    let indexesByEntity: [String: [UniqueIndex]]
    /// Every uniqueness index.
    let indexes: [UniqueIndex]
    private let infoByName: [String: LMDBEntityInfo]

    var schema: Schema { metadata.schema }

    /// Lays out `metadata`, keeping the IDs in `existingIDs` and giving new entities the next free ones.
    /// `storedJSON` is the metadata's stored encoding when it was read from the store (saves compare it with the
    /// stored bytes to notice changes by other processes); new metadata is encoded here.
    init(metadata: StoreMetadata, storedJSON: [UInt8]? = nil, existingIDs: [String: UInt32]) throws {
        self.metadata = metadata
        self.metadataJSON = try storedJSON ?? Array(metadata.encoded())
        var ids = existingIDs
        var next = (ids.values.max() ?? 0) + 1
        for e in metadata.schema.entities where ids[e.name] == nil {
            ids[e.name] = next
            next += 1
        }
        entityIDs = ids
        var byID: [Int: Entity] = [:]
        for e in metadata.schema.entities { if let id = ids[e.name] { byID[Int(id)] = e } }
        entitiesByID = byID

        var all: [UniqueIndex] = []
        var byEntity: [String: [UniqueIndex]] = [:]
        var declared: [String: [UniqueIndex]] = [:]
        for e in metadata.schema.entities {
            for c in e.definition.uniquenessConstraints where !c.isEmpty {
                let index = UniqueIndex(owner: e.name, attributes: c, databaseName: DatabaseName.unique(owner: e.name, attributes: c))
                declared[e.name, default: []].append(index)
                all.append(index)
            }
        }
        for e in metadata.schema.entities {
            byEntity[e.name] = ([e.name] + e.ancestorNames).flatMap { declared[$0] ?? [] }
        }
        indexes = all
        indexesByEntity = byEntity
        var infos: [String: LMDBEntityInfo] = [:]
        for e in metadata.schema.entities {
            guard let id = ids[e.name] else { continue }
            infos[e.name] = LMDBEntityInfo(entity: e, id: id, recordsDatabase: DatabaseName.records(e.rootName), indexes: byEntity[e.name] ?? [])
        }
        infoByName = infos
    }

    /// The facts of entity `name`, or ``StoreError/unknownEntity(_:)``.
    func info(_ name: String) throws -> LMDBEntityInfo {
        guard let info = infoByName[name] else { throw StoreError.unknownEntity(name) }
        return info
    }

    func entity(id: UInt32) -> Entity? { entitiesByID[Int(id)] }

    /// Every named database the schema needs.
    var databaseNames: [String] {
        [DatabaseName.meta, DatabaseName.keys, DatabaseName.globalIDs, DatabaseName.history]
            + schema.rootEntities.map { DatabaseName.records($0.name) }
            + indexes.map(\.databaseName)
    }

    /// The `maxdbs` to open an environment with: room for this schema, with headroom for schema changes.
    var suggestedMaxDatabases: Int { max(128, 2 * databaseNames.count + 32) }

    /// The entity IDs as stored JSON (`{"Author":1,…}`, as `JSONEncoder` wrote it with sorted keys), written without
    /// `JSONEncoder`, whose first use in a process cost more than creating the rest of a small store.
    func entityIDsJSON() throws -> [UInt8] {
        JSONValue.dictionary(entityIDs.mapValues { JSONValue.integer($0) }).text()
    }

    /// Reads the entity ID table (`{"Author": 1, …}`) with the framework's JSON parser, as the metadata beside it
    /// is read (JSONDecoder's first use in a process is costly; see StoreMetadata.decode).
    static func decodeEntityIDs(_ bytes: UnsafeRawBufferPointer, url: URL) throws -> [String: UInt32] {
        let json: JSONValue
        do throws(JSONSyntaxError) { json = try JSONParser.parse(ArraySlice(bytes)) } catch {
            throw StoreError.corruptStore(url, reason: "unreadable entity ID table: invalid JSON at byte \(error.offset): \(error.message)")
        }
        guard case .object(let members) = json else {
            throw StoreError.corruptStore(url, reason: "unreadable entity ID table: not a JSON object")
        }
        var ids: [String: UInt32] = [:]
        for member in members {
            guard case .number(let text) = member.value, let id = UInt32(text) else {
                throw StoreError.corruptStore(url, reason: "unreadable entity ID table: the ID of '\(member.key)' is not an entity ID")
            }
            ids[member.key] = id
        }
        return ids
    }
}
