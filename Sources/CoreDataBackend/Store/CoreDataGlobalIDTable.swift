import CSQLite
import Foundation
@_spi(BackendKit) import StoreAPI

/// The global identifiers a Core Data store keeps beside its records when they are not the derived ones
/// (``CoreDataGlobalID``): a record inserted with an identifier of its own (converted from a store whose records have
/// random ones, received from a sync peer) reads back with it.
///
/// One table, `STOREKIT_GLOBALID`, holds only those records: `(ROOT, PK)` → `GLOBALID`, the root entity's name (the
/// table a record lives in; a name, not a `Z_ENT`, so a renumbered model still finds it), the record's `Z_PK`, and
/// the identifier's 16 bytes. The primary key is `(ROOT, PK)` and a unique index (`STOREKIT_GLOBALID_ID`) covers
/// `GLOBALID`, so either way is one lookup and no identifier is held twice. The name is one no Core Data table can
/// have: Core Data's own tables begin with `Z` (entities, `Z_PRIMARYKEY`, `Z_METADATA`, join tables) or `A`
/// (persistent history, CloudKit's `ANSCK…`).
///
/// - The table is created by the first save that inserts a record with a non-derived identifier, in that save's
///   transaction: a store whose records all have derived identifiers (every store Core Data wrote, every corpus
///   store converted away and back) keeps exactly Core Data's layout.
/// - Reads look a page's keys up in one query, only when the store has the table; a record without a row has its
///   derived identifier.
/// - Deleting a record here removes its row. Core Data knows nothing of the table, so its own deletes leave rows
///   behind; such a stale row is harmless: Core Data never gives a `Z_PK` out twice (new keys come from
///   `Z_PRIMARYKEY.Z_MAX`, which only grows), so no later record can pick it up, and a read only looks up the keys
///   it has rows for. A save that inserts a key or an identifier a stale row holds replaces that row.
/// - [unverified] Core Data opening a store with a table it did not write: it is known to open stores carrying tables
///   of features it was not asked to use (persistent-history `A…` tables without history tracking, CloudKit's
///   `ANSCK…` tables without mirroring), and it reads its tables by name; that it ignores a table of a name it never
///   uses has not been checked on an Apple platform.
enum CoreDataGlobalIDTable {
    /// The table's name.
    static let name = "STOREKIT_GLOBALID"

    static let createSQL = "CREATE TABLE IF NOT EXISTS STOREKIT_GLOBALID (ROOT TEXT NOT NULL, PK INTEGER NOT NULL, "
        + "GLOBALID BLOB NOT NULL, PRIMARY KEY (ROOT, PK)) WITHOUT ROWID"

    /// The unique index on the identifiers (a bulk load creates it when the load finishes, from one sort).
    static let indexSQL = "CREATE UNIQUE INDEX IF NOT EXISTS STOREKIT_GLOBALID_ID ON STOREKIT_GLOBALID (GLOBALID)"

    static func blob(_ id: UUID) -> SQLiteValue {
        let b = id.uuid
        return .blob([b.0, b.1, b.2, b.3, b.4, b.5, b.6, b.7, b.8, b.9, b.10, b.11, b.12, b.13, b.14, b.15])
    }

    /// Column `column` of the current row as an identifier; `nil` when it is not 16 bytes (such a row is ignored,
    /// and reported by verify).
    static func uuid(_ s: OpaquePointer, _ column: Int32) -> UUID? {
        guard sqlite3_column_type(s, column) == SQLITE_BLOB, sqlite3_column_bytes(s, column) == 16,
            let p = sqlite3_column_blob(s, column)
        else { return nil }
        let b = UnsafeRawBufferPointer(start: p, count: 16)
        return UUID(uuid: (b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]))
    }

    /// The kept identifiers of the records of `root` that the keys of `keySQL` (a `SELECT Z_PK …` with `bindings`)
    /// name, by key: one query.
    static func lookup(
        _ c: CoreDataConnection, root: String, keySQL: String, _ bindings: [SQLiteValue]
    ) throws -> [Int64: UUID] {
        var out: [Int64: UUID] = [:]
        try c.query("SELECT PK, GLOBALID FROM STOREKIT_GLOBALID WHERE ROOT = ? AND PK IN (\(keySQL))",
                    [.text(root)] + bindings) { s in
            if let id = uuid(s, 1) { out[sqlite3_column_int64(s, 0)] = id }
        }
        return out
    }

    /// `records` (all of `root`'s table) with their kept identifiers, looked up in one query per chunk of keys.
    static func apply(_ c: CoreDataConnection, root: String, to records: inout [Record]) throws {
        var ids: [Int64: UUID] = [:]
        for chunk in CoreDataSQL.chunks(records.map(\.primaryKey)) {
            ids.merge(try lookup(c, root: root, keySQL: CoreDataSQL.placeholders(chunk.count), chunk)) { $1 }
        }
        guard !ids.isEmpty else { return }
        for i in records.indices {
            if let id = ids[records[i].primaryKey] { records[i].globalID = id }
        }
    }

    /// The kept identifiers of `keys` (by root entity), read through `db` (the history's connection), when the
    /// store has the table.
    static func kept(_ db: ReadOnlyDatabase, keys: [String: Set<Int64>]) throws(StoreError) -> [String: [Int64: UUID]] {
        guard !keys.isEmpty, try db.tableNames().contains(name) else { return [:] }
        var out: [String: [Int64: UUID]] = [:]
        for (root, set) in keys {
            let literal = "'" + root.replacingOccurrences(of: "'", with: "''") + "'"
            let sorted = set.sorted()
            for start in stride(from: 0, to: sorted.count, by: CoreDataSQL.chunk) {
                let list = sorted[start..<min(sorted.count, start + CoreDataSQL.chunk)].map(String.init).joined(separator: ", ")
                for r in try db.rows("SELECT PK, GLOBALID FROM STOREKIT_GLOBALID WHERE ROOT = \(literal) AND PK IN (\(list))") {
                    guard r.count == 2, let pk = r[0].int, case .blob(let b) = r[1], b.count == 16 else { continue }
                    out[root, default: [:]][pk] = UUID(uuid: (b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7],
                                                             b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]))
                }
            }
        }
        return out
    }
}

