import CLMDB
import Foundation
import StoreAPI

extension LMDBPersistentStore {
    /// Applies the changes in one write transaction: records, their uniqueness-index and global-ID entries, the
    /// key allocators, history and metadata are stored together or not at all. A full map is grown and the whole
    /// transaction retried, invisibly.
    ///
    /// Removals (deletes, and the old values of updates) are applied before additions, so records may swap
    /// unique values or reuse the values of deleted records within one save.
    ///
    /// - Throws: ``StoreError/uniquenessViolation(entity:attributes:values:existing:)`` when a record would share
    ///   the values of a uniqueness constraint with another; ``StoreError/objectNotFound(_:)`` for an update of a
    ///   record that is not stored; ``StoreError/readOnly(_:reason:)`` for read-only stores.
    ///
    /// The metadata the store was laid out with is compared with the stored one inside the transaction. When
    /// another process changed it, the store adopts the stored metadata; a save of records is then retried, and a
    /// save that changes metadata fails with ``StoreError/modifiedOnDisk(_:)`` rather than overwrite the other
    /// process's change.
    public func save(_ changes: StoreChanges) throws {
        try run {
            guard !isReadOnly else { throw StoreError.readOnly(storeURL, reason: "the store was opened read-only") }
            if changes.isEmpty { return }
            for attempt in 0..<2 {
                do {
                    try save(changes, base: layout)
                    return
                } catch let stale as StaleLayout {
                    try adopt(stale)
                    if changes.metadata != nil || attempt > 0 { throw StoreError.modifiedOnDisk(storeURL) }
                }
            }
        }
    }

    private func save(_ changes: StoreChanges, base: StoreLayout) throws {
        var target = base
        if let metadata = changes.metadata {
            target = try StoreLayout(metadata: metadata, existingIDs: base.entityIDs)
            // Database handles are opened outside the save's transaction (liblmdb allows one transaction at a
            // time to open handles); creating empty databases early is harmless if the save fails.
            try env.openDatabases(target.databaseNames, create: true)
        }
        try SaveValidator(layout: target, url: storeURL).validate(changes)
        let layout = target
        try env.write { txn in
            var writer = try SaveWriter(txn: txn, env: env, base: base, layout: layout, storeURL: storeURL, file: dataFile)
            try writer.apply(changes)
        }
        if changes.metadata != nil { env.setLayout(target) }
    }

    /// Lays the store out against metadata another process stored.
    private func adopt(_ stale: StaleLayout) throws {
        let metadata = try StoreMetadata.decode(Data(stale.metadataJSON), url: storeURL)
        let ids = try stale.entityIDsJSON.withUnsafeBytes { try StoreLayout.decodeEntityIDs($0, url: dataFile) }
        let fresh = try StoreLayout(metadata: metadata, storedJSON: stale.metadataJSON, existingIDs: ids)
        try env.openDatabases(fresh.databaseNames, create: !env.isReadOnly)
        env.setLayout(fresh)
    }
}

/// Thrown inside a save's transaction when the stored metadata is not the one the store was laid out with.
struct StaleLayout: Error {
    let metadataJSON: [UInt8]
    let entityIDsJSON: [UInt8]
}

/// Checks that records fit their entities before anything is written, so a malformed record cannot be stored.
struct SaveValidator {
    let layout: StoreLayout
    let url: URL

    func validate(_ changes: StoreChanges) throws {
        for key in changes.deleted { _ = try layout.info(key.entity) }
        var last: EntityInfo?
        for r in changes.updated { last = try validate(r, last) }
        for r in changes.inserted { last = try validate(r, last) }
    }

    /// Validates `r`; `previous` is the entity of the record before, reused when it is the same (bulk saves are
    /// runs of one entity, and a name comparison is cheaper than a lookup).
    private func validate(_ r: Record, _ previous: EntityInfo?) throws -> EntityInfo {
        let info = try previous.flatMap { $0.entity.name == r.entity ? $0 : nil } ?? layout.info(r.entity)
        let entity = info.entity
        if entity.isAbstract { throw StoreError.abstractEntity(entity.name) }
        let types = info.attributeTypes
        guard r.attributes.count == types.count, r.relationships.count == info.toMany.count else {
            throw StoreError.io(url, operation: "saving \(r.key)", reason: "the record has \(r.attributes.count) attribute and \(r.relationships.count) relationship values; \(entity.name) has \(types.count) and \(info.toMany.count)")
        }
        for i in types.indices where !r.attributes[i].fits(types[i]) {
            let a = entity.attributes[i]
            throw StoreError.typeMismatch(entity: entity.name, property: a.name, expected: a.type, got: r.attributes[i].type?.rawValue ?? "nil")
        }
        for (i, isToMany) in info.toMany.enumerated() {
            switch (isToMany, r.relationships[i]) {
            case (true, .toMany), (false, .toOne): continue
            default:
                throw StoreError.invalidRelationshipTarget(entity: entity.name, relationship: entity.relationships[i].name, reason: isToMany ? "expected a to-many value" : "expected a to-one value")
            }
        }
        return info
    }
}

