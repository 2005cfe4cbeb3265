import CSQLite
import Foundation
@_spi(BackendKit) import StoreAPI

/// An open Core Data store that saves.
///
/// Reads are answered from an in-memory snapshot, as in the read-only store (following a to-many needs the other
/// side's foreign keys anyway). A save applies the changes to a copy of the snapshot, then writes the copy's
/// records into the store's tables in one SQLite transaction, laid out exactly as ``CoreDataLayout`` says Core Data
/// lays them out; the snapshot is replaced only after the commit, so a save that fails (a uniqueness index, a full
/// disk) leaves both the file and the open store as they were.
///
/// Each save rewrites the record tables and join tables whole (deleting their rows and inserting the snapshot's):
/// the foreign keys, `Z_FOK_` positions and join rows of records the save did not name change with the records it
/// did, and computing them from the whole snapshot is what keeps them consistent. The cost grows with the store.
///
/// - `Z_OPT`: 1 for an inserted record, the stored value + 1 for an updated one, unchanged otherwise.
/// - `Z_PRIMARYKEY.Z_MAX` of each root entity is kept at or above every key in its table, and
///   ``allocatePrimaryKeys(root:count:)`` advances it in its own transaction.
/// - Ordered relationships: `Z_FOK_` values are the position (from 1) times 1024, the spacing seen in real stores,
///   which leaves Core Data room to insert between two members without renumbering.
/// - History: saves add no `ATRANSACTION`/`ACHANGE` rows (history already in the store is still read); history in
///   a ``StoreChanges`` is dropped.
/// - Another process's commit since this store last read or wrote the file makes the next save fail with
///   ``StoreError/modifiedOnDisk(_:)`` rather than overwrite it (`PRAGMA data_version`).
final class CoreDataWritableStore: PersistentStore, @unchecked Sendable {
    private let fileURL: URL
    private let lock = NSLock()
    private var snapshot: MemoryStore
    private var byEntity: [String: [Record]]
    /// Root entity → `Z_PK` → `Z_OPT`.
    private var optimisticLocks: [String: [Int64: Int64]]
    /// The metadata plist as stored.
    private var plist: CoreDataMetadata
    private let layout: CoreDataLayout
    private let schema: Schema
    private var db: CoreDataWritableDatabase?
    private var dataVersion: Int64

    init(
        url: URL, db: CoreDataWritableDatabase, metadata: StoreMetadata, plist: CoreDataMetadata,
        layout: CoreDataLayout, records: [Record], history: [HistoryTransaction]
    ) throws {
        fileURL = url
        self.db = db
        self.plist = plist
        self.layout = layout
        schema = metadata.schema
        snapshot = MemoryStore(url: url, metadata: metadata)
        try snapshot.save(StoreChanges(inserted: records, history: history))
        byEntity = Self.group(records)
        var locks: [String: [Int64: Int64]] = [:]
        for table in layout.tables {
            guard case .entity(let root) = table.kind else { continue }
            for row in try db.run("SELECT Z_PK, Z_OPT FROM \(Self.quoted(table.name))") {
                if row.count == 2, let pk = row[0].integral { locks[root, default: [:]][pk] = row[1].integral ?? 1 }
            }
        }
        optimisticLocks = locks
        dataVersion = try Self.dataVersion(db)
    }

    private static func group(_ records: [Record]) -> [String: [Record]] {
        Dictionary(grouping: records, by: \.entity).mapValues { $0.sorted { $0.primaryKey < $1.primaryKey } }
    }

    static func quoted(_ name: String) -> String { "\"" + name.replacingOccurrences(of: "\"", with: "\"\"") + "\"" }

    private static func dataVersion(_ db: CoreDataWritableDatabase) throws(StoreError) -> Int64 {
        try db.run("PRAGMA data_version").first?.first?.integral ?? 0
    }

    var url: URL? { fileURL }

    var metadata: StoreMetadata { lock.withLock { snapshot.metadata } }

    private var current: MemoryStore { lock.withLock { snapshot } }

    func fetch(_ request: FetchRequest) throws -> [Record] { try current.fetch(request) }

    func count(_ request: FetchRequest) throws -> Int { try current.count(request) }

