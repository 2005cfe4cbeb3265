import BenchSQLite
import Foundation

/// The SQLite references, on the very files our backend wrote: what a hand-written C program costs to read every
/// row and column, to insert exactly the same rows into exactly the same tables and indexes with reused prepared
/// statements in one transaction, to look a row up by key, and to run the same filter as SQL.
enum RefSQLite {
    private static let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    final class Connection {
        let db: OpaquePointer
        let path: String

        init(_ path: String, readOnly: Bool) throws {
            var handle: OpaquePointer?
            // One connection used by one thread, as ours is: without NOMUTEX (the library's default is serialized)
            // every sqlite3_column_* call would lock and unlock the connection's mutex — a third of a whole read.
            let flags = SQLITE_OPEN_NOMUTEX | (readOnly ? SQLITE_OPEN_READONLY : (SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE))
            let rc = sqlite3_open_v2(path, &handle, flags, nil)
            guard rc == SQLITE_OK, let handle else {
                sqlite3_close(handle)
                throw Failure(description: "\(path): cannot open (\(rc))")
            }
            db = handle
            self.path = path
        }

        deinit { sqlite3_close(db) }

        func check(_ rc: Int32, _ what: String) throws {
            guard rc == SQLITE_OK || rc == SQLITE_DONE || rc == SQLITE_ROW else {
                throw Failure(description: "\(path): \(what): \(String(cString: sqlite3_errmsg(db)))")
            }
        }

        func exec(_ sql: String) throws { try check(sqlite3_exec(db, sql, nil, nil, nil), sql) }

        func prepare(_ sql: String) throws -> OpaquePointer {
            var stmt: OpaquePointer?
            try check(sqlite3_prepare_v2(db, sql, -1, &stmt, nil), sql)
            guard let stmt else { throw Failure(description: "\(path): empty statement \(sql)") }
            return stmt
        }

        func strings(_ sql: String) throws -> [[String?]] {
            let stmt = try prepare(sql)
            defer { sqlite3_finalize(stmt) }
            var rows: [[String?]] = []
            while sqlite3_step(stmt) == SQLITE_ROW {
                rows.append((0..<sqlite3_column_count(stmt)).map { i in sqlite3_column_text(stmt, i).map { String(cString: $0) } })
            }
            return rows
        }

        func tableNames() throws -> [String] {
            try strings("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY rowid").compactMap { $0[0] }
        }
    }

    static func quote(_ name: String) -> String { "\"" + name.replacingOccurrences(of: "\"", with: "\"\"") + "\"" }

    /// Steps through every row of every table, reading every column; returns a checksum.
    static func read(_ path: String) throws -> UInt64 {
        try read(Connection(path, readOnly: true))
    }

    /// Steps through every row of every table of the database `c` is open on, reading every column; returns a
    /// checksum.
    static func read(_ c: Connection) throws -> UInt64 {
        var sum: UInt64 = 0
        for table in try c.tableNames() {
            let stmt = try c.prepare("SELECT * FROM \(quote(table))")
            defer { sqlite3_finalize(stmt) }
            let columns = sqlite3_column_count(stmt)
            while sqlite3_step(stmt) == SQLITE_ROW {
                for i in 0..<columns { sum &+= touchColumn(stmt, i) }
            }
        }
        return sum
    }

    @inline(__always) private static func touchColumn(_ stmt: OpaquePointer, _ i: Int32) -> UInt64 {
        switch sqlite3_column_type(stmt, i) {
        case SQLITE_INTEGER: UInt64(bitPattern: sqlite3_column_int64(stmt, i))
        case SQLITE_FLOAT: sqlite3_column_double(stmt, i).bitPattern
        case SQLITE_TEXT: UInt64(sqlite3_column_bytes(stmt, i)) &+ UInt64(sqlite3_column_text(stmt, i)?.pointee ?? 0)
        case SQLITE_BLOB: UInt64(sqlite3_column_bytes(stmt, i)) &+ (sqlite3_column_blob(stmt, i).map { UInt64($0.load(as: UInt8.self)) } ?? 0)
        default: 1
        }
    }

    /// A database's schema and rows, captured so they can be written again.
    struct Image {
        /// The source's `auto_vacuum` mode, set before the first table as the backend that made it does.
        var autoVacuum = 0
        var schema: [String] = []
        var indexes: [String] = []
        var tables: [(name: String, columns: Int, rows: Int, data: ByteImage)] = []
        var rowCount: Int { tables.reduce(0) { $0 + $1.rows } }
    }

