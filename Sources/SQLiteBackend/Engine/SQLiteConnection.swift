import CSQLite
import Foundation
import StoreAPI

/// SQLite's `SQLITE_TRANSIENT`: tells a bind call to copy the bytes before it returns.
let sqliteTransient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

/// One `sqlite3*` connection with a cache of prepared statements.
///
/// Not thread-safe by itself: ``SQLitePersistentStore`` serialises every use behind its lock, and the short-lived connections
/// of the backend's file operations never leave the call that opened them. It is `@unchecked Sendable` only so the
/// fallback predicate evaluator's resolver closure (which runs synchronously inside that lock) may capture it.
final class SQLiteConnection: @unchecked Sendable {
    let db: OpaquePointer
    /// The database file, for error messages.
    let url: URL
    let isReadOnly: Bool
    private var statements: [String: OpaquePointer] = [:]
    /// The statements used last, most recent first: bulk writes run one statement many times in a row, and reading
    /// a record with its relationships takes turns between a few; comparing texts (nothing when it is the same
    /// string, as statement texts made once with the layout are; a memcmp otherwise) is much cheaper than hashing
    /// a text for the cache each time.
    private var recent: [(sql: String, handle: OpaquePointer)] = []
    private static let recentLimit = 6
    private var isClosed = false

    /// Statements kept at most; generated fetch SQL is cached too, so the cache is bounded.
    private static let statementCacheLimit = 512

    private init(db: OpaquePointer, url: URL, isReadOnly: Bool) {
        self.db = db
        self.url = url
        self.isReadOnly = isReadOnly
    }

    /// Opens `url` (never creating it unless `create` is true).
    ///
    /// `immutable` opens through a `file:` URI with `immutable=1`, for reading a store on read-only media whose
    /// `-shm` cannot be created; it must only be used when no `-wal` exists.
    static func open(
        _ url: URL, readOnly: Bool, create: Bool = false, timeout: Double, immutable: Bool = false
    ) throws -> SQLiteConnection {
        var handle: OpaquePointer?
        var flags = SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_EXRESCODE
        flags |= readOnly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE
        if create { flags |= SQLITE_OPEN_CREATE }
        var path = url.path
        if immutable {
            flags |= SQLITE_OPEN_URI
            var c = URLComponents()
            c.scheme = "file"
            c.path = url.path
            c.queryItems = [URLQueryItem(name: "immutable", value: "1")]
            path = c.string ?? url.path
        }
        let rc = sqlite3_open_v2(path, &handle, flags, nil)
        guard rc == SQLITE_OK, let db = handle else {
            var message = handle.map { String(cString: sqlite3_errmsg($0)) } ?? String(cString: sqlite3_errstr(rc))
            if let handle { sqlite3_close_v2(handle) }
            if rc & 0xFF == SQLITE_CANTOPEN && url.path.utf8.count > 512 {
                // The unix VFS's MAX_PATHNAME: nothing about the file is wrong, the path is too long for SQLite.
                message += " (the path is \(url.path.utf8.count) bytes; SQLite accepts at most 512)"
            }
            throw SQLiteConnection.mapError(rc, message: message, url: url, operation: "opening the database")
        }
        let connection = SQLiteConnection(db: db, url: url, isReadOnly: readOnly)
        sqlite3_busy_timeout(db, Int32(clamping: Int((max(0, timeout) * 1000).rounded())))
        sqlite3_extended_result_codes(db, 1)
        let registered = PredicateFunctions.register(db)
        guard registered == SQLITE_OK else {
            throw connection.error(registered, "registering the predicate functions")
        }
        return connection
    }

    /// Finalizes every statement and closes the connection. Idempotent.
    func close() {
        guard !isClosed else { return }
        isClosed = true
        for (_, s) in statements { sqlite3_finalize(s) }
        statements.removeAll()
        recent.removeAll()
        sqlite3_close_v2(db)
    }

    deinit { close() }

    // MARK: Errors

    /// The connection's last error as a ``StoreError``.
    /// Frees the page cache's unused pages, and on Linux hands the freed heap back to the system: a smaller
    /// `cache_size` alone leaves the pages in the allocator, where the process's resident size still counts them.
    func releaseMemory() {
        sqlite3_db_release_memory(db)
        #if os(Linux)
        malloc_trim(0)
        #endif
    }

    func error(_ rc: Int32, _ operation: String) -> StoreError {
        Self.mapError(rc, message: String(cString: sqlite3_errmsg(db)), url: url, operation: operation)
    }

    /// Maps an SQLite result code to the typed error a caller can act on.
    static func mapError(_ rc: Int32, message: String, url: URL, operation: String) -> StoreError {
        switch rc & 0xFF {
        case SQLITE_BUSY, SQLITE_LOCKED:
            return .locked(url, reason: "\(operation): \(message)")
        case SQLITE_READONLY:
            return .readOnly(url, reason: "\(operation): \(message)")
        case SQLITE_CORRUPT, SQLITE_NOTADB:
            return .corruptStore(url, reason: "\(operation): \(message)")
        case SQLITE_PERM, SQLITE_AUTH:
            return .readOnly(url, reason: "\(operation): \(message)")
        default:
            return .io(url, operation: operation, reason: "\(message) (SQLite code \(rc))")
        }
    }