    func records(withKeys keys: [Int64], root: String) throws -> [Record] {
        try current.records(withKeys: keys, root: root)
    }

    func scan(entity: String, after primaryKey: Int64?, limit: Int) throws -> [Record] {
        let (store, list) = lock.withLock { (snapshot, byEntity[entity] ?? []) }
        _ = try store.records(withKeys: [], root: entity)  // a closed store says so
        _ = try schema.requireEntity(entity)
        var low = 0, high = list.count
        if let primaryKey {
            while low < high {
                let mid = (low + high) / 2
                if list[mid].primaryKey <= primaryKey { low = mid + 1 } else { high = mid }
            }
        }
        return Array(list[low..<min(list.count, low + max(0, limit))])
    }

    func history(after token: Int64?) throws -> [HistoryTransaction] { try current.history(after: token) }

    func close() throws {
        try lock.withLock {
            db?.close()
            db = nil
            try snapshot.close()
        }
    }

    private func openDatabase() throws(StoreError) -> CoreDataWritableDatabase {
        guard let db else { throw .io(fileURL, operation: "using the store", reason: "the store is closed") }
        return db
    }

    /// Begins a write transaction, refusing when another connection changed the file since this one last did.
    private func begin(_ db: CoreDataWritableDatabase) throws(StoreError) {
        try db.execute("BEGIN IMMEDIATE")
        do throws(StoreError) {
            guard try Self.dataVersion(db) == dataVersion else { throw StoreError.modifiedOnDisk(fileURL) }
        } catch {
            try? db.execute("ROLLBACK")
            throw error
        }
    }

    private func commit(_ db: CoreDataWritableDatabase) throws(StoreError) {
        try db.execute("COMMIT")
        dataVersion = try Self.dataVersion(db)
    }

    // MARK: Saving

    func save(_ changes: StoreChanges) throws {
        try lock.withLock {
            let db = try openDatabase()
            if let m = changes.metadata, m.schema != schema {
                throw StoreError.unsupported("\(fileURL.path): changing the schema of a coredata store (a migration)")
            }
            var applied = changes
            applied.history = []
            let next = snapshot.detachedCopy()
            try next.save(applied)
            var locks = optimisticLocks
            for key in changes.deleted {
                let root = try schema.requireEntity(key.entity).rootName
                locks[root]?[key.primaryKey] = nil
            }
            for r in changes.updated {
                let root = try schema.requireEntity(r.entity).rootName
                locks[root, default: [:]][r.primaryKey] = (locks[root]?[r.primaryKey] ?? 0) + 1
            }
            for r in changes.inserted {
                locks[try schema.requireEntity(r.entity).rootName, default: [:]][r.primaryKey] = 1
            }
            var records: [Record] = []
            try next.snapshot().forEachRecord { records.append($0) }
            var newPlist = plist
            if let m = changes.metadata { newPlist = Self.plist(plist, custom: m.custom) }
            let external = CoreDataExternalDataWriter(store: fileURL, layout: layout, schema: schema)
            try begin(db)
            do {
                try external.loadReferences()
                let writer = CoreDataRowWriter(layout: layout, schema: schema, db: db, url: fileURL, external: external)
                try writer.write(records, locks: locks)
                if let m = changes.metadata { try Self.writeMetadataRow(db, uuid: m.storeUUID, plist: newPlist) }
                try commit(db)
            } catch {
                try? db.execute("ROLLBACK")
                external.discardWritten()
                throw error
            }
            external.removeUnreferenced()
            snapshot = next
            byEntity = Self.group(records)
            optimisticLocks = locks
            plist = newPlist
        }
    }

