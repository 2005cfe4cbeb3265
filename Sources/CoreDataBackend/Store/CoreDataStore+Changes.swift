@_spi(BackendKit) import StoreAPI

extension CoreDataStore: ChangeProbingStore {
    /// SQLite's `data_version` of the store's connection: it moves on when another connection (the app, another
    /// process) commits, and not for this connection's own commits, which the coordinator reports itself. Reading it
    /// reads no record and writes nothing.
    func changeToken() throws -> Int64 {
        try lock.withLock { try open().integer("PRAGMA data_version") ?? 0 }
    }
}
