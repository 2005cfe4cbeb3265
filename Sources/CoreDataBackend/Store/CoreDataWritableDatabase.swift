import CSQLite
import Foundation
@_spi(BackendKit) import StoreAPI

/// The read-write connection of a writable Core Data store.
///
/// It registers no-op functions named like the ones Core Data's derived-attribute triggers call
/// (`NSCoreDataDATriggerUpdatedAffectedObjectValue`, `NSCoreDataDATriggerInsertUpdatedAffectedObjectValue`): only
/// Core Data registers them, and without them every write to a table with such a trigger fails with "no such
/// function". The triggers' own SQL still maintains the derived columns.
final class CoreDataWritableDatabase {
    typealias Value = SQLiteValue

    static let triggerFunctions = [
        "NSCoreDataDATriggerUpdatedAffectedObjectValue", "NSCoreDataDATriggerInsertUpdatedAffectedObjectValue",
    ]

    private var db: OpaquePointer?
    let url: URL

    init(_ url: URL) throws(StoreError) {
        self.url = url
        var handle: OpaquePointer?
        let rc = sqlite3_open_v2(url.path, &handle, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, nil)
        guard rc == SQLITE_OK, let handle else {
            let message = handle.map { String(cString: sqlite3_errmsg($0)) } ?? String(cString: sqlite3_errstr(rc))
            if let handle { sqlite3_close_v2(handle) }
            throw .io(url, operation: "opening the store for writing", reason: message)
        }
        db = handle
        sqlite3_busy_timeout(handle, 5000)
        for name in Self.triggerFunctions {
            let registered = sqlite3_create_function_v2(
                handle, name, -1, SQLITE_UTF8, nil, { context, _, _ in sqlite3_result_null(context) }, nil, nil, nil)
            guard registered == SQLITE_OK else {
                let message = String(cString: sqlite3_errmsg(handle))
                sqlite3_close_v2(handle)
                db = nil
                throw .io(url, operation: "registering \(name)", reason: message)
            }
        }
    }

    deinit {
        if let db { sqlite3_close_v2(db) }
    }

    /// The connection while open, for statements an open store prepares once and keeps (see `CoreDataConnection`).
    var handle: OpaquePointer? { db }

    /// The extended result code of the last failure (to tell a uniqueness violation from other errors).
    var lastExtendedError: Int32 { db.map { sqlite3_extended_errcode($0) } ?? SQLITE_MISUSE }

    private func fail(_ operation: String) -> StoreError {
        let message = db.map { String(cString: sqlite3_errmsg($0)) } ?? "closed"
        return .io(url, operation: operation, reason: message)
    }

    func execute(_ sql: String) throws(StoreError) {
        guard let db, sqlite3_exec(db, sql, nil, nil, nil) == SQLITE_OK else { throw fail(sql) }
    }

    /// A statement prepared once and run for many rows.
    final class Statement {
        let stmt: OpaquePointer
        let sql: String
        init(stmt: OpaquePointer, sql: String) {
            self.stmt = stmt
            self.sql = sql
        }
        deinit { sqlite3_finalize(stmt) }
    }

    func prepare(_ sql: String) throws(StoreError) -> Statement {
        guard let db else { throw fail(sql) }
        var statement: OpaquePointer?
        guard sqlite3_prepare_v2(db, sql, -1, &statement, nil) == SQLITE_OK, let stmt = statement else {
            sqlite3_finalize(statement)
            throw fail(sql)
        }
        return Statement(stmt: stmt, sql: sql)
    }

    /// Binds `values` and steps the statement to its end; returns the rows it produced.
    @discardableResult
    func run(_ statement: Statement, _ values: [Value]) throws(StoreError) -> [[Value]] {
        let stmt = statement.stmt
        sqlite3_reset(stmt)
        sqlite3_clear_bindings(stmt)
        guard SQLiteValue.bind(values, to: stmt) == SQLITE_OK else { throw fail(statement.sql) }
        var rows: [[Value]] = []
        while true {
            let step = sqlite3_step(stmt)
            if step == SQLITE_DONE { break }
            guard step == SQLITE_ROW else { throw fail(statement.sql) }
            let row = SQLiteValue.row(of: stmt)
            rows.append(row)
        }
        sqlite3_reset(stmt)
        return rows
    }

    @discardableResult
    func run(_ sql: String, _ values: [Value] = []) throws(StoreError) -> [[Value]] {
        try run(try prepare(sql), values)
    }

    func close() {
        guard let handle = db else { return }
        db = nil
        sqlite3_close_v2(handle)
    }
}
