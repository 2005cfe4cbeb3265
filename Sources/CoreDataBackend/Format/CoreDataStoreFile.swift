import Foundation
@_spi(BackendKit) import StoreAPI

/// One row of `Z_PRIMARYKEY`: an entity's number, its (possibly stale) name, its parent's number and the last
/// primary key its table handed out.
@_spi(BackendKit) public struct CoreDataPrimaryKeyRow: Sendable, Hashable {
    /// `Z_ENT`.
    public var entityNumber: Int64
    /// `Z_NAME`: the entity's name when the row was written; after a rename a migrated store keeps the old one, so
    /// map entities by number (``CoreDataModel/entityNumbers()``), never by this.
    public var name: String
    /// `Z_SUPER`: the parent's `Z_ENT`, 0 for a root.
    public var superNumber: Int64
    /// `Z_MAX`: the last `Z_PK` allocated (advanced on the root entity's row only).
    public var maxPrimaryKey: Int64

    /// Creates a row.
    public init(entityNumber: Int64, name: String, superNumber: Int64, maxPrimaryKey: Int64) {
        self.entityNumber = entityNumber
        self.name = name
        self.superNumber = superNumber
        self.maxPrimaryKey = maxPrimaryKey
    }
}

/// The bookkeeping of a Core Data SQLite store, read without changing any of its files: `Z_METADATA` (store UUID and
/// metadata plist), `Z_PRIMARYKEY` and `Z_MODELCACHE`.
///
/// Opening is read-only in every case (see the notes on how a `-wal` without its `-shm` is read); errors are
/// `StoreError` values naming the file and the table at fault.
@_spi(BackendKit) public struct CoreDataStoreFile: Sendable {
    /// The store's main file.
    public let url: URL
    /// `Z_METADATA.Z_UUID`: the store's UUID as Core Data wrote it (uppercase text).
    public let uuid: String
    /// `Z_METADATA.Z_PLIST`, decoded.
    public let metadata: CoreDataMetadata
    /// `Z_PRIMARYKEY`, ordered by `Z_ENT` (history entities, `Z_ENT` ≥ 16000, included).
    public let primaryKeys: [CoreDataPrimaryKeyRow]
    /// `Z_MODELCACHE.Z_CONTENT` as stored (compressed), or `nil` for stores older than the cache (before 2012).
    public let modelCacheBlob: [UInt8]?
    /// The tables of the store.
    public let tableNames: Set<String>

    /// Whether `url`'s tables are Core Data's: `Z_METADATA` and `Z_PRIMARYKEY` exist.
    public static func isCoreDataStore(tables: Set<String>) -> Bool {
        tables.contains("Z_METADATA") && tables.contains("Z_PRIMARYKEY")
    }

    /// Reads the bookkeeping of the store at `url`.
    ///
    /// - Throws: `StoreError.storeNotFound`, `StoreError.unrecognizedStore` for a
    ///   SQLite file without Core Data's tables, `StoreError.corruptStore` for a table or plist
    ///   that is not what the format says, `StoreError.io` when SQLite cannot open it.
    public static func read(at url: URL) throws(StoreError) -> CoreDataStoreFile {
        try read(try ReadOnlyDatabase.open(url))
    }