    func allocatePrimaryKeys(root: String, count: Int) throws -> Int64 {
        try lock.withLock {
            let db = try openDatabase()
            let entity = try schema.requireEntity(root)
            guard let number = layout.entity(named: entity.rootName)?.number else { throw StoreError.unknownEntity(root) }
            let highest = (optimisticLocks[entity.rootName] ?? [:]).keys.max() ?? 0
            try begin(db)
            do {
                let stored = try db.run("SELECT Z_MAX FROM Z_PRIMARYKEY WHERE Z_ENT = ?", [.integer(Int64(number))])
                let first = max(stored.first?.first?.integral ?? 0, highest) + 1
                let last = first + Int64(max(count, 0)) - 1
                try db.run("UPDATE Z_PRIMARYKEY SET Z_MAX = ? WHERE Z_ENT = ?", [.integer(max(last, first - 1)), .integer(Int64(number))])
                try commit(db)
                return first
            } catch {
                try? db.execute("ROLLBACK")
                throw error
            }
        }
    }

    // MARK: Metadata

    /// `base` with the framework's custom metadata as its app keys (the embedded schema key kept).
    static func plist(_ base: CoreDataMetadata, custom: [String: MetadataValue]) -> CoreDataMetadata {
        var p = base
        let schemaKey = base.custom[CoreDataStoreBackend.schemaMetadataKey]
        p.custom = custom.mapValues(CoreDataStoreBackend.propertyListValue)
        if let schemaKey { p.custom[CoreDataStoreBackend.schemaMetadataKey] = schemaKey }
        return p
    }

    static func writeMetadataRow(
        _ db: CoreDataWritableDatabase, uuid: UUID, plist: CoreDataMetadata
    ) throws(StoreError) {
        try db.run(
            "UPDATE Z_METADATA SET Z_UUID = ?, Z_PLIST = ? WHERE Z_VERSION = 1",
            [.text(uuid.uuidString.uppercased()), .blob(BinaryPropertyListWriter.write(plist.propertyList))])
    }
}

/// Writes a whole snapshot of records into the store's record and join tables (inside the caller's transaction).
struct CoreDataRowWriter {
    let layout: CoreDataLayout
    let schema: Schema
    let db: CoreDataWritableDatabase
    let url: URL
    /// Where values of attributes that allow external storage go (see ``CoreDataExternalDataWriter``).
    var external: CoreDataExternalDataWriter? = nil

    /// Core Data's spacing of `Z_FOK_` values (see ``CoreDataWritableStore``).
    static let orderSpacing: Int64 = 1024

    private struct MemberKey: Hashable {
        var root: String
        var primaryKey: Int64
        var relationship: String
    }

