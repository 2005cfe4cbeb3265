@_spi(BackendKit) import StoreAPI

extension LMDBPersistentStore: ChangeProbingStore {
    /// The environment's last committed transaction: every commit of any process moves it on (this one's too).
    func changeToken() throws -> Int64 { env.lastTransactionID }
}