    /// Captures every table (definition and rows) and index definition of the database at `path`.
    static func capture(_ path: String) throws -> Image {
        let c = try Connection(path, readOnly: true)
        var image = Image()
        if let mode = try c.strings("PRAGMA auto_vacuum").first?.first, let text = mode, let value = Int(text) {
            image.autoVacuum = value
        }
        for row in try c.strings("SELECT type, name, sql FROM sqlite_master WHERE sql IS NOT NULL AND name NOT LIKE 'sqlite_%' ORDER BY rowid") {
            guard let type = row[0], let sql = row[2] else { continue }
            if type == "table" { image.schema.append(sql) } else if type == "index" { image.indexes.append(sql) }
        }
        for table in try c.tableNames() {
            let stmt = try c.prepare("SELECT * FROM \(quote(table))")
            defer { sqlite3_finalize(stmt) }
            let columns = Int(sqlite3_column_count(stmt))
            var data = ByteImage()
            var rows = 0
            while sqlite3_step(stmt) == SQLITE_ROW {
                rows += 1
                for i in 0..<Int32(columns) {
                    switch sqlite3_column_type(stmt, i) {
                    case SQLITE_INTEGER:
                        data.tag(1)
                        data.word(UInt64(bitPattern: sqlite3_column_int64(stmt, i)))
                    case SQLITE_FLOAT:
                        data.tag(2)
                        data.word(sqlite3_column_double(stmt, i).bitPattern)
                    case SQLITE_TEXT:
                        data.tag(3)
                        let p = sqlite3_column_text(stmt, i)
                        data.blob(p.map(UnsafeRawPointer.init), Int(sqlite3_column_bytes(stmt, i)))
                    case SQLITE_BLOB:
                        data.tag(4)
                        let p = sqlite3_column_blob(stmt, i)
                        data.blob(p, Int(sqlite3_column_bytes(stmt, i)))
                    default:
                        data.tag(0)
                    }
                }
            }
            image.tables.append((table, columns, rows, data))
        }
        return image
    }

    /// The connection settings of the backend whose store a reference writes.
    enum Settings {
        /// The SQLite backend's: WAL, synchronous NORMAL, 64 MiB cache, checkpoint every 8192 pages.
        case sqlite
        /// The Core Data backend's bulk load: WAL, synchronous NORMAL, SQLite's default cache and checkpoint
        /// interval (it sets neither).
        case coredata

        var pragmas: [String] {
            switch self {
            case .sqlite: ["PRAGMA journal_mode = WAL", "PRAGMA synchronous = NORMAL", "PRAGMA cache_size = -65536",
                           "PRAGMA wal_autocheckpoint = 8192"]
            case .coredata: ["PRAGMA journal_mode = WAL", "PRAGMA synchronous = NORMAL"]
            }
        }
    }

    /// Creates a database at `path` with the captured tables (and the source's `auto_vacuum` mode), inserts every
    /// captured row with one reused prepared statement per table and then creates the captured indexes, in one
    /// transaction, with the connection settings of the backend that writes such stores (``Settings``); closes it
    /// (checkpointing the WAL).
    static func write(_ image: Image, to path: String, settings: Settings = .sqlite) throws {
        let c = try Connection(path, readOnly: false)
        // Before any table: the mode cannot change afterwards without a VACUUM.
        _ = try c.strings("PRAGMA auto_vacuum = \(image.autoVacuum)")
        for pragma in settings.pragmas {
            _ = try c.strings(pragma)
        }
        try c.exec("BEGIN")
        for sql in image.schema { try c.exec(sql) }
        for table in image.tables {
            let marks = Array(repeating: "?", count: table.columns).joined(separator: ",")
            let stmt = try c.prepare("INSERT INTO \(quote(table.name)) VALUES (\(marks))")
            defer { sqlite3_finalize(stmt) }
            try table.data.bytes.withUnsafeBytes { raw in
                var cursor = ByteCursor(raw)
                for _ in 0..<table.rows {
                    for i in 1...Int32(table.columns) {
                        switch cursor.tag() {
                        case 1: sqlite3_bind_int64(stmt, i, Int64(bitPattern: cursor.word()))
                        case 2: sqlite3_bind_double(stmt, i, Double(bitPattern: cursor.word()))
                        case 3:
                            let (p, n) = cursor.blob()
                            sqlite3_bind_text(stmt, i, p.assumingMemoryBound(to: CChar.self), Int32(n), transient)
                        case 4:
                            let (p, n) = cursor.blob()
                            sqlite3_bind_blob(stmt, i, p, Int32(n), transient)
                        default: sqlite3_bind_null(stmt, i)
                        }
                    }
                    try c.check(sqlite3_step(stmt), "insert into \(table.name)")
                    sqlite3_reset(stmt)
                }
            }
        }
        // Indexes last, each built from one sort: how a bulk load is best done (and how ours does it).
        for sql in image.indexes { try c.exec(sql) }
        try c.exec("COMMIT")
    }

    /// Looks up each key in `table` (one statement, reset between keys), reading every column.
    static func fetch(_ path: String, table: String, keys: [Int64]) throws -> Int {
        let c = try Connection(path, readOnly: true)
        let stmt = try c.prepare("SELECT * FROM \(quote(table)) WHERE _pk = ?")
        defer { sqlite3_finalize(stmt) }
        var found = 0
        var sum: UInt64 = 0
        let columns = sqlite3_column_count(stmt)
        for k in keys {
            sqlite3_bind_int64(stmt, 1, k)
            if sqlite3_step(stmt) == SQLITE_ROW {
                found += 1
                for i in 0..<columns { sum &+= touchColumn(stmt, i) }
            }
            sqlite3_reset(stmt)
        }
        return sum == 42 ? found + 0 : found
    }

    /// Runs `sql` and reads every column of every row; returns the row count.
    static func query(_ path: String, _ sql: String) throws -> Int {
        let c = try Connection(path, readOnly: true)
        let stmt = try c.prepare(sql)
        defer { sqlite3_finalize(stmt) }
        var rows = 0
        var sum: UInt64 = 0
        let columns = sqlite3_column_count(stmt)
        while sqlite3_step(stmt) == SQLITE_ROW {
            rows += 1
            for i in 0..<columns { sum &+= touchColumn(stmt, i) }
        }
        return sum == 42 ? rows + 0 : rows
    }
}
