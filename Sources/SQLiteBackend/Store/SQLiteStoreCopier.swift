import CSQLite
import Foundation
@_spi(BackendKit) import StoreAPI
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Copies a store with SQLite's online backup API: one consistent snapshot read through the source's connection
/// (so data still in its `-wal` is included, and writers keep going), written to a staging file in the destination
/// directory, fsynced, then linked into place.
struct SQLiteStoreCopier {
    let source: URL
    let destination: URL
    var timeout: Double = 30

    func copy() throws {
        let fm = FileManager.default
        for u in [destination] + ["-wal", "-journal"].map({ SQLiteStoreBackend.sidecar(destination, $0) })
        where fm.fileExists(atPath: u.path) {
            throw StoreError.storeExists(u)
        }
        try AtomicFile.checkDirectory(of: destination)
        let staging = AtomicFile.stagingURL(for: destination)
        do {
            let hadSidecars = SQLiteStoreBackend.hasWALSidecars(source)
            let src = try SQLiteStoreBackend().openForReading(source, timeout: timeout)
            defer {
                src.close()
                if !hadSidecars { SQLiteStoreBackend.removeSidecarsIfUnused(source) }
            }
            let dst = try SQLiteConnection.open(staging, readOnly: false, create: true, timeout: timeout)
            do {
                try dst.exec("PRAGMA journal_mode = MEMORY")
                try dst.exec("PRAGMA synchronous = OFF")
                try backup(from: src, to: dst)
                // A self-contained file in WAL mode, like every store at rest: closing the only connection folds
                // any log back in and removes it, and a first open then has nothing to rewrite.
                try dst.exec("PRAGMA journal_mode = WAL")
                dst.close()
            } catch {
                dst.close()
                throw error
            }
            try AtomicFile.fsync(path: staging)
            guard try SQLiteStoreCreator.linkNoReplace(staging, to: destination) else {
                throw StoreError.storeExists(destination)
            }
            SQLiteStoreCreator.removeWithSidecars(staging)
            try AtomicFile.fsyncDirectory(of: destination)
        } catch {
            SQLiteStoreCreator.removeWithSidecars(staging)
            throw error
        }
    }

    private func backup(from src: SQLiteConnection, to dst: SQLiteConnection) throws {
        guard let b = sqlite3_backup_init(dst.db, "main", src.db, "main") else {
            throw dst.error(sqlite3_errcode(dst.db), "starting the backup")
        }
        let deadline = Date().addingTimeInterval(timeout)
        var rc: Int32
        repeat {
            // All pages in one step: one read transaction on the source, hence one consistent snapshot.
            rc = sqlite3_backup_step(b, -1)
            if rc == SQLITE_BUSY || rc == SQLITE_LOCKED {
                guard Date() < deadline else { break }
                usleep(10_000)
            }
        } while rc == SQLITE_OK || rc == SQLITE_BUSY || rc == SQLITE_LOCKED
        let finish = sqlite3_backup_finish(b)
        guard rc == SQLITE_DONE else {
            let message = String(cString: sqlite3_errstr(rc))
            switch rc & 0xFF {
            case SQLITE_CORRUPT, SQLITE_NOTADB, SQLITE_BUSY, SQLITE_LOCKED:
                // The source is what is damaged or held by a writer.
                throw SQLiteConnection.mapError(rc, message: message, url: source, operation: "copying with the backup API")
            default:
                // A full disk, a file-size limit, an I/O error: the copy being written failed; the source is
                // intact, so the error names the destination (and where it was copying from).
                throw SQLiteConnection.mapError(
                    rc, message: message, url: destination, operation: "copying \(source.path) with the backup API")
            }
        }
        guard finish == SQLITE_OK else { throw dst.error(finish, "finishing the backup") }
    }
}
