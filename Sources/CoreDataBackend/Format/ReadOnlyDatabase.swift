import CSQLite
import Foundation
@_spi(BackendKit) import StoreAPI

/// A read-only SQLite connection to someone else's Core Data store that never changes its files.
///
/// - No `-wal` and no `-journal`: `immutable=1`. The main file then holds every committed transaction, and an
///   immutable open takes no lock and creates nothing: a plain `mode=ro` open of a store in WAL mode would create a
///   `-wal` and a `-shm` beside it.
/// - A `-wal` with its `-shm`: `mode=ro&readonly_shm=1`. SQLite reads the WAL through the existing `-shm` opened
///   read-only (a plain `mode=ro` reader still writes its read marks into the `-shm`; with the `-shm` read-only it
///   keeps its index of the WAL in its own memory when no writer is live), and a read-only connection never
///   checkpoints, so the main file, the `-wal` and the `-shm` keep their bytes.
/// - A `-wal` without its `-shm` (copied out of a device backup): `mode=ro` would create a `-shm` beside the store,
///   and `immutable=1` would ignore the WAL and read an empty store (in every corpus store with a `-wal` the data is
///   all in it). So the main file and the `-wal` are copied into a private temporary directory and read there.
/// - A `-journal` (a rollback-mode store whose writer did not finish): rolling it back needs a writable
///   connection, so the main file and the journal are copied into a private directory and opened there.
final class ReadOnlyDatabase {
    let url: URL
    private let db: OpaquePointer
    private let snapshotDirectory: URL?

    private init(url: URL, db: OpaquePointer, snapshotDirectory: URL?) {
        self.url = url
        self.db = db
        self.snapshotDirectory = snapshotDirectory
    }

    deinit {
        sqlite3_close_v2(db)
        if let snapshotDirectory { try? FileManager.default.removeItem(at: snapshotDirectory) }
    }

    /// Opens `url` for reading, choosing the mode above.
    static func open(_ url: URL) throws(StoreError) -> ReadOnlyDatabase {
        let fm = FileManager.default
        guard fm.fileExists(atPath: url.path) else { throw .storeNotFound(url) }
        let wal = URL(fileURLWithPath: url.path + "-wal")
        let shm = URL(fileURLWithPath: url.path + "-shm")
        let journal = URL(fileURLWithPath: url.path + "-journal")
        let hasWAL = fm.fileExists(atPath: wal.path)
        let hasJournal = fm.fileExists(atPath: journal.path)
        if (hasWAL && !fm.fileExists(atPath: shm.path)) || hasJournal {
            let dir = fm.temporaryDirectory.appendingPathComponent("coredata-read-\(UUID().uuidString)")
            let copy = dir.appendingPathComponent(url.lastPathComponent)
            let sidecar = hasJournal ? "-journal" : "-wal"
            do {
                try fm.createDirectory(at: dir, withIntermediateDirectories: false)
                try fm.copyItem(at: url, to: copy)
                try fm.copyItem(atPath: url.path + sidecar, toPath: copy.path + sidecar)
            } catch {
                try? fm.removeItem(at: dir)
                throw .io(url, operation: "copying the store and its \(sidecar) to read them apart from the original",
                          reason: error.localizedDescription)
            }
            do throws(StoreError) {
                // The copy is private: whatever SQLite does to it (a -shm created, a journal rolled back) changes
                // nothing of the user's.
                let db = try connect(copy, reportAs: url, mode: hasJournal ? .privateCopyWritable : .privateCopyReadOnly)
                return ReadOnlyDatabase(url: url, db: db, snapshotDirectory: dir)
            } catch {
                try? fm.removeItem(at: dir)
                throw error
            }
        }
        return ReadOnlyDatabase(url: url, db: try connect(url, reportAs: url, mode: hasWAL ? .readOnly : .immutable),
                                snapshotDirectory: nil)
    }

    private enum Mode {
        /// `mode=ro&readonly_shm=1`: reads through SQLite's locks and the WAL, and opens the `-shm` read-only so
        /// that not even SQLite's read marks are written into the user's files.
        case readOnly
        /// `mode=ro` on a private copy, where SQLite may create the `-shm` it needs.
        case privateCopyReadOnly
        /// `mode=ro&immutable=1`: the file cannot change while it is read; no lock, nothing created beside it.
        case immutable
        /// A private copy SQLite may write (to roll back a hot journal); never the user's file.
        case privateCopyWritable
    }

