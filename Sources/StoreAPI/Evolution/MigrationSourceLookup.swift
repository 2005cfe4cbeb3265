import Foundation
import Synchronization

/// The store being upgraded, for custom steps that read records other than the one they migrate
/// (``RecordMigration/sourceRelated(_:)``: a merge folds a related record's values into this one). An incremental
/// store is the one the upgrade reads; an atomic store's file, which the upgrade otherwise streams, is loaded the
/// first time a step asks, and closed when the upgrade ends.
final class MigrationSourceLookup: Sendable {
    private let state: Mutex<State>
    private let open: @Sendable () throws -> any PersistentStore

    private struct State {
        var store: (any PersistentStore)?
        var ownsStore: Bool
    }

    /// Looks records up in `store`, which the caller keeps open and closes.
    init(store: any PersistentStore) {
        state = Mutex(State(store: store, ownsStore: false))
        open = { store }
    }

    /// Opens the store with `open` the first time a record is looked up; ``close()`` closes it.
    init(opening open: @escaping @Sendable () throws -> any PersistentStore) {
        state = Mutex(State(store: nil, ownsStore: true))
        self.open = open
    }

    /// The records of hierarchy `root` with `keys`, in the order of `keys` (keys with no record left out).
    func records(withKeys keys: [Int64], root: String) throws -> [Record] {
        let store = try state.withLock { s -> any PersistentStore in
            if let store = s.store { return store }
            let store = try open()
            s.store = store
            return store
        }
        let found = Dictionary(try store.records(withKeys: keys, root: root).map { ($0.primaryKey, $0) }, uniquingKeysWith: { a, _ in a })
        return keys.compactMap { found[$0] }
    }

    /// Closes a store this lookup opened.
    func close() {
        state.withLock { s in
            if s.ownsStore { try? s.store?.close() }
            s.store = nil
        }
    }
}