    func write(_ all: [Record], locks: [String: [Int64: Int64]]) throws {
        var byRoot: [String: [Int64: Record]] = [:]
        var entities: [String: Entity] = [:]
        for r in all {
            let e = try entities[r.entity] ?? schema.requireEntity(r.entity)
            entities[r.entity] = e
            byRoot[e.rootName, default: [:]][r.primaryKey] = r
        }
        func entity(_ name: String) throws -> Entity {
            if let e = entities[name] { return e }
            return try schema.requireEntity(name)
        }
        func isA(_ name: String, _ ancestor: String) -> Bool {
            name == ancestor || entities[name]?.ancestorNames.contains(ancestor) == true
        }
        // Positions in ordered to-many relationships whose inverse is a to-one (the member's `Z_FOK_`), and the
        // owners of to-many relationships without an inverse (the hidden key in the destination's table).
        var positions: [MemberKey: Int64] = [:]
        var owners: [MemberKey: (owner: Int64, position: Int64)] = [:]
        for r in all {
            let e = try entity(r.entity)
            for (i, rel) in e.relationships.enumerated() where rel.isToMany && i < r.relationships.count {
                guard let destination = schema.entity(named: rel.destination) else { continue }
                let members = r.relationships[i].keys
                if let inverse = rel.inverse {
                    guard rel.isOrdered, destination.relationship(inverse)?.isToMany == false else { continue }
                    for (j, m) in members.enumerated() {
                        positions[MemberKey(root: destination.rootName, primaryKey: m, relationship: inverse)] =
                            Int64(j + 1) * Self.orderSpacing
                    }
                } else {
                    let lineage = [e.name] + e.ancestorNames
                    let declaring = lineage.first {
                        schema.entity(named: $0)?.definition.relationships.contains { $0.name == rel.name } == true
                    } ?? e.name
                    for (j, m) in members.enumerated() {
                        owners[MemberKey(root: destination.rootName, primaryKey: m, relationship: declaring + "." + rel.name)] =
                            (r.primaryKey, Int64(j + 1) * Self.orderSpacing)
                    }
                }
            }
        }
        func toOne(_ r: Record, _ name: String) throws -> Int64? {
            let e = try entity(r.entity)
            guard let i = e.relationshipIndex(name), i < r.relationships.count, case .toOne(let k) = r.relationships[i]
            else { return nil }
            return k
        }
        for table in layout.tables {
            switch table.kind {
            case .bookkeeping:
                continue
            case .entity(let root):
                try db.execute("DELETE FROM \(CoreDataWritableStore.quoted(table.name))")
                let insert = try db.prepare(
                    "INSERT INTO \(CoreDataWritableStore.quoted(table.name)) ("
                        + table.columns.map { CoreDataWritableStore.quoted($0.name) }.joined(separator: ", ")
                        + ") VALUES (" + table.columns.map { _ in "?" }.joined(separator: ", ") + ")")
                let rows = byRoot[root] ?? [:]
                for pk in rows.keys.sorted() {
                    guard let r = rows[pk] else { continue }
                    let e = try entity(r.entity)
                    guard let number = layout.entity(named: r.entity)?.number else { throw StoreError.unknownEntity(r.entity) }
                    var values: [CoreDataWritableDatabase.Value] = []
                    values.reserveCapacity(table.columns.count)
                    for column in table.columns {
                        switch column.role {
                        case .primaryKey: values.append(.integer(pk))
                        case .entityNumber: values.append(.integer(Int64(number)))
                        case .optimisticLock: values.append(.integer(locks[root]?[pk] ?? 1))
                        case .attribute(let owner, let name):
                            guard isA(r.entity, owner), let i = e.attributeIndex(name), i < r.attributes.count else {
                                values.append(.null)
                                continue
                            }
                            values.append(try external?.encode(r.attributes[i], e.attributes[i], table: table.name,
                                                               column: column.name, primaryKey: pk)
                                ?? encode(r.attributes[i], e.attributes[i], record: r))
                        case .foreignKey(let owner, let name):
                            guard isA(r.entity, owner), let k = try toOne(r, name) else { values.append(.null); continue }
                            values.append(.integer(k))
                        case .foreignEntity(let owner, let name):
                            guard isA(r.entity, owner), let k = try toOne(r, name),
                                let rel = e.relationship(name), let destination = schema.entity(named: rel.destination),
                                let target = byRoot[destination.rootName]?[k],
                                let n = layout.entity(named: target.entity)?.number
                            else { values.append(.null); continue }
                            values.append(.integer(Int64(n)))
                        case .orderKey(let owner, let name):
                            guard isA(r.entity, owner),
                                let p = positions[MemberKey(root: root, primaryKey: pk, relationship: name)]
                            else { values.append(.null); continue }
                            values.append(.integer(p))
                        case .inverselessForeignKey(let source, let name):
                            let o = owners[MemberKey(root: root, primaryKey: pk, relationship: source + "." + name)]
                            values.append(o.map { .integer($0.owner) } ?? .null)
                        case .inverselessOrderKey(let source, let name):
                            let o = owners[MemberKey(root: root, primaryKey: pk, relationship: source + "." + name)]
                            values.append(o.map { .integer($0.position) } ?? .null)
                        case .joinKey, .joinOrderKey, .bookkeeping:
                            values.append(.null)
                        }
                    }
                    try run(insert, values, table: table.name, pk: pk)
                }
                guard let number = layout.entity(named: root)?.number else { continue }
                try db.run(
                    "UPDATE Z_PRIMARYKEY SET Z_MAX = max(ifnull(Z_MAX, 0), ?) WHERE Z_ENT = ?",
                    [.integer(rows.keys.max() ?? 0), .integer(Int64(number))])
            case .join(let owner, let name):
                // One row per pair, written from the side that names the table; the other side's order (when it
                // is ordered too) is its position in the destination's list.
                try db.execute("DELETE FROM \(CoreDataWritableStore.quoted(table.name))")
                let insert = try db.prepare(
                    "INSERT INTO \(CoreDataWritableStore.quoted(table.name)) ("
                        + table.columns.map { CoreDataWritableStore.quoted($0.name) }.joined(separator: ", ")
                        + ") VALUES (" + table.columns.map { _ in "?" }.joined(separator: ", ") + ")")
                let ownerEntity = try entity(owner)
                guard let rel = ownerEntity.relationship(name), let destination = schema.entity(named: rel.destination)
                else { continue }
                for pk in (byRoot[ownerEntity.rootName] ?? [:]).keys.sorted() {
                    guard let r = byRoot[ownerEntity.rootName]?[pk], isA(r.entity, owner) else { continue }
                    let e = try entity(r.entity)
                    guard let i = e.relationshipIndex(name), i < r.relationships.count else { continue }
                    for (j, t) in r.relationships[i].keys.enumerated() {
                        var values: [CoreDataWritableDatabase.Value] = []
                        for column in table.columns {
                            switch column.role {
                            case .joinKey(let x, let y):
                                values.append(.integer(x == owner && y == name ? t : pk))
                            case .joinOrderKey(let x, let y):
                                if x == owner && y == name {
                                    values.append(.integer(Int64(j + 1) * Self.orderSpacing))
                                } else if let target = byRoot[destination.rootName]?[t],
                                    let te = entities[target.entity], let ti = te.relationshipIndex(y),
                                    ti < target.relationships.count,
                                    let at = target.relationships[ti].keys.firstIndex(of: pk)
                                {
                                    values.append(.integer(Int64(at + 1) * Self.orderSpacing))
                                } else {
                                    values.append(.null)
                                }
                            default:
                                values.append(.null)
                            }
                        }
                        try run(insert, values, table: table.name, pk: pk)
                    }
                }
            }
        }
    }

