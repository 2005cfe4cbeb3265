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
    public func save(_ changes: StoreChanges) throws {
        try run {
            guard !isReadOnly else { throw StoreError.readOnly(storeURL, reason: "the store was opened read-only") }
            if changes.isEmpty { return }
            let current = layout
            var target = current
            if let metadata = changes.metadata {
                target = try StoreLayout(metadata: metadata, existingIDs: current.entityIDs)
                // Database handles are opened outside the save's transaction (liblmdb allows one transaction
                // at a time to open handles); creating empty databases early is harmless if the save fails.
                try env.openDatabases(target.databaseNames, create: true)
            }
            try SaveValidator(schema: target.schema, url: storeURL).validate(changes)
            let layout = target
            try env.write { txn in
                var writer = try SaveWriter(txn: txn, env: env, layout: layout, storeURL: storeURL, file: dataFile)
                try writer.apply(changes)
            }
            if changes.metadata != nil { env.setLayout(target) }
        }
    }
}

/// Checks that records fit their entities before anything is written, so a malformed record cannot be stored.
struct SaveValidator {
    let schema: Schema
    let url: URL

    func validate(_ changes: StoreChanges) throws {
        for key in changes.deleted { _ = try schema.requireEntity(key.entity) }
        for r in changes.updated { try validate(r) }
        for r in changes.inserted { try validate(r) }
    }

    private func validate(_ r: Record) throws {
        let entity = try schema.requireEntity(r.entity)
        if entity.isAbstract { throw StoreError.abstractEntity(entity.name) }
        guard r.attributes.count == entity.attributes.count, r.relationships.count == entity.relationships.count else {
            throw StoreError.io(url, operation: "saving \(r.key)", reason: "the record has \(r.attributes.count) attribute and \(r.relationships.count) relationship values; \(entity.name) has \(entity.attributes.count) and \(entity.relationships.count)")
        }
        for (i, a) in entity.attributes.enumerated() where !r.attributes[i].fits(a.type) {
            throw StoreError.typeMismatch(entity: entity.name, property: a.name, expected: a.type, got: r.attributes[i].type?.rawValue ?? "nil")
        }
        for (i, rel) in entity.relationships.enumerated() {
            switch (rel.isToMany, r.relationships[i]) {
            case (true, .toMany), (false, .toOne): continue
            default:
                throw StoreError.invalidRelationshipTarget(entity: entity.name, relationship: rel.name, reason: rel.isToMany ? "expected a to-many value" : "expected a to-one value")
            }
        }
    }
}

/// The work of one save inside its write transaction. Created afresh for every attempt (a full map restarts the
/// transaction), so it keeps no state between attempts.
struct SaveWriter {
    let txn: LMDBTransaction
    let env: LMDBEnvironment
    let layout: StoreLayout
    let storeURL: URL
    let reader: RecordReader
    private var buffer = ByteWriter(capacity: 4096)
    /// The largest key of each hierarchy as seen in this transaction, for `MDB_APPEND`.
    private var lastKeys: [String: Int64?] = [:]

    init(txn: LMDBTransaction, env: LMDBEnvironment, layout: StoreLayout, storeURL: URL, file: URL) throws {
        self.txn = txn
        self.env = env
        self.layout = layout
        self.storeURL = storeURL
        self.reader = RecordReader(txn: txn, env: env, layout: layout, file: file)
    }

    private var schema: Schema { layout.schema }

    mutating func apply(_ changes: StoreChanges) throws {
        if changes.metadata != nil {
            let meta = try env.requireDatabase(DatabaseName.meta)
            try txn.put(meta, key: MetaKey.metadata, value: layout.metadataJSON)
            try txn.put(meta, key: MetaKey.entityIDs, value: try layout.entityIDsJSON())
        }

        // Removals first: deleted records and the old state of updated ones leave the indexes.
        for key in changes.deleted {
            let root = try schema.requireEntity(key.entity).rootName
            guard let old = try reader.record(key.primaryKey, root: root) else { continue }
            try unindex(old, root: root)
            let dbi = try recordsDatabase(root)
            try OrderedKey.with(key.primaryKey) { _ = try txn.delete(dbi, $0) }
        }
        for r in changes.updated {
            let root = try schema.requireEntity(r.entity).rootName
            guard let old = try reader.record(r.primaryKey, root: root) else {
                throw StoreError.objectNotFound(ObjectID(storeUUID: layout.metadata.storeUUID, entity: r.entity, primaryKey: r.primaryKey))
            }
            try unindex(old, root: root)
        }

        // Then additions.
        for r in changes.updated {
            let root = try schema.requireEntity(r.entity).rootName
            try put(r, root: root, inserting: false)
            try index(r, root: root)
        }
        var highest: [String: Int64] = [:]
        for r in changes.inserted {
            let root = try schema.requireEntity(r.entity).rootName
            try put(r, root: root, inserting: true)
            try index(r, root: root)
            highest[root] = max(highest[root] ?? .min, r.primaryKey)
        }
        // Keys allocated elsewhere (a transfer) must never be handed out again.
        if !highest.isEmpty {
            let keys = try env.requireDatabase(DatabaseName.keys)
            for (root, pk) in highest {
                let next = try KeyAllocator.stored(txn, keys, root: root) ?? 1
                if next <= pk { try KeyAllocator.store(txn, keys, root: root, next: pk == .max ? .max : pk + 1) }
            }
        }

        if !changes.history.isEmpty { try appendHistory(changes.history) }
    }

