import Foundation
@_spi(BackendKit) import StoreAPI
import Synchronization

extension PostgresPersistentStore: ClientLockingStore {
    /// A session-level advisory lock, keyed by the store's schema and `name`, on a connection of its own: the store's
    /// connections commit and reconnect independently of it, and the server releases it when that connection ends,
    /// whether the lock is released or its process dies.
    func tryClientLock(named name: String) throws -> (any ClientLock)? {
        let connection = try PostgresStoreBackend.connect(location, session)
        do {
            let rows = try connection.execute("SELECT pg_try_advisory_lock(hashtextextended($1, 0))",
                                              ["storeapi client lock \(location.schema) \(name)"])
            guard rows.text(0, 0) == "t" else {
                connection.close()
                return nil
            }
            return PostgresClientLock(connection)
        } catch {
            connection.close()
            throw error
        }
    }
}

/// An advisory lock held by the session of its connection; closing the connection releases it.
final class PostgresClientLock: ClientLock {
    private let connection: Mutex<PostgresConnection?>

    init(_ connection: PostgresConnection) { self.connection = Mutex(connection) }

    func release() {
        connection.withLock { c in
            c?.close()
            c = nil
        }
    }

    deinit { release() }
}
