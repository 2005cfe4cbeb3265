/// A store that can tell cheaply whether another process committed to it: the capability behind
/// ``StoreCoordinator/checkForExternalChanges()``.
///
/// SQLite and Core Data stores answer with `PRAGMA data_version`, LMDB with the environment's last transaction ID, a
/// PostgreSQL store with the count of its save notifications heard: none reads a record. When the token moved and
/// the store keeps history, the coordinator reads the history after the last check to name the changed records. A
/// store that does not adopt this protocol has its changes found through its history alone (when its description
/// turns on ``StoreOptions/historyTracking``), which costs a query of the history per check.
public protocol ChangeProbingStore: PersistentStore {
    /// A value that differs from the one returned before whenever another process (or another open handle on the
    /// same files) has committed a change since. It may also change after this handle's own commits: a change
    /// reported by it is re-checked, never trusted to have happened elsewhere.
    func changeToken() throws -> Int64
}