    // MARK: Executing

    /// Runs one or more statements without results.
    func exec(_ sql: String, _ operation: String? = nil) throws {
        var message: UnsafeMutablePointer<CChar>?
        let rc = sqlite3_exec(db, sql, nil, nil, &message)
        if rc != SQLITE_OK {
            let text = message.map { String(cString: $0) } ?? String(cString: sqlite3_errmsg(db))
            sqlite3_free(message)
            throw Self.mapError(rc, message: text, url: url, operation: operation ?? "running \(sql.prefix(60))")
        }
    }

    /// Prepares `sql` (cached) and runs `body` with it, resetting the statement afterwards. A statement already in
    /// use further up the stack gets a fresh, uncached twin, so nested queries never disturb each other.
    /// `clearingBindings`: whether the bindings are cleared afterwards; a caller that binds every parameter each
    /// time passes `false`, and SQLite reuses what it allocated for the values last bound.
    func withStatement<T>(_ sql: String, clearingBindings: Bool = true, _ body: (Statement) throws -> T) throws -> T {
        if let i = recent.firstIndex(where: { $0.sql == sql }), sqlite3_stmt_busy(recent[i].handle) == 0 {
            let handle = recent[i].handle
            if i > 0 { recent.swapAt(i, i - 1) }  // drifts towards the front while it keeps being used
            defer { Self.reset(handle, clearingBindings: clearingBindings) }
            return try body(Statement(handle: handle, connection: self))
        }
        if let cached = statements[sql], sqlite3_stmt_busy(cached) == 0 {
            noteRecent(sql, cached)
            defer { Self.reset(cached, clearingBindings: clearingBindings) }
            return try body(Statement(handle: cached, connection: self))
        }
        let fresh = try prepare(sql)
        if statements[sql] == nil {
            if statements.count >= Self.statementCacheLimit { evictIdleStatements() }
            statements[sql] = fresh
            defer { Self.reset(fresh, clearingBindings: clearingBindings) }
            return try body(Statement(handle: fresh, connection: self))
        }
        defer { sqlite3_finalize(fresh) }
        return try body(Statement(handle: fresh, connection: self))
    }

    private static func reset(_ handle: OpaquePointer, clearingBindings: Bool) {
        sqlite3_reset(handle)
        if clearingBindings { sqlite3_clear_bindings(handle) }
    }

    private func noteRecent(_ sql: String, _ handle: OpaquePointer) {
        if recent.count >= Self.recentLimit { recent.removeLast() }
        recent.insert((sql, handle), at: 0)
    }

    private func evictIdleStatements() {
        recent.removeAll()
        for (sql, s) in statements where sqlite3_stmt_busy(s) == 0 {
            sqlite3_finalize(s)
            statements.removeValue(forKey: sql)
        }
    }

    private func prepare(_ sql: String) throws -> OpaquePointer {
        var handle: OpaquePointer?
        let rc = sqlite3_prepare_v3(db, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &handle, nil)
        guard rc == SQLITE_OK, let handle else {
            if let handle { sqlite3_finalize(handle) }
            throw error(rc, "preparing \(sql.prefix(80))")
        }
        return handle
    }

    /// Runs `sql` and returns the first column of every row as text (for pragmas).
    func textRows(_ sql: String) throws -> [String] {
        try withStatement(sql) { s in
            var rows: [String] = []
            while try s.step() { rows.append(s.columnIsNull(0) ? "NULL" : s.text(0)) }
            return rows
        }
    }

    /// Runs `sql` and returns the first column of the first row as an integer.
    func int64(_ sql: String) throws -> Int64? {
        try withStatement(sql) { s in try s.step() ? (s.columnIsNull(0) ? nil : s.int64(0)) : nil }
    }

    // MARK: Transactions

    /// Runs `body` inside a transaction: `BEGIN IMMEDIATE` for writes (taking the write lock up front, so two
    /// writers never deadlock upgrading), a deferred `BEGIN` for reads (one consistent snapshot for every query of
    /// the call). Rolls back when `body` throws.
    func transaction<T>(write: Bool, _ body: () throws -> T) throws -> T {
        _ = try withStatement(write ? "BEGIN IMMEDIATE" : "BEGIN") { try $0.step() }
        do {
            let result = try body()
            _ = try withStatement("COMMIT") { try $0.step() }
            return result
        } catch {
            if sqlite3_get_autocommit(db) == 0 { _ = sqlite3_exec(db, "ROLLBACK", nil, nil, nil) }
            throw error
        }
    }

    /// The number of rows the last statement changed.
    var changes: Int { Int(sqlite3_changes(db)) }
}

/// A prepared statement borrowed from a ``SQLiteConnection`` for the duration of one call.
struct Statement {
    let handle: OpaquePointer
    unowned let connection: SQLiteConnection

    // MARK: Binding (1-based)

