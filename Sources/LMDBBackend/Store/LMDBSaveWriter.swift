import CLMDB
import Foundation
@_spi(BackendKit) import StoreAPI

/// The work of one save inside its write transaction. Created afresh for every attempt (a full map restarts the
/// transaction), so it keeps no state between attempts.
struct LMDBSaveWriter {
    let txn: LMDBTransaction
    let env: LMDBEnvironment
    /// The layout the store had when the save began (what the stored metadata must still be).
    let base: LMDBLayout
    /// The layout the changes are written with (the new metadata's, when they change it).
    let layout: LMDBLayout
    let storeURL: URL
    let reader: LMDBRecordReader
    private let globalIDs: MDB_dbi
    /// Database handles by name, so the per-record path does not go through the environment's lock.
    private var handles: [String: MDB_dbi] = [:]
    /// The encoding of the record being written, reused for every record.
    private var buffer = ByteWriter(capacity: 4096)
    /// Global-ID entries of this save, written in key order at the end — or, during a bulk load, left for the
    /// store to write with those of later saves (see ``LMDBPersistentStore/beginBulkLoad()``).
    private(set) var globalIDBatch = GlobalIDBatch()
    /// Whether ``apply(_:)`` leaves the global-ID entries in ``globalIDBatch`` instead of writing them.
    var defersGlobalIDs = false
    /// One cursor per records database written, kept for the whole save: a put through a cursor that is already
    /// at the end of the tree appends without descending it again. Closed by ``apply(_:)`` before it returns.
    private var cursors: [MDB_dbi: LMDBCursor] = [:]
    /// The largest key of each records database as seen in this transaction, for `MDB_APPEND`.
    private var lastKeys: [String: Int64?] = [:]
    /// The entity, cursor and largest key of the last insert, so a run of one entity skips the lookups.
    private var runInfo: LMDBEntityInfo?
    private var runCursor: LMDBCursor?
    private var runLastKey: Int64?

    init(txn: LMDBTransaction, env: LMDBEnvironment, base: LMDBLayout, layout: LMDBLayout, storeURL: URL, file: URL) throws {
        self.txn = txn
        self.env = env
        self.base = base
        self.layout = layout
        self.storeURL = storeURL
        self.reader = LMDBRecordReader(txn: txn, env: env, layout: layout, file: file)
        self.globalIDs = try env.requireDatabase(DatabaseName.globalIDs)
    }

    private mutating func handle(_ name: String) throws -> MDB_dbi {
        if let dbi = handles[name] { return dbi }
        let dbi = try env.requireDatabase(name)
        handles[name] = dbi
        return dbi
    }

    /// The cursor over records database `name`, opened on first use.
    private mutating func cursor(_ name: String) throws -> LMDBCursor {
        let dbi = try handle(name)
        if let open = cursors[dbi] { return open }
        let opened = try txn.openCursor(dbi)
        cursors[dbi] = opened
        return opened
    }

    private mutating func closeCursors() {
        for cursor in cursors.values { cursor.close() }
        cursors = [:]
        runInfo = nil
        runCursor = nil
    }

    /// Another process may have changed the metadata (and the entity IDs) since this store was laid out.
    private mutating func checkStoredMetadata() throws {
        let meta = try handle(DatabaseName.meta)
        let stored = try txn.get(meta, key: MetaKey.metadata)
        if let stored, stored != base.metadataJSON {
            throw StaleLayout(metadataJSON: stored, entityIDsJSON: try txn.get(meta, key: MetaKey.entityIDs) ?? [])
        }
    }

