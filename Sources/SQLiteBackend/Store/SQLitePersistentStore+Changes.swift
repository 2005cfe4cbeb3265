@_spi(BackendKit) import StoreAPI

extension SQLitePersistentStore: ChangeProbingStore {
    /// SQLite's `data_version` of the store's connection: it moves on when another connection (another process,
    /// another coordinator) commits, and not for this connection's own commits, which the coordinator reports itself.
    func changeToken() throws -> Int64 {
        try withConnection { c, _ in try c.int64("PRAGMA data_version") ?? 0 }
    }
}