    private func recordsDatabase(_ root: String) throws -> MDB_dbi {
        try env.requireDatabase(DatabaseName.records(root))
    }

    private mutating func put(_ r: Record, root: String, inserting: Bool) throws {
        guard let entityID = layout.entityIDs[r.entity] else { throw StoreError.unknownEntity(r.entity) }
        let dbi = try recordsDatabase(root)
        buffer.reset()
        RecordCodec.encode(r, entityID: entityID, into: &buffer)
        var flags: UInt32 = 0
        if inserting {
            flags = UInt32(MDB_NOOVERWRITE)
            let last: Int64?
            if let known = lastKeys[root] { last = known } else { last = try reader.lastKey(root: root) }
            if last.map({ r.primaryKey > $0 }) ?? true {
                // Ascending bulk inserts go straight to the end of the tree.
                flags = UInt32(MDB_APPEND)
                lastKeys[root] = .some(r.primaryKey)
            } else {
                lastKeys[root] = .some(last)
            }
        }
        let stored = try OrderedKey.with(r.primaryKey) { key in
            try buffer.bytes.withUnsafeBytes { value in try txn.put(dbi, key, value, flags: flags) }
        }
        if !stored {
            throw StoreError.io(storeURL, operation: "inserting \(r.key)", reason: "primary key \(r.primaryKey) of \(root) is already used")
        }
    }

    /// The constrained values of `r` for `index`, or `nil` when the index does not apply.
    private func values(of r: Record, for index: UniqueIndex) -> [StoreValue]? {
        guard let entity = schema.entity(named: r.entity) else { return nil }
        var out: [StoreValue] = []
        for name in index.attributes {
            guard let i = entity.attributeIndex(name) else { return nil }
            out.append(r.attributes[i])
        }
        return out
    }

    private func unindex(_ old: Record, root: String) throws {
        for index in layout.indexesByEntity[old.entity] ?? [] {
            guard let values = values(of: old, for: index), let key = RecordCodec.indexKey(values),
                let dbi = env.database(index.databaseName)
            else { continue }
            // Only this record's own entry goes; a damaged index never loses another record's entry.
            if try reader.indexedKey(index, key: key) == old.primaryKey {
                try key.withUnsafeBytes { _ = try txn.delete(dbi, $0) }
            }
        }
        let gids = try env.requireDatabase(DatabaseName.globalIDs)
        try withUnsafeBytes(of: old.globalID.uuid) { key in
            if let v = try txn.get(gids, key), let e = GlobalIDEntry.decode(v, layout: layout),
                e.entity.rootName == root, e.primaryKey == old.primaryKey
            {
                try txn.delete(gids, key)
            }
        }
    }

    private func index(_ r: Record, root: String) throws {
        for index in layout.indexesByEntity[r.entity] ?? [] {
            guard let values = values(of: r, for: index), let key = RecordCodec.indexKey(values) else { continue }
            guard let dbi = env.database(index.databaseName) else {
                throw LMDBFailure(code: MDB_NOTFOUND, operation: "opening index \(index.databaseName)")
            }
            let added = try txn.put(dbi, key: key, value: OrderedKey.bytes(r.primaryKey), flags: UInt32(MDB_NOOVERWRITE))
            if added { continue }
            let existing = try reader.indexedKey(index, key: key)
            if existing == r.primaryKey { continue }
            let existingID = try existing.map { pk in
                ObjectID(storeUUID: layout.metadata.storeUUID, entity: try reader.entityName(pk, root: root) ?? index.owner, primaryKey: pk)
            }
            throw StoreError.uniquenessViolation(entity: index.owner, attributes: index.attributes, values: values, existing: existingID)
        }
        guard let entityID = layout.entityIDs[r.entity] else { throw StoreError.unknownEntity(r.entity) }
        let gids = try env.requireDatabase(DatabaseName.globalIDs)
        let entry = GlobalIDEntry.encode(entityID: entityID, primaryKey: r.primaryKey)
        try withUnsafeBytes(of: r.globalID.uuid) { key in
            let added = try entry.withUnsafeBytes { try txn.put(gids, key, $0, flags: UInt32(MDB_NOOVERWRITE)) }
            if added { return }
            if let v = try txn.get(gids, key), let e = GlobalIDEntry.decode(v, layout: layout),
                e.entity.rootName != root || e.primaryKey != r.primaryKey
            {
                throw StoreError.io(storeURL, operation: "saving \(r.key)", reason: "global ID \(r.globalID.uuidString) already belongs to \(e.entity.name)/p\(e.primaryKey)")
            }
            _ = try entry.withUnsafeBytes { try txn.put(gids, key, $0) }
        }
    }

    private func appendHistory(_ transactions: [HistoryTransaction]) throws {
        let dbi = try env.requireDatabase(DatabaseName.history)
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