    /// Reads the bookkeeping through `db`, a connection the caller goes on reading the records with: the same
    /// snapshot, and no second open of the file (for a `-wal` without its `-shm`, no second private copy).
    static func read(_ db: ReadOnlyDatabase) throws(StoreError) -> CoreDataStoreFile {
        let url = db.url
        let tables = try db.tableNames()
        guard isCoreDataStore(tables: tables) else {
            throw .unrecognizedStore(url, reason: "a SQLite file without Core Data's Z_METADATA and Z_PRIMARYKEY tables")
        }
        let meta = try db.rows("SELECT Z_UUID, Z_PLIST FROM Z_METADATA WHERE Z_VERSION = 1")
        guard meta.count == 1, let row = meta.first, row.count == 2 else {
            throw .corruptStore(url, reason: "Z_METADATA has \(meta.count) rows with Z_VERSION = 1, expected 1")
        }
        guard let uuid = row[0].text else { throw .corruptStore(url, reason: "Z_METADATA.Z_UUID is not text") }
        guard let plist = row[1].bytes else { throw .corruptStore(url, reason: "Z_METADATA.Z_PLIST is empty") }
        let metadata: CoreDataMetadata
        do throws(CoreDataFormatError) {
            metadata = try CoreDataMetadata(bytes: plist)
        } catch {
            throw .corruptStore(url, reason: error.description)
        }
        var keys: [CoreDataPrimaryKeyRow] = []
        for r in try db.rows("SELECT Z_ENT, Z_NAME, Z_SUPER, Z_MAX FROM Z_PRIMARYKEY ORDER BY Z_ENT") {
            guard r.count == 4, let ent = r[0].int, let name = r[1].text else {
                throw .corruptStore(url, reason: "Z_PRIMARYKEY has a row without an integer Z_ENT and a text Z_NAME")
            }
            keys.append(CoreDataPrimaryKeyRow(
                entityNumber: ent, name: name, superNumber: r[2].int ?? 0, maxPrimaryKey: r[3].int ?? 0))
        }
        var blob: [UInt8]?
        if tables.contains("Z_MODELCACHE") {
            let rows = try db.rows("SELECT Z_CONTENT FROM Z_MODELCACHE")
            guard rows.count <= 1 else { throw .corruptStore(url, reason: "Z_MODELCACHE has \(rows.count) rows") }
            blob = rows.first?.first?.bytes
        }
        return CoreDataStoreFile(
            url: url, uuid: uuid, metadata: metadata, primaryKeys: keys, modelCacheBlob: blob, tableNames: tables)
    }

    /// The compiled model in `Z_MODELCACHE`, or `nil` when the store has no cache (stores before 2012).
    public func model() throws(StoreError) -> CoreDataModel? {
        try decodedModelCache()?.model
    }

    /// The framework's schema from `Z_MODELCACHE`, or `nil` when the store has no cache.
    public func schema() throws(StoreError) -> Schema? {
        try decodedModelCache()?.schema
    }

    /// The model in `Z_MODELCACHE` and the schema it gives, decoded once per process for the same bytes
    /// (``CoreDataDecodedModels``).
    func decodedModelCache() throws(StoreError) -> (model: CoreDataModel, schema: Schema)? {
        guard let modelCacheBlob else { return nil }
        return try CoreDataModelMemos.modelCaches.value(for: modelCacheBlob) { () throws(StoreError) in
            let model = try decodedModel(modelCacheBlob)
            do throws(SchemaError) {
                return (model, try model.schema())
            } catch {
                throw .corruptStore(url, reason: "Z_MODELCACHE: \(error.description)")
            }
        }
    }

    /// Decodes `Z_MODELCACHE` without deriving a schema from it, for a reader that takes the schema from elsewhere
    /// (the framework's schema a store this backend created keeps): the cache is still decoded, so a damaged one
    /// is still refused. Throws as ``decodedModelCache()`` does for a cache that does not decode.
    func checkModelCache() throws(StoreError) {
        guard let modelCacheBlob, CoreDataModelMemos.modelCaches.kept(for: modelCacheBlob) == nil else { return }
        _ = try decodedModel(modelCacheBlob)
    }

    /// The model `blob` (this file's `Z_MODELCACHE`) decodes to, decoded once per process for the same bytes.
    private func decodedModel(_ blob: [UInt8]) throws(StoreError) -> CoreDataModel {
        try CoreDataModelMemos.models.value(for: blob) { () throws(StoreError) in
            do throws(CoreDataFormatError) {
                return try CoreDataModelCache.decode(blob)
            } catch {
                throw .corruptStore(url, reason: error.description)
            }
        }
    }
}
