import CSQLite
import Foundation
@_spi(BackendKit) import StoreAPI

/// The statements an open Core Data store runs, prepared once per SQL text and kept for the life of the store, over
/// the connection it reads through (read-only, or the writer's, so that reads see the store's own writes).
///
/// A store runs the same few statements for every page and every save; preparing them again each time would cost
/// more than running them. Not thread-safe: the owning store serialises its use.
final class CoreDataConnection {
    let url: URL
    private let handle: OpaquePointer
    private var statements: [String: OpaquePointer] = [:]
    /// The statements used last, newest first, looked up before `statements`: a bulk load runs the same few
    /// statements for every row, and comparing their (usually identical) text is far cheaper than hashing it.
    private var recent: [(sql: String, statement: OpaquePointer)] = []
    private static let recentLimit = 8
    /// Keeps the connection's owner (which closes it) alive while statements are prepared on it.
    private let owner: AnyObject

    init(url: URL, handle: OpaquePointer, owner: AnyObject) {
        self.url = url
        self.handle = handle
        self.owner = owner
    }

    deinit { finalize() }

    /// Releases every prepared statement; the connection can then be closed.
    func finalize() {
        for s in statements.values { sqlite3_finalize(s) }
        statements = [:]
        recent = []
    }

    private func failure(_ sql: String) -> StoreError {
        .io(url, operation: sql, reason: String(cString: sqlite3_errmsg(handle)))
    }

    /// The statement for `sql`, prepared on first use.
    func statement(_ sql: String) throws(StoreError) -> OpaquePointer {
        if let at = recent.firstIndex(where: { $0.sql == sql }) {
            // To the front by one swap: a save alternates between a few statements per row, and moving every entry
            // down for each of them cost more than the look-up.
            if at > 0 { recent.swapAt(0, at) }
            return recent[0].statement
        }
        let s = try prepared(sql)
        if recent.count >= Self.recentLimit { recent.removeLast() }
        recent.insert((sql, s), at: 0)
        return s
    }

    /// The statement for `sql` from the full cache, prepared on first use.
    private func prepared(_ sql: String) throws(StoreError) -> OpaquePointer {
        if let s = statements[sql] { return s }
        var prepared: OpaquePointer?
        guard sqlite3_prepare_v3(handle, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &prepared, nil) == SQLITE_OK,
            let s = prepared
        else {
            sqlite3_finalize(prepared)
            throw failure(sql)
        }
        statements[sql] = s
        return s
    }

    /// Binds `values`, calls `row` for every row `sql` produces (the statement positioned on it), and resets the
    /// statement, also when `row` throws.
    func query(_ sql: String, _ values: [SQLiteValue] = [], row: (OpaquePointer) throws -> Void) throws {
        let s = try statement(sql)
        sqlite3_reset(s)
        Self.clearUnbound(s, values.count)
        defer { sqlite3_reset(s) }
        guard SQLiteValue.bind(values, to: s) == SQLITE_OK else { throw failure(sql) }
        while true {
            let rc = sqlite3_step(s)
            if rc == SQLITE_DONE { return }
            guard rc == SQLITE_ROW else { throw failure(sql) }
            try row(s)
        }
    }

    /// Clears the parameters of `s` that `bound` values will not set (what a statement used before bound stays
    /// bound otherwise); when every parameter gets a value, clearing them all first is wasted work per row.
    private static func clearUnbound(_ s: OpaquePointer, _ bound: Int) {
        if bound < Int(sqlite3_bind_parameter_count(s)) { sqlite3_clear_bindings(s) }
    }

    /// Runs a statement that returns no rows; returns how many rows it changed.
    @discardableResult
    func run(_ sql: String, _ values: [SQLiteValue] = []) throws(StoreError) -> Int {
        try run(sql, values, bind: { (_: OpaquePointer) throws(StoreError) in })
    }