    private static func connect(_ file: URL, reportAs url: URL, mode: Mode) throws(StoreError) -> OpaquePointer {
        var c = URLComponents()
        c.scheme = "file"
        c.path = file.path
        switch mode {
        case .readOnly: c.queryItems = [URLQueryItem(name: "mode", value: "ro"), URLQueryItem(name: "readonly_shm", value: "1")]
        case .privateCopyReadOnly: c.queryItems = [URLQueryItem(name: "mode", value: "ro")]
        case .immutable: c.queryItems = [URLQueryItem(name: "mode", value: "ro"), URLQueryItem(name: "immutable", value: "1")]
        case .privateCopyWritable: c.queryItems = []
        }
        let flags = mode == .privateCopyWritable ? SQLITE_OPEN_READWRITE : SQLITE_OPEN_READONLY
        var handle: OpaquePointer?
        let rc = sqlite3_open_v2(c.string ?? file.path, &handle, flags | SQLITE_OPEN_URI | SQLITE_OPEN_NOMUTEX, nil)
        guard rc == SQLITE_OK, let db = handle else {
            let message = handle.map { String(cString: sqlite3_errmsg($0)) } ?? String(cString: sqlite3_errstr(rc))
            if let handle { sqlite3_close_v2(handle) }
            throw .io(url, operation: "opening the store read-only", reason: message)
        }
        sqlite3_busy_timeout(db, 5000)
        return db
    }

    typealias Value = SQLiteValue

    /// The connection, for statements an open store prepares once and keeps (see `CoreDataConnection`).
    var handle: OpaquePointer { db }

    /// Runs `sql` and returns every row.
    func rows(_ sql: String) throws(StoreError) -> [[Value]] {
        var statement: OpaquePointer?
        guard sqlite3_prepare_v2(db, sql, -1, &statement, nil) == SQLITE_OK, let stmt = statement else {
            let message = String(cString: sqlite3_errmsg(db))
            sqlite3_finalize(statement)
            throw .corruptStore(url, reason: "\(sql): \(message)")
        }
        defer { sqlite3_finalize(stmt) }
        var out: [[Value]] = []
        while true {
            let rc = sqlite3_step(stmt)
            if rc == SQLITE_DONE { return out }
            guard rc == SQLITE_ROW else {
                throw .corruptStore(url, reason: "\(sql): \(String(cString: sqlite3_errmsg(db)))")
            }
            let row = SQLiteValue.row(of: stmt)
            out.append(row)
        }
    }

    /// Copies the database, as this connection reads it (a `-wal` included), into the new file `destination` with
    /// SQLite's backup API, in one step so the copy is one consistent snapshot. The copy is synced to disk.
    func backup(to destination: URL) throws(StoreError) {
        var handle: OpaquePointer?
        let rc = sqlite3_open_v2(destination.path, &handle, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_EXCLUSIVE, nil)
        defer { sqlite3_close_v2(handle) }
        guard rc == SQLITE_OK, let target = handle else {
            throw .io(destination, operation: "creating the copy of \(url.path)", reason: String(cString: sqlite3_errstr(rc)))
        }
        guard let backup = sqlite3_backup_init(target, "main", db, "main") else {
            throw .io(destination, operation: "copying \(url.path)", reason: String(cString: sqlite3_errmsg(target)))
        }
        // A lock held by another process is waited for a few seconds, never for ever.
        var step = SQLITE_OK, waits = 0
        repeat {
            step = sqlite3_backup_step(backup, -1)
            if step == SQLITE_BUSY || step == SQLITE_LOCKED {
                waits += 1
                sqlite3_sleep(10)
            }
        } while (step == SQLITE_OK || step == SQLITE_BUSY || step == SQLITE_LOCKED) && waits < 500
        let finished = sqlite3_backup_finish(backup)
        guard step == SQLITE_DONE, finished == SQLITE_OK else {
            let code = step == SQLITE_DONE ? finished : step
            throw .io(destination, operation: "copying \(url.path)", reason: String(cString: sqlite3_errstr(code)))
        }
    }

    /// The names of the tables in the store.
    func tableNames() throws(StoreError) -> Set<String> {
        Set(try rows("SELECT name FROM sqlite_master WHERE type = 'table'").compactMap { $0.first?.text })
    }
}
