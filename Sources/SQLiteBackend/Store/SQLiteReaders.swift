import Foundation
@_spi(BackendKit) import StoreAPI

/// Connections that read a WAL store beside its writer: a read on one of them sees the last commit while the
/// store's own connection holds a write transaction open (SQLite's WAL lets readers and one writer run at once).
///
/// Only stores in WAL mode opened read-write have readers: a read-only open keeps to its one connection, whose
/// sidecar handling depends on being the only one.
typealias SQLiteReaders = ReaderConnectionPool<SQLiteConnection>

extension ReaderConnectionPool where Connection == SQLiteConnection {
    /// Readers of the store at `url`, opened read-only; one that cannot be opened leaves the read to the store's
    /// own connection.
    convenience init(url: URL, timeout: Double) {
        self.init(open: {
            guard let c = try? SQLiteConnection.open(url, readOnly: true, timeout: timeout) else { return nil }
            // The same page cache as the writer's: a reader reads as much of the store.
            guard (try? c.exec("PRAGMA cache_size = -\(ConnectionSettings.cacheKiB)")) != nil else {
                c.close()
                return nil
            }
            return c
        }, close: { $0.close() })
    }
}
