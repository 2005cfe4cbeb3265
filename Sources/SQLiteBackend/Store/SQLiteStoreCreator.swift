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
struct SQLiteStoreCreator {
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
        let layout = SQLiteLayout(schema: metadata.schema)
        let json = try metadata.encoded()
        let staging = AtomicFile.stagingURL(for: url)
        do {
            let c = try SQLiteConnection.open(staging, readOnly: false, create: true, timeout: 0)
            do {
                try c.exec("PRAGMA journal_mode = MEMORY")
                try c.exec("PRAGMA synchronous = OFF")
                try c.exec("PRAGMA application_id = \(SQLiteLayout.applicationID)")
                try c.exec("PRAGMA user_version = \(SQLiteLayout.layoutVersion)")
                try c.transaction(write: true) {
                    for statement in layout.creationStatements { try c.exec(statement, "creating the store's tables") }
                    try SQLitePersistentStore.writeMetadataJSON(json, c)
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