    private func run(
        _ statement: CoreDataWritableDatabase.Statement, _ values: [CoreDataWritableDatabase.Value], table: String,
        pk: Int64
    ) throws(StoreError) {
        do throws(StoreError) {
            try db.run(statement, values)
        } catch {
            let code = db.lastExtendedError
            // SQLITE_CONSTRAINT_UNIQUE / _PRIMARYKEY: a uniqueness constraint or a duplicate join row.
            if code == SQLITE_CONSTRAINT | (8 << 8) || code == SQLITE_CONSTRAINT | (6 << 8),
                case .io(_, _, let reason) = error
            {
                throw StoreError.refused(url, reason: "\(table) row Z_PK \(pk): \(reason)")
            }
            throw error
        }
    }

    /// A value as Core Data stores it (see the format reference, §5).
    private func encode(
        _ v: StoreValue, _ a: AttributeDescription, record: Record
    ) throws(StoreError) -> CoreDataWritableDatabase.Value {
        switch v {
        case .null: return .null
        case .integer16(let i): return .integer(Int64(i))
        case .integer32(let i): return .integer(Int64(i))
        case .integer64(let i): return .integer(i)
        // [unverified] Core Data was seen storing REAL values in DECIMAL columns. The double is parsed from the
        // decimal's text: NSDecimalNumber's doubleValue can be off in the last bits, and the reader turns the
        // stored double back into its shortest text, so only the nearest double round-trips.
        case .decimal(let d):
            guard let real = Double(d.description) else {
                throw .typeMismatch(entity: record.entity, property: a.name, expected: .decimal, got: "\(d)")
            }
            return .real(real)
        case .double(let d): return .real(d)
        case .float(let f): return .real(Double(f))
        case .string(let s): return .text(s)
        case .boolean(let b): return .integer(b ? 1 : 0)
        case .date(let d): return .real(d.timeIntervalSinceReferenceDate)
        case .binary(let data):
            // A value that may be stored externally is written inline behind its marker (CoreDataExternalData).
            return .blob(a.allowsExternalBinaryDataStorage ? CoreDataExternalData.inlineColumn(data) : Array(data))
        case .uuid(let u):
            let b = u.uuid
            return .blob([b.0, b.1, b.2, b.3, b.4, b.5, b.6, b.7, b.8, b.9, b.10, b.11, b.12, b.13, b.14, b.15])
        case .uri(let u): return .text(u.absoluteString)
        }
    }
}