    /// Runs a statement that returns no rows after binding `values` and then calling `bind`, which binds more
    /// parameters (or binds some again) straight from bytes the caller holds; returns how many rows it changed.
    @discardableResult
    func run(
        _ sql: String, _ values: [SQLiteValue], then bind: ((OpaquePointer) throws(StoreError) -> Void)?
    ) throws(StoreError) -> Int {
        guard let bind else { return try run(sql, values, bind: { (_: OpaquePointer) throws(StoreError) in }) }
        return try run(sql, values, bind: { (s) throws(StoreError) in try bind(s) })
    }

    /// ``run(_:_:then:)`` with a closure that does not escape (no context allocated per row).
    @discardableResult
    func run(
        _ sql: String, _ values: [SQLiteValue], bind: (OpaquePointer) throws(StoreError) -> Void
    ) throws(StoreError) -> Int {
        let s = try statement(sql)
        sqlite3_reset(s)
        Self.clearUnbound(s, values.count)
        defer { sqlite3_reset(s) }
        guard SQLiteValue.bind(values, to: s) == SQLITE_OK else { throw failure(sql) }
        try bind(s)
        var rc = sqlite3_step(s)
        while rc == SQLITE_ROW { rc = sqlite3_step(s) }
        guard rc == SQLITE_DONE else { throw failure(sql) }
        return Int(sqlite3_changes(handle))
    }

    /// Runs `sql` with its parameters bound by `bind`, which binds every one of them: nothing is left to clear from
    /// the run before. Returns the number of rows changed.
    @discardableResult
    func run(_ sql: String, bindingEvery bind: (OpaquePointer) throws(StoreError) -> Void) throws(StoreError) -> Int {
        try run(try statement(sql), sql: sql, bindingEvery: bind)
    }

    /// ``run(_:bindingEvery:)`` with the statement `statement(sql)` returned, looked up once by a caller that runs it
    /// for every row of a page (the statement lives as long as the connection).
    @discardableResult
    func run(
        _ s: OpaquePointer, sql: String, bindingEvery bind: (OpaquePointer) throws(StoreError) -> Void
    ) throws(StoreError) -> Int {
        sqlite3_reset(s)
        defer { sqlite3_reset(s) }
        try bind(s)
        var rc = sqlite3_step(s)
        while rc == SQLITE_ROW { rc = sqlite3_step(s) }
        guard rc == SQLITE_DONE else { throw failure(sql) }
        return Int(sqlite3_changes(handle))
    }

    /// Runs `s` (`statement(sql)`, a statement writing several rows) once, after `bind` binds every parameter:
    /// `false` when `bind` returns `false` or a constraint stops the statement — nothing of it is then kept (SQLite
    /// undoes a failed statement's changes), and the caller writes its rows one by one for the error of the row at
    /// fault. Any other failure is thrown. Returns the rows the statement changed, `nil` when it was not run.
    func runBatch(_ s: OpaquePointer, sql: String, bind: (OpaquePointer) -> Bool) throws(StoreError) -> Int? {
        sqlite3_reset(s)
        defer { sqlite3_reset(s) }
        guard bind(s) else { return nil }
        var rc = sqlite3_step(s)
        while rc == SQLITE_ROW { rc = sqlite3_step(s) }
        if rc == SQLITE_DONE { return Int(sqlite3_changes(handle)) }
        if rc & 0xff == SQLITE_CONSTRAINT { return nil }
        throw failure(sql)
    }

    /// Runs `sql`, which returns no rows and takes only integer parameters, once for each of `count` rows: `row(i,
    /// bind)` binds row `i`'s values, calling `bind(parameter, value)` for each. A bulk load writes a join row per
    /// pair this way, without a value array per row.
    @discardableResult
    func run(
        _ sql: String, rows count: Int, _ row: (_ i: Int, _ bind: (Int32, Int64) -> Void) throws(StoreError) -> Void
    ) throws(StoreError) -> Int {
        try run(try statement(sql), sql: sql, rows: count, row)
    }

