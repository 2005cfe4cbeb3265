import Foundation
import StoreAPI

/// The pragmas of a read-write connection, from the options.
struct ConnectionSettings {
    var journalMode: String
    var synchronous: String

    /// The page cache of a read-write connection (a bulk load works with a smaller one).
    static let cacheKiB = 64 * 1024

    init(_ options: StoreOptions) throws {
        let journal = (options.backend["sqlite.journal_mode"] ?? "WAL").uppercased()
        guard ["WAL", "DELETE", "TRUNCATE", "PERSIST", "MEMORY"].contains(journal) else {
            throw StoreError.unsupported(
                "sqlite.journal_mode '\(journal)' (use WAL, DELETE, TRUNCATE, PERSIST or MEMORY)")
        }
        let sync = (options.backend["sqlite.synchronous"] ?? (journal == "WAL" ? "NORMAL" : "FULL")).uppercased()
        guard ["OFF", "NORMAL", "FULL", "EXTRA"].contains(sync) else {
            throw StoreError.unsupported("sqlite.synchronous '\(sync)' (use OFF, NORMAL, FULL or EXTRA)")
        }
        journalMode = journal
        synchronous = sync
    }

    func apply(to c: SQLiteConnection) throws {
        let mode = try c.textRows("PRAGMA journal_mode = \(journalMode)").first?.uppercased()
        guard mode == journalMode else {
            throw StoreError.locked(
                c.url, reason: "could not switch to journal mode \(journalMode) (still \(mode ?? "unknown")); another connection has the store open")
        }
        try c.exec("PRAGMA synchronous = \(synchronous)")
        // Every insert also goes into the global-ID index, whose random keys touch pages all over it: a cache that
        // holds the index of a large store and a log that folds back less often keep bulk saves from rewriting the
        // same index pages again and again (see the storebench SQLite rows).
        try c.exec("PRAGMA cache_size = -\(Self.cacheKiB)")
        if journalMode == "WAL" { try c.exec("PRAGMA wal_autocheckpoint = 8192") }
    }
}