/// The work of one save inside its write transaction. Created afresh for every attempt (a full map restarts the
/// transaction), so it keeps no state between attempts.
struct SaveWriter {
    let txn: LMDBTransaction
    let env: LMDBEnvironment
    /// The layout the store had when the save began (what the stored metadata must still be).
    let base: StoreLayout
    /// The layout the changes are written with (the new metadata's, when they change it).
    let layout: StoreLayout
    let storeURL: URL
    let reader: RecordReader
    private let globalIDs: MDB_dbi
    /// Database handles by name, so the per-record path does not go through the environment's lock.
    private var handles: [String: MDB_dbi] = [:]
    private var buffer = ByteWriter(capacity: 4096)
    /// Global-ID entries of this save, written sorted at the end (see ``flushGlobalIDs()``).
    private var pendingGlobalIDs: [PendingGlobalID] = []
    /// The largest key of each records database as seen in this transaction, for `MDB_APPEND`.
    private var lastKeys: [String: Int64?] = [:]
    /// The database and largest key of the last insert, so a run of one entity skips the lookups.
    private var lastPut: (info: EntityInfo, dbi: MDB_dbi, lastKey: Int64?)?

    init(txn: LMDBTransaction, env: LMDBEnvironment, base: StoreLayout, layout: StoreLayout, storeURL: URL, file: URL) throws {
        self.txn = txn
        self.env = env
        self.base = base
        self.layout = layout
        self.storeURL = storeURL
        self.reader = RecordReader(txn: txn, env: env, layout: layout, file: file)
        self.globalIDs = try env.requireDatabase(DatabaseName.globalIDs)
    }

    private mutating func handle(_ name: String) throws -> MDB_dbi {
        if let dbi = handles[name] { return dbi }
        let dbi = try env.requireDatabase(name)
        handles[name] = dbi
        return dbi
    }

    mutating func apply(_ changes: StoreChanges) throws {
        let meta = try handle(DatabaseName.meta)
        // Another process may have changed the metadata (and the entity IDs) since this store was laid out.
        let stored = try txn.get(meta, key: MetaKey.metadata)
        if let stored, stored != base.metadataJSON {
            throw StaleLayout(metadataJSON: stored, entityIDsJSON: try txn.get(meta, key: MetaKey.entityIDs) ?? [])
        }
        if changes.metadata != nil {
            try txn.put(meta, key: MetaKey.metadata, value: layout.metadataJSON)
            try txn.put(meta, key: MetaKey.entityIDs, value: try layout.entityIDsJSON())
        }

        // Removals first: deleted records and the old state of updated ones leave the indexes.
        for key in changes.deleted {
            let info = try layout.info(key.entity)
            let root = info.entity.rootName
            guard let old = try reader.record(key.primaryKey, root: root) else { continue }
            try unindex(old, root: root)
            let dbi = try handle(info.recordsDatabase)
            try OrderedKey.with(key.primaryKey) { _ = try txn.delete(dbi, $0) }
        }
        for r in changes.updated {
            let root = try layout.info(r.entity).entity.rootName
            guard let old = try reader.record(r.primaryKey, root: root) else {
                throw StoreError.objectNotFound(ObjectID(storeUUID: layout.metadata.storeUUID, entity: r.entity, primaryKey: r.primaryKey))
            }
            try unindex(old, root: root)
        }

        // Then additions.
        for r in changes.updated {
            let info = try layout.info(r.entity)
            try put(r, info, inserting: false)
            try index(r, info)
        }
        // The largest inserted key per entity (a short list: saves touch few entities).
        var highest: [(info: EntityInfo, key: Int64)] = []
        var run = -1
        for r in changes.inserted {
            // Bulk saves are runs of one entity: look the entity up once per run.
            if run < 0 || highest[run].info.entity.name != r.entity {
                let info = try layout.info(r.entity)
                if let i = highest.firstIndex(where: { $0.info === info }) { run = i } else {
                    highest.append((info, .min))
                    run = highest.count - 1
                }
            }
            let current = highest[run].info
            try put(r, current, inserting: true)
            try index(r, current)
            if r.primaryKey > highest[run].key { highest[run].key = r.primaryKey }
        }
        try flushGlobalIDs()
        // Keys allocated elsewhere (a transfer) must never be handed out again.
        if !highest.isEmpty {
            let keys = try handle(DatabaseName.keys)
            var byRoot: [String: Int64] = [:]
            for (info, key) in highest { byRoot[info.entity.rootName] = max(byRoot[info.entity.rootName] ?? .min, key) }
            for (root, pk) in byRoot {
                let next = try KeyAllocator.stored(txn, keys, root: root) ?? 1
                if next <= pk { try KeyAllocator.store(txn, keys, root: root, next: pk == .max ? .max : pk + 1) }
            }
        }

        if !changes.history.isEmpty { try appendHistory(changes.history) }
    }

