import CSQLite
import Foundation
@_spi(BackendKit) import StoreAPI
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Creates a new store atomically: the whole database is built in a staging file in the same directory, fsynced,
/// and only then linked under its real name (a hard link never replaces an existing file, so two creators racing
/// cannot overwrite each other). A failure at any step removes the staging file: nothing is left behind.
struct StoreCreator {
    let url: URL

    /// Creates the store; returns `false` if another creator got there first (the caller then opens theirs).
    func create(_ metadata: StoreMetadata) throws -> Bool {
        for suffix in ["-wal", "-journal"] {
            let stray = SQLiteStoreBackend.sidecar(url, suffix)
            if FileManager.default.fileExists(atPath: stray.path) {
                throw StoreError.refused(
                    url, reason: "\(stray.lastPathComponent) exists without its database (left by a deleted store?); SQLite would replay it into a new store, so remove it first")
            }
        }
        try AtomicFile.checkDirectory(of: url)
        let layout = StoreLayout(schema: metadata.schema)
        let json = try metadata.encoded()
        let staging = AtomicFile.stagingURL(for: url)
        do {
            let c = try SQLiteConnection.open(staging, readOnly: false, create: true, timeout: 0)
            do {
                try c.exec("PRAGMA journal_mode = MEMORY")
                try c.exec("PRAGMA synchronous = OFF")
                try c.exec("PRAGMA application_id = \(StoreLayout.applicationID)")
                try c.exec("PRAGMA user_version = \(StoreLayout.layoutVersion)")
                try c.transaction(write: true) {
                    for statement in layout.creationStatements { try c.exec(statement, "creating the store's tables") }
                    try SQLiteStore.writeMetadataJSON(json, c)
                }
                // Born in WAL mode (the default), so a first open does not rewrite the header.
                try c.exec("PRAGMA journal_mode = WAL")
                c.close()
            } catch {
                c.close()
                throw error
            }
            try AtomicFile.fsync(path: staging)
            let created = try Self.linkNoReplace(staging, to: url)
            try? FileManager.default.removeItem(at: staging)
            if created { try AtomicFile.fsyncDirectory(of: url) }
            return created
        } catch {
            Self.removeWithSidecars(staging)
            throw error
        }
    }

    /// Gives `source`'s file the name `destination` unless something already has it. Returns whether it did.
    static func linkNoReplace(_ source: URL, to destination: URL) throws -> Bool {
        if link(source.path, destination.path) == 0 { return true }
        let code = errno
        if code == EEXIST { return false }
        // File systems without hard links: fall back to a checked rename.
        guard [EPERM, ENOTSUP, EOPNOTSUPP, EXDEV, EMLINK].contains(code) else {
            throw StoreError.io(destination, operation: "linking the new store into place", reason: String(cString: strerror(code)))
        }
        if FileManager.default.fileExists(atPath: destination.path) { return false }
        try AtomicFile.rename(source, to: destination)
        return true
    }

    /// Removes a database and any sidecars SQLite made for it.
    static func removeWithSidecars(_ url: URL) {
        for u in [url] + SQLiteStoreBackend.sidecarSuffixes.map({ SQLiteStoreBackend.sidecar(url, $0) }) {
            try? FileManager.default.removeItem(at: u)
        }
    }
}

/// Copies a store with SQLite's online backup API: one consistent snapshot read through the source's connection
/// (so data still in its `-wal` is included, and writers keep going), written to a staging file in the destination
/// directory, fsynced, then linked into place.
struct StoreCopier {
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
            guard try StoreCreator.linkNoReplace(staging, to: destination) else {
                throw StoreError.storeExists(destination)
            }
            StoreCreator.removeWithSidecars(staging)
            try AtomicFile.fsyncDirectory(of: destination)
        } catch {
            StoreCreator.removeWithSidecars(staging)
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