/// Keeps the global identifiers of a save's records in ``CoreDataGlobalIDTable``, inside the save's transaction.
/// Shared by the open store's saves (a class): it knows whether the table exists, and makes the derived identifiers
/// to compare with.
final class CoreDataGlobalIDWriter {
    private let storeUUID: UUID
    /// Whether the store has the table (read when the store opens; set by the save that creates it).
    var tableExists: Bool
    private var makers: [String: CoreDataGlobalID.Maker] = [:]
    /// The maker used last and its root, kept apart: an optional pair of them was copied out, and its strings and
    /// array retained, for every record.
    private var lastRoot: String?
    private var lastMaker: CoreDataGlobalID.Maker?

    init(storeUUID: UUID, tableExists: Bool) {
        self.storeUUID = storeUUID
        self.tableExists = tableExists
    }

    /// Records that record `primaryKey` of hierarchy `root` was inserted with `globalID`: a row when that is not the
    /// derived identifier, else no row (a stale one for its key removed). `isBulkLoad` leaves the unique index to the
    /// load's end.
    func inserted(_ globalID: UUID, primaryKey: Int64, root: String, _ c: CoreDataConnection, isBulkLoad: Bool) throws {
        try kept(globalID, primaryKey: primaryKey, root: root, isDerived: isDerived(globalID, root: root, primaryKey: primaryKey),
                 c, isBulkLoad: isBulkLoad)
    }

    /// ``inserted(_:primaryKey:root:_:isBulkLoad:)`` for every record of a page (all of hierarchy `root`), with its
    /// root's maker looked up once.
    func inserted(_ globalIDs: [UUID], primaryKeys: [Int64], root: String, _ c: CoreDataConnection, isBulkLoad: Bool) throws {
        let maker = self.maker(root)
        for (id, key) in zip(globalIDs, primaryKeys) {
            let derived = maker.isDerived(id, key)
            if derived, !tableExists { continue }
            try kept(id, primaryKey: key, root: root, isDerived: derived, c, isBulkLoad: isBulkLoad)
        }
    }

    private func kept(
        _ globalID: UUID, primaryKey: Int64, root: String, isDerived: Bool, _ c: CoreDataConnection, isBulkLoad: Bool
    ) throws {
        if isDerived {
            if tableExists { try removed(root: root, primaryKey: primaryKey, c) }
            return
        }
        try createTable(c, isBulkLoad: isBulkLoad)
        // REPLACE: a stale row (a record Core Data deleted) holding this key or this identifier goes.
        try c.run("INSERT OR REPLACE INTO STOREKIT_GLOBALID (ROOT, PK, GLOBALID) VALUES (?, ?, ?)",
                  [.text(root), .integer(primaryKey), CoreDataGlobalIDTable.blob(globalID)])
    }

    /// Keeps `id` for the record `root`/`primaryKey` that a history change names, when it is not the derived one
    /// and no row holds the key yet (the record was deleted, and its row with it) or the identifier.
    func named(_ id: UUID, root: String, primaryKey: Int64, _ c: CoreDataConnection) throws {
        guard !isDerived(id, root: root, primaryKey: primaryKey) else { return }
        try createTable(c, isBulkLoad: false)
        try c.run("INSERT OR IGNORE INTO STOREKIT_GLOBALID (ROOT, PK, GLOBALID) VALUES (?, ?, ?)",
                  [.text(root), .integer(primaryKey), CoreDataGlobalIDTable.blob(id)])
    }

    private func isDerived(_ id: UUID, root: String, primaryKey: Int64) -> Bool {
        // The maker used last first: records come in runs of one hierarchy, and comparing its name is cheaper than
        // hashing it. Stored only when new: writing it back for every record hashed the root's name a second time.
        if lastRoot == root, let derived = lastMaker?.isDerived(id, primaryKey) { return derived }
        let maker = self.maker(root)
        lastRoot = root
        lastMaker = maker
        return maker.isDerived(id, primaryKey)
    }

    private func maker(_ root: String) -> CoreDataGlobalID.Maker {
        if let maker = makers[root] { return maker }
        let maker = CoreDataGlobalID.Maker(store: storeUUID, root: root)
        makers[root] = maker
        return maker
    }

    private func createTable(_ c: CoreDataConnection, isBulkLoad: Bool) throws {
        guard !tableExists else { return }
        try c.run(CoreDataGlobalIDTable.createSQL)
        if !isBulkLoad { try c.run(CoreDataGlobalIDTable.indexSQL) }
        tableExists = true
    }

    /// Removes the row of a deleted record, if any.
    func removed(root: String, primaryKey: Int64, _ c: CoreDataConnection) throws {
        guard tableExists else { return }
        try c.run("DELETE FROM STOREKIT_GLOBALID WHERE ROOT = ? AND PK = ?", [.text(root), .integer(primaryKey)])
    }

    /// Creates the unique index a bulk load left out.
    func finishBulkLoad(_ c: CoreDataConnection) throws {
        if tableExists { try c.run(CoreDataGlobalIDTable.indexSQL) }
    }
}