    private mutating func put(_ r: Record, _ info: EntityInfo, inserting: Bool) throws {
        let dbi: MDB_dbi
        if let cached = lastPut, cached.info === info { dbi = cached.dbi } else { dbi = try handle(info.recordsDatabase) }
        buffer.reset()
        RecordCodec.encode(r, entityID: info.id, into: &buffer)
        var flags: UInt32 = 0
        if inserting {
            flags = UInt32(MDB_NOOVERWRITE)
            if let previous = lastPut, previous.info !== info { lastKeys[previous.info.recordsDatabase] = .some(previous.lastKey) }
            let last: Int64?
            if let cached = lastPut, cached.info === info {
                last = cached.lastKey
            } else if let known = lastKeys[info.recordsDatabase] {
                last = known
            } else {
                last = try reader.lastKey(root: info.entity.rootName)
            }
            var newLast = last
            if last.map({ r.primaryKey > $0 }) ?? true {
                // Ascending bulk inserts go straight to the end of the tree.
                flags = UInt32(MDB_APPEND)
                newLast = r.primaryKey
            }
            lastPut = (info, dbi, newLast)
        }
        var stored = try OrderedKey.with(r.primaryKey) { key in
            try buffer.bytes.withUnsafeBytes { value in try txn.put(dbi, key, value, flags: flags) }
        }
        if !stored && flags == UInt32(MDB_APPEND) {
            // The tracked largest key was out of date: an ordinary insert decides.
            stored = try OrderedKey.with(r.primaryKey) { key in
                try buffer.bytes.withUnsafeBytes { value in try txn.put(dbi, key, value, flags: UInt32(MDB_NOOVERWRITE)) }
            }
            lastPut = nil
            lastKeys[info.recordsDatabase] = nil
        }
        if !stored {
            throw StoreError.io(storeURL, operation: "inserting \(r.key)", reason: "primary key \(r.primaryKey) of \(info.entity.rootName) is already used")
        }
    }

    /// The constrained values of `r` for `index`, or `nil` when the index does not apply.
    private func values(of r: Record, for index: UniqueIndex) -> [StoreValue]? {
        guard let entity = layout.schema.entity(named: r.entity) else { return nil }
        var out: [StoreValue] = []
        for name in index.attributes {
            guard let i = entity.attributeIndex(name) else { return nil }
            out.append(r.attributes[i])
        }
        return out
    }

    private mutating func unindex(_ old: Record, root: String) throws {
        for index in layout.indexesByEntity[old.entity] ?? [] {
            guard let values = values(of: old, for: index), let key = RecordCodec.indexKey(values) else { continue }
            let dbi = try handle(index.databaseName)
            // Only this record's own entry goes; a damaged index never loses another record's entry.
            if try reader.indexedKey(index, key: key) == old.primaryKey {
                try key.withUnsafeBytes { _ = try txn.delete(dbi, $0) }
            }
        }
        let gids = globalIDs
        try withUnsafeBytes(of: old.globalID.uuid) { key in
            if let v = try txn.get(gids, key), let e = GlobalIDEntry.decode(v, layout: layout),
                e.entity.rootName == root, e.primaryKey == old.primaryKey
            {
                try txn.delete(gids, key)
            }
        }
    }