    mutating func apply(_ changes: StoreChanges) throws {
        defer { closeCursors() }
        try checkStoredMetadata()
        let meta = try handle(DatabaseName.meta)
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
        // An update that changes no indexed value (linking records changes only relationships) keeps its index
        // entries: its old state is not read, decoded and taken out of the indexes to be put back unchanged.
        var keepsIndexEntries = [Bool](repeating: false, count: changes.updated.count)
        for (i, r) in changes.updated.enumerated() {
            let info = try layout.info(r.entity)
            let root = info.entity.rootName
            if let changed = changes.changedProperties(ofUpdated: i), !Self.changesIndexedValues(changed, info) {
                guard try reader.exists(r.primaryKey, root: root) else {
                    throw StoreError.objectNotFound(ObjectID(storeUUID: layout.metadata.storeUUID, entity: r.entity, primaryKey: r.primaryKey))
                }
                keepsIndexEntries[i] = true
                continue
            }
            guard let old = try reader.record(r.primaryKey, root: root) else {
                throw StoreError.objectNotFound(ObjectID(storeUUID: layout.metadata.storeUUID, entity: r.entity, primaryKey: r.primaryKey))
            }
            try unindex(old, root: root)
        }

        // Then additions.
        globalIDBatch.reserve(changes.updated.count + changes.inserted.count)
        for (i, r) in changes.updated.enumerated() {
            let info = try layout.info(r.entity)
            try withUnsafePointer(to: r) { r in
                try put(r, info, inserting: false)
                if !keepsIndexEntries[i] { try index(r, info) }
            }
        }
        // The largest inserted key per entity (a short list: saves touch few entities).
        var highest: [(info: LMDBEntityInfo, key: Int64)] = []
        try changes.inserted.withUnsafeBufferPointer { records in
            guard let first = records.baseAddress else { return }
            // Records are read in place, never copied. Bulk saves are runs of one entity: the entity is looked up
            // once per run.
            var i = 0
            while i < records.count {
                let info = try layout.info(first[i].entity)
                let name = info.entity.name
                var runHighest = Int64.min
                repeat {
                    let r = first + i
                    try put(r, info, inserting: true)
                    try index(r, info)
                    runHighest = max(runHighest, r.pointee.primaryKey)
                    i += 1
                } while i < records.count && first[i].entity == name
                if let known = highest.firstIndex(where: { $0.info === info }) {
                    highest[known].key = max(highest[known].key, runHighest)
                } else {
                    highest.append((info, runHighest))
                }
            }
        }
        try finishInserts(highest: highest)
        if !changes.history.isEmpty { try appendHistory(changes.history) }
    }

    /// Inserts a page's records: what ``apply(_:)`` does for a save inserting the same records, each record's
    /// values written as the page holds them (the page form is the stored form, see ``RecordCodec``) after their
    /// tags and relationship kinds are checked against the entity. A record that does not fit, or whose entity
    /// has uniqueness indexes, is decoded and takes the save's own path (which names what does not fit).
    mutating func insert(_ page: RecordPage) throws {
        try insertPages(count: 1) { _ in page }
    }

    /// Inserts the pages `page(0)`, …, `page(count - 1)`, each as ``insert(_:)`` inserts one, and finishes once:
    /// the global-ID entries of all of them go into the index together, in key order.
    mutating func insertPages(count: Int, page: (Int) throws -> RecordPage) throws {
        defer { closeCursors() }
        try checkStoredMetadata()
        var highest: [(info: LMDBEntityInfo, key: Int64)] = []
        for i in 0..<count {
            let page = try page(i)
            guard !page.isEmpty else { continue }
            let (info, key) = try insertRecords(of: page)
            if let known = highest.firstIndex(where: { $0.info === info }) {
                highest[known].key = max(highest[known].key, key)
            } else {
                highest.append((info, key))
            }
        }
        try finishInserts(highest: highest)
    }

    /// Stores a page's records and collects their global-ID entries; returns their entity and largest key.
    private mutating func insertRecords(of page: RecordPage) throws -> (LMDBEntityInfo, Int64) {
        let info = try layout.info(page.entity)
        if info.isAbstract { throw StoreError.abstractEntity(info.entity.name) }
        var highest = Int64.min
        for i in 0..<page.count {
            let pk = page.primaryKeys[i]
            let encoded = info.indexes.isEmpty && page.withEncodedRecord(at: i) { values, links in
                let accepted = info.acceptedTags
                guard RecordPage.checkValues(values, count: accepted.count, accepts: { accepted[$0] & (1 << UInt16($1)) != 0 }),
                      RecordPage.checkLinks(links, toMany: info.toMany)
                else { return false }
                buffer.encode { RecordCodec.encode(globalID: page.globalIDs[i], info, values: values, links: links, into: &$0) }
                return true
            }
            if encoded {
                try storeEncoded(pk, info, inserting: true)
                globalIDBatch.append(page.globalIDs[i], entityID: info.id, primaryKey: pk)
            } else {
                let record = try page.record(at: i, of: info.entity)
                try withUnsafePointer(to: record) { r in
                    try put(r, info, inserting: true)
                    try index(r, info)
                }
            }
            highest = max(highest, pk)
        }
        return (info, highest)
    }

