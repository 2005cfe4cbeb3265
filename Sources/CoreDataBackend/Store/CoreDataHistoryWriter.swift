import CSQLite
import Foundation
@_spi(BackendKit) import StoreAPI

/// Writes a save's history transactions into Core Data's persistent-history tables, inside the save's transaction,
/// as Core Data writes its own (format reference §6), so that Core Data's history consumers (CloudKit mirroring, app
/// extensions) and the framework's sync see the records this framework saves:
///
/// - one `ATRANSACTION` row per transaction: `Z_PK` = the token (``HistoryTransaction/assignToken`` takes the next
///   one; a given token must come after the store's last), `ZTIMESTAMP` in seconds since 2001, the author through
///   `ZAUTHORTS` → `ATRANSACTIONSTRING.ZNAME` (strings are interned: one row per distinct string, as Core Data's
///   unique index on `ZNAME` requires); the context name, process name and bundle identifier the same way through
///   `ZCONTEXTNAMETS`, `ZPROCESSIDTS` and `ZBUNDLEIDTS`. A transaction carried from another store keeps the names it
///   has; a new one (its token assigned here) without a process name names this process and its bundle, as Core
///   Data does.
/// - one `ACHANGE` row per change: `ZCHANGETYPE` 0 insert, 1 update, 2 delete, `ZENTITY` the record's `Z_ENT`,
///   `ZENTITYPK` its `Z_PK`, `ZTRANSACTIONID` the transaction's token; `ZCOLUMNS` NULL except for an update, whose
///   changed keys are a bitmap in ``CoreDataHistoryColumns``'s unverified layout.
/// - `Z_PRIMARYKEY.Z_MAX` of `CHANGE`, `TRANSACTION` and `TRANSACTIONSTRING` (16001–16003) raised to the last key.
/// - A change's global identifier that is not the derived one is kept in ``CoreDataGlobalIDTable`` when no row
///   holds the record's key (a delete's, whose row went with the record), so the history names the record by it.
///
/// What Core Data's tables cannot hold is dropped: the framework's tombstones (uniqueness-constrained values of a
/// deleted record) have no place (Core Data's `ZTOMBSTONE<n>` columns hold attributes preserved after deletion,
/// and their layout is unknown: none is written, and a created store has none). Only the columns the store's tables
/// have are written (Core Data added columns over the years).
///
/// A store without the history tables gets them, with their `Z_PRIMARYKEY` rows, from the first save with history,
/// as Core Data adds them when a store is first opened with history tracking (a save carries history only when
/// the caller tracks it: `StoreOptions.historyTracking`, an import with an author, a transfer of a store that has
/// history). [unverified] Core Data is said to open a store that has history tables read-only when the app does not
/// ask for history tracking.
struct CoreDataHistoryWriter {
    let db: CoreDataConnection
    let url: URL
    let schema: Schema
    let plan: CoreDataWritePlan
    let globalIDs: CoreDataGlobalIDWriter

    static let changeEntity: Int64 = 16001
    static let transactionEntity: Int64 = 16002
    static let stringEntity: Int64 = 16003