    /// ``run(_:rows:_:)`` with the statement `statement(sql)` looked up once by a caller that runs it for every
    /// record of a page (the statement lives as long as the connection). Returns the rows the runs changed, each
    /// counted as ``run(_:_:)`` counts them (triggers' changes not included).
    @discardableResult
    func run(
        _ s: OpaquePointer, sql: String, rows count: Int,
        _ row: (_ i: Int, _ bind: (Int32, Int64) -> Void) throws(StoreError) -> Void
    ) throws(StoreError) -> Int {
        sqlite3_reset(s)
        defer { sqlite3_reset(s) }
        var rc = SQLITE_OK
        var changed = 0
        for i in 0..<count {
            try row(i) { parameter, value in
                if rc == SQLITE_OK { rc = sqlite3_bind_int64(s, parameter, value) }
            }
            guard rc == SQLITE_OK else { throw failure(sql) }
            var step = sqlite3_step(s)
            while step == SQLITE_ROW { step = sqlite3_step(s) }
            guard step == SQLITE_DONE else { throw failure(sql) }
            changed += Int(sqlite3_changes(handle))
            sqlite3_reset(s)
        }
        return changed
    }

    /// The integer in the first column of the first row of `sql`, which takes one integer parameter, `key`; `nil`
    /// when there is no row or the value is NULL. Without the value array and closure of ``integer(_:_:)``: a bulk
    /// load looks up one per row.
    func integer(_ sql: String, key: Int64) throws(StoreError) -> Int64? {
        let s = try statement(sql)
        sqlite3_reset(s)
        defer { sqlite3_reset(s) }
        guard sqlite3_bind_int64(s, 1, key) == SQLITE_OK else { throw failure(sql) }
        switch sqlite3_step(s) {
        case SQLITE_ROW: return sqlite3_column_type(s, 0) == SQLITE_NULL ? nil : sqlite3_column_int64(s, 0)
        case SQLITE_DONE: return nil
        default: throw failure(sql)
        }
    }

    /// The first column of the first row of `sql`, as an integer.
    func integer(_ sql: String, _ values: [SQLiteValue] = []) throws -> Int64? {
        var out: Int64?
        try query(sql, values) { s in
            if out == nil, sqlite3_column_type(s, 0) != SQLITE_NULL { out = sqlite3_column_int64(s, 0) }
        }
        return out
    }

    /// The extended result code of the last failure (to tell a uniqueness violation from other errors).
    var lastExtendedError: Int32 { sqlite3_extended_errcode(handle) }

    /// The column names of `table`, in order; empty when there is no such table.
    func columns(of table: String) throws -> [String] {
        var names: [String] = []
        try query("PRAGMA table_info(\(CoreDataSQL.quoted(table)))") { s in
            if let text = sqlite3_column_text(s, 1) { names.append(String(cString: text)) }
        }
        return names
    }
}

/// SQL text helpers shared by the store's readers and writers.
enum CoreDataSQL {
    /// `name` as a quoted SQL identifier.
    static func quoted(_ name: String) -> String {
        // Statements are built per save and per page: the common name without a quote skips Foundation's search.
        guard name.utf8.contains(UInt8(ascii: "\"")) else { return "\"" + name + "\"" }
        return "\"" + name.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }

    /// `?, ?, …` for `count` parameters.
    static func placeholders(_ count: Int) -> String {
        // Built for every list of keys read: repeating one piece costs far less than joining an array of them.
        count <= 0 ? "" : String(repeating: "?, ", count: count - 1) + "?"
    }

    /// The most keys in one `IN (…)` list: well under SQLite's parameter limit.
    static let chunk = 500

    /// `keys` in chunks of at most ``chunk`` values, each padded (with its own last key) to 1, 16 or ``chunk``
    /// values, so that a few statement texts serve every list and stay prepared.
    static func chunks(_ keys: [Int64]) -> [[SQLiteValue]] {
        var out: [[SQLiteValue]] = []
        var start = 0
        while start < keys.count {
            let remaining = keys.count - start
            let size = remaining <= 1 ? 1 : remaining <= 16 ? 16 : chunk
            var values = keys[start..<min(keys.count, start + size)].map { SQLiteValue.integer($0) }
            if let last = values.last, values.count < size {
                values += Array(repeating: last, count: size - values.count)
            }
            out.append(values)
            start += size
        }
        return out
    }
}