    /// Writes the save's global-ID entries (unless a bulk load defers them) and moves the key allocators past the
    /// largest inserted keys.
    private mutating func finishInserts(highest: [(info: LMDBEntityInfo, key: Int64)]) throws {
        if !defersGlobalIDs {
            try globalIDBatch.write(txn, globalIDs, layout: layout, storeURL: storeURL, env: env)
            globalIDBatch = GlobalIDBatch()
        }
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
    }

    /// Encodes `r` (checking it fits its entity on the way) and stores it under its primary key. Inserts are
    /// appended (`MDB_APPEND`) while their keys ascend past the largest stored key, as bulk inserts do.
    private mutating func put(_ r: UnsafePointer<Record>, _ info: LMDBEntityInfo, inserting: Bool) throws {
        if info.isAbstract { throw StoreError.abstractEntity(info.entity.name) }
        let fits = buffer.encode { RecordCodec.encode(r, info, into: &$0) }
        if !fits {
            try SaveValidator.check(r.pointee, info, url: storeURL)
            throw StoreError.io(storeURL, operation: "saving \(r.pointee.key)", reason: "the record does not fit \(info.entity.name)")
        }
        try storeEncoded(r.pointee.primaryKey, info, inserting: inserting)
    }

    /// Stores the record just encoded into `buffer` under `pk`.
    private mutating func storeEncoded(_ pk: Int64, _ info: LMDBEntityInfo, inserting: Bool) throws {
        let cursor: LMDBCursor
        var flags: UInt32 = 0
        if inserting {
            flags = UInt32(MDB_NOOVERWRITE)
            let last: Int64?
            if runInfo === info, let runCursor {
                cursor = runCursor
                last = runLastKey
            } else {
                if let previous = runInfo { lastKeys[previous.recordsDatabase] = .some(runLastKey) }
                cursor = try self.cursor(info.recordsDatabase)
                if let known = lastKeys[info.recordsDatabase] { last = known } else { last = try reader.lastKey(root: info.entity.rootName) }
                runInfo = info
                runCursor = cursor
            }
            runLastKey = last
            if last.map({ pk > $0 }) ?? true {
                // Ascending bulk inserts go straight to the end of the tree.
                flags = UInt32(MDB_APPEND)
                runLastKey = pk
            }
        } else {
            cursor = try self.cursor(info.recordsDatabase)
        }
        // Valid until the next record is encoded; liblmdb copies it.
        let value = buffer.unsafeBytes
        var stored = try OrderedKey.with(pk) { key in try cursor.put(key, value, flags: flags) }
        if !stored && flags == UInt32(MDB_APPEND) {
            // The tracked largest key was out of date: an ordinary insert decides.
            stored = try OrderedKey.with(pk) { key in try cursor.put(key, value, flags: UInt32(MDB_NOOVERWRITE)) }
            runInfo = nil
            runCursor = nil
            lastKeys[info.recordsDatabase] = nil
        }
        if !stored {
            let key = RecordKey(entity: info.entity.name, primaryKey: pk)
            throw StoreError.io(storeURL, operation: "inserting \(key)", reason: "primary key \(pk) of \(info.entity.rootName) is already used")
        }
        // Index updates land on pages all over the map (about a page each); a large save would keep every one
        // of them resident.
        env.releaseResidentPages(after: value.count + 4096)
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

    /// Whether a change touches a value an index holds: a uniqueness-constrained attribute. (Global IDs, the other
    /// index, never change.)
    private static func changesIndexedValues(_ changed: ChangedProperties, _ info: LMDBEntityInfo) -> Bool {
        guard !changed.attributes.isEmpty else { return false }
        for index in info.indexes {
            for name in index.attributes {
                if let a = info.entity.attributeIndex(name), changed.attributes.contains(a) { return true }
            }
        }
        return false
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

    private mutating func index(_ record: UnsafePointer<Record>, _ info: LMDBEntityInfo) throws {
        if !info.indexes.isEmpty { try indexUnique(record.pointee, info) }
        globalIDBatch.append(record.pointee.globalID, entityID: info.id, primaryKey: record.pointee.primaryKey)
    }

    private mutating func indexUnique(_ r: Record, _ info: LMDBEntityInfo) throws {
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
            try txn.put(dbi, key: OrderedKey.bytes(t.token), value: Array(try t.encoded()), flags: UInt32(MDB_APPEND))
        }
    }
}