    func write(_ transactions: [HistoryTransaction]) throws {
        guard !transactions.isEmpty else { return }
        if try db.integer("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'ATRANSACTION'") != 1 {
            try createTables()
        }
        let transactionColumns = Set(try db.columns(of: "ATRANSACTION"))
        let changeColumns = Set(try db.columns(of: "ACHANGE"))
        var lastTransaction = try next(table: "ATRANSACTION", entity: Self.transactionEntity) - 1
        var nextChange = try next(table: "ACHANGE", entity: Self.changeEntity)
        var strings = Strings(next: try next(table: "ATRANSACTIONSTRING", entity: Self.stringEntity))
        for t in transactions {
            let isNew = t.token == HistoryTransaction.assignToken
            let token = isNew ? lastTransaction + 1 : t.token
            guard token > lastTransaction else {
                throw StoreError.io(url, operation: "appending history", reason: "token \(token) is not after \(lastTransaction)")
            }
            lastTransaction = token
            var row: [(String, SQLiteValue)] = [
                ("Z_PK", .integer(token)), ("Z_ENT", .integer(Self.transactionEntity)),
                ("ZTIMESTAMP", .real(t.timestamp.timeIntervalSinceReferenceDate)),
            ]
            // A new transaction saved without a process name (not through a context) names this process.
            let process = t.processName ?? (isNew ? ProcessInfo.processInfo.processName : nil)
            let bundle = t.bundleIdentifier ?? (isNew && t.processName == nil ? Bundle.main.bundleIdentifier : nil)
            for (column, name) in [("ZAUTHORTS", t.author), ("ZCONTEXTNAMETS", t.contextName), ("ZPROCESSIDTS", process),
                                   ("ZBUNDLEIDTS", bundle)] {
                if let name { row.append((column, .integer(try strings.key(name, db)))) }
            }
            try insert("ATRANSACTION", row.filter { transactionColumns.contains($0.0) })
            for change in t.changes {
                let entity = try schema.requireEntity(change.entity)
                guard let number = plan.entities[entity.name]?.number else {
                    throw StoreError.unsupported("\(url.path): entity \(entity.name) has no table in this store")
                }
                let type: Int64
                var columns = SQLiteValue.null
                switch change.kind {
                case .insert: type = 0
                case .update:
                    type = 1
                    if let bitmap = CoreDataHistoryColumns.bitmap(change.changedKeys, of: entity) { columns = .blob(bitmap) }
                case .delete: type = 2
                }
                try insert("ACHANGE", [
                    ("Z_PK", .integer(nextChange)), ("Z_ENT", .integer(Self.changeEntity)), ("ZCHANGETYPE", .integer(type)),
                    ("ZENTITY", .integer(number)), ("ZENTITYPK", .integer(change.primaryKey)),
                    ("ZTRANSACTIONID", .integer(token)), ("ZCOLUMNS", columns),
                ].filter { changeColumns.contains($0.0) })
                nextChange += 1
                try globalIDs.named(change.globalID, root: entity.rootName, primaryKey: change.primaryKey, db)
            }
        }
        for (entity, last) in [(Self.transactionEntity, lastTransaction), (Self.changeEntity, nextChange - 1),
                               (Self.stringEntity, strings.next - 1)] {
            try db.run("UPDATE Z_PRIMARYKEY SET Z_MAX = max(ifnull(Z_MAX, 0), ?) WHERE Z_ENT = ?", [.integer(last), .integer(entity)])
        }
    }

    /// The key after the highest of `table`'s keys and its `Z_PRIMARYKEY.Z_MAX`.
    private func next(table: String, entity: Int64) throws -> Int64 {
        let stored = try db.integer("SELECT Z_MAX FROM Z_PRIMARYKEY WHERE Z_ENT = ?", [.integer(entity)]) ?? 0
        let highest = try db.integer("SELECT max(Z_PK) FROM \(CoreDataSQL.quoted(table))") ?? 0
        return max(stored, highest) + 1
    }

    private func insert(_ table: String, _ row: [(String, SQLiteValue)]) throws {
        let names = row.map { CoreDataSQL.quoted($0.0) }.joined(separator: ", ")
        try db.run("INSERT INTO \(table) (\(names)) VALUES (\(CoreDataSQL.placeholders(row.count)))", row.map(\.1))
    }

    /// Core Data's history tables, indexes and `Z_PRIMARYKEY` rows, for a store that has none.
    private func createTables() throws {
        for statement in CoreDataLayout.historyStatements { try db.run(statement) }
        for r in CoreDataLayout.historyPrimaryKeyRows {
            try db.run("INSERT OR IGNORE INTO Z_PRIMARYKEY (Z_ENT, Z_NAME, Z_SUPER, Z_MAX) VALUES (?, ?, ?, ?)",
                       [.integer(r.entityNumber), .text(r.name), .integer(r.superNumber), .integer(r.maxPrimaryKey)])
        }
    }

    /// `ATRANSACTIONSTRING` keys by string, looked up or added.
    private struct Strings {
        var next: Int64
        var known: [String: Int64] = [:]

        mutating func key(_ s: String, _ db: CoreDataConnection) throws -> Int64 {
            if let k = known[s] { return k }
            let k: Int64
            if let stored = try db.integer("SELECT Z_PK FROM ATRANSACTIONSTRING WHERE ZNAME = ?", [.text(s)]) {
                k = stored
            } else {
                k = next
                next += 1
                try db.run("INSERT INTO ATRANSACTIONSTRING (Z_PK, Z_ENT, ZNAME) VALUES (?, ?, ?)",
                           [.integer(k), .integer(CoreDataHistoryWriter.stringEntity), .text(s)])
            }
            known[s] = k
            return k
        }
    }
}