    private mutating func index(_ r: Record, _ info: EntityInfo) throws {
        let root = info.entity.rootName
        for index in info.indexes {
            guard let values = values(of: r, for: index), let key = RecordCodec.indexKey(values) else { continue }
            let dbi = try handle(index.databaseName)
            let added = try txn.put(dbi, key: key, value: OrderedKey.bytes(r.primaryKey), flags: UInt32(MDB_NOOVERWRITE))
            if added { continue }
            let existing = try reader.indexedKey(index, key: key)
            if existing == r.primaryKey { continue }
            let existingID = try existing.map { pk in
                ObjectID(storeUUID: layout.metadata.storeUUID, entity: try reader.entityName(pk, root: root) ?? index.owner, primaryKey: pk)
            }
            throw StoreError.uniquenessViolation(entity: index.owner, attributes: index.attributes, values: values, existing: existingID)
        }
        pendingGlobalIDs.append(PendingGlobalID(id: r.globalID, entry: GlobalIDEntry.Bytes(entityID: info.id, primaryKey: r.primaryKey), info: info, key: r.key))
    }

    private struct SortEntry {
        let key: (UInt64, UInt64)
        let index: Int
    }

    /// A global-ID index entry waiting to be written.
    struct PendingGlobalID {
        let id: UUID
        var entry: GlobalIDEntry.Bytes
        let info: EntityInfo
        let key: RecordKey

        /// The UUID's bytes as two big-endian halves: their order is the byte order liblmdb sorts keys by.
        var sortKey: (UInt64, UInt64) {
            withUnsafeBytes(of: id.uuid) { ($0.loadUnaligned(as: UInt64.self).bigEndian, $0.loadUnaligned(fromByteOffset: 8, as: UInt64.self).bigEndian) }
        }
    }

    /// Writes the global-ID entries of the saved records in key order through one cursor. Global IDs are random,
    /// so writing them as they come would walk the whole tree for each; sorted, consecutive entries land on the
    /// page the cursor is already on (and a new store's entries are simply appended).
    private mutating func flushGlobalIDs() throws {
        guard !pendingGlobalIDs.isEmpty else { return }
        let items = pendingGlobalIDs
        pendingGlobalIDs = []
        // Sort small plain values (no reference counting while moving them), then visit the items in that order.
        var order = items.enumerated().map { i, item in SortEntry(key: item.sortKey, index: i) }
        order.sort { $0.key < $1.key }
        let pending = order.map { ($0.key, items[$0.index]) }
        let gids = globalIDs
        let layout = self.layout
        let storeURL = self.storeURL
        try txn.withCursor(gids) { cursor in
            var last: (UInt64, UInt64)? = try cursor.move(MDB_LAST).map { k in
                k.key.count == 16 ? (k.key.loadUnaligned(as: UInt64.self).bigEndian, k.key.loadUnaligned(fromByteOffset: 8, as: UInt64.self).bigEndian) : (.max, .max)
            }
            for (sortKey, item) in pending {
                var entry = item.entry
                let appending = last.map { sortKey > $0 } ?? true
                let added = try withUnsafeBytes(of: item.id.uuid) { key in
                    try entry.withBytes { try cursor.put(key, $0, flags: UInt32(appending ? MDB_APPEND : MDB_NOOVERWRITE)) }
                }
                if added {
                    if appending { last = sortKey }
                    continue
                }
                // Already there: the same record (an update) is rewritten, anyone else's is a conflict.
                try withUnsafeBytes(of: item.id.uuid) { key in
                    if let v = try txn.get(gids, key), let e = GlobalIDEntry.decode(v, layout: layout),
                        e.entity.rootName != item.info.entity.rootName || e.primaryKey != item.key.primaryKey
                    {
                        throw StoreError.io(storeURL, operation: "saving \(item.key)", reason: "global ID \(item.id.uuidString) already belongs to \(e.entity.name)/p\(e.primaryKey)")
                    }
                    _ = try entry.withBytes { try cursor.put(key, $0, flags: 0) }
                }
            }
        }
    }

    private mutating func appendHistory(_ transactions: [HistoryTransaction]) throws {
        let dbi = try handle(DatabaseName.history)
        var last: Int64 = try txn.withCursor(dbi) { cursor in
            try cursor.move(MDB_LAST).flatMap { OrderedKey.decode($0.key) } ?? 0
        }
        for var t in transactions {
            if t.token == HistoryTransaction.assignToken { t.token = last + 1 }
            guard t.token > last else {
                throw StoreError.io(storeURL, operation: "appending history", reason: "token \(t.token) is not after \(last)")
            }
            last = t.token
            let json = Array(try t.encoded())
            try txn.put(dbi, key: OrderedKey.bytes(t.token), value: json, flags: UInt32(MDB_APPEND))
        }
    }
}