    func bindNull(_ i: Int32) { sqlite3_bind_null(handle, i) }
    func bind(_ i: Int32, _ v: Int64) { sqlite3_bind_int64(handle, i, v) }
    func bind(_ i: Int32, _ v: Double) { sqlite3_bind_double(handle, i, v) }

    /// Binds text with its exact UTF-8 length, so embedded NUL characters survive.
    func bind(_ i: Int32, _ v: String) throws {
        var s = v
        let rc = s.withUTF8 { buf -> Int32 in
            if let base = buf.baseAddress, buf.count > 0 {
                return base.withMemoryRebound(to: CChar.self, capacity: buf.count) { p in
                    sqlite3_bind_text64(handle, i, p, UInt64(buf.count), sqliteTransient, UInt8(SQLITE_UTF8))
                }
            }
            return sqlite3_bind_text(handle, i, "", 0, sqliteTransient)
        }
        try check(rc, i)
    }

    /// Binds a blob; an empty one stays an empty blob (a null pointer would bind NULL).
    func bind(_ i: Int32, _ v: Data) throws {
        try v.withUnsafeBytes { try bind(i, bytes: $0) }
    }

    func bind(_ i: Int32, bytes: UnsafeRawBufferPointer) throws {
        let rc = bytes.isEmpty
            ? sqlite3_bind_zeroblob(handle, i, 0)
            : sqlite3_bind_blob64(handle, i, bytes.baseAddress, UInt64(bytes.count), sqliteTransient)
        try check(rc, i)
    }

    /// Binds UTF-8 text given as bytes (copied; the caller has checked it is UTF-8).
    func bindText(_ i: Int32, bytes: UnsafeRawBufferPointer) throws {
        let rc: Int32
        if let base = bytes.baseAddress, !bytes.isEmpty {
            rc = sqlite3_bind_text64(handle, i, base.assumingMemoryBound(to: CChar.self), UInt64(bytes.count), sqliteTransient, UInt8(SQLITE_UTF8))
        } else {
            rc = sqlite3_bind_text(handle, i, "", 0, sqliteTransient)
        }
        try check(rc, i)
    }

    /// A value that cannot be bound (too big for SQLite, out of memory) must fail the call, never be stored as
    /// NULL.
    private func check(_ rc: Int32, _ i: Int32) throws {
        guard rc == SQLITE_OK else { throw connection.error(rc, "binding parameter \(i)") }
    }

    func bind(_ i: Int32, _ v: SQLValue) throws {
        switch v {
        case .null: bindNull(i)
        case .integer(let x): bind(i, x)
        case .real(let x): bind(i, x)
        case .text(let x): try bind(i, x)
        case .blob(let x): try bind(i, x)
        }
    }

    /// Binds `values` to parameters 1…n.
    func bind(_ values: [SQLValue]) throws {
        for (i, v) in values.enumerated() { try bind(Int32(i + 1), v) }
    }

    // MARK: Stepping

    /// Advances: `true` with a row, `false` when done.
    @discardableResult
    func step() throws -> Bool {
        let rc = sqlite3_step(handle)
        if rc == SQLITE_ROW { return true }
        if rc == SQLITE_DONE { return false }
        throw connection.error(rc, "running \(String(cString: sqlite3_sql(handle)).prefix(80))")
    }

    // MARK: Columns (0-based)

    func type(_ c: Int32) -> Int32 { sqlite3_column_type(handle, c) }
    func columnIsNull(_ c: Int32) -> Bool { sqlite3_column_type(handle, c) == SQLITE_NULL }
    func int64(_ c: Int32) -> Int64 { sqlite3_column_int64(handle, c) }
    func double(_ c: Int32) -> Double { sqlite3_column_double(handle, c) }

    /// The column as text, with its exact byte length (NUL characters included).
    func text(_ c: Int32) -> String {
        guard let p = sqlite3_column_text(handle, c) else { return "" }
        let n = Int(sqlite3_column_bytes(handle, c))
        return String(decoding: UnsafeBufferPointer(start: p, count: n), as: UTF8.self)
    }

    /// The column as bytes (an empty blob reads as empty data).
    func blob(_ c: Int32) -> Data {
        let p = sqlite3_column_blob(handle, c)
        let n = Int(sqlite3_column_bytes(handle, c))
        guard let p, n > 0 else { return Data() }
        return Data(bytes: p, count: n)
    }

    /// Calls `body` with the column's bytes without copying them.
    func withBlob<T>(_ c: Int32, _ body: (UnsafeRawBufferPointer) throws -> T) rethrows -> T {
        let p = sqlite3_column_blob(handle, c)
        let n = Int(sqlite3_column_bytes(handle, c))
        guard let p, n > 0 else { return try body(UnsafeRawBufferPointer(start: nil, count: 0)) }
        return try body(UnsafeRawBufferPointer(start: p, count: n))
    }
}

/// A value bound to an SQL parameter.
enum SQLValue: Sendable, Hashable {
    case null
    case integer(Int64)
    case real(Double)
    case text(String)
    case blob(Data)
}
