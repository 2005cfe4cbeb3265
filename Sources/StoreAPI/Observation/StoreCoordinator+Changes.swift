import Foundation

extension StoreCoordinator {
    /// Calls `handler` after every committed change to the coordinator's stores, until the returned observation is
    /// cancelled or released.
    ///
    /// ```swift
    /// let observation = coordinator.observeChanges { changes in
    ///     print(changes.inserted.count, "inserted in", changes.store)
    /// }
    /// ```
    ///
    /// Saves of every context of this coordinator (batch inserts and `StoreSync` pulls, which save through a
    /// context, included) are reported as soon as they commit, on the thread that saved, after the save. Other
    /// processes' saves are reported when ``checkForExternalChanges()`` finds them; store operations that swap a
    /// store's contents (replace, restore, migrate) report a change whose records are not known. `handler` must
    /// return quickly and must not save through this coordinator.
    public func observeChanges(_ handler: @escaping @Sendable (SavedChanges) -> Void) -> ChangeObservation {
        ChangeObservation(feed: changeFeed, id: changeFeed.add(handler))
    }

    /// Whether anything observes the coordinator's changes.
    var isObservingChanges: Bool { changeFeed.isObserved }

    /// Reports a change to the observers.
    func post(_ changes: SavedChanges) {
        guard !changes.isEmpty, changeFeed.isObserved else { return }
        changeFeed.post(changes)
    }

    /// Looks whether another process committed to a loaded store since the last check, and reports each such change
    /// to the observers (``observeChanges(_:)``); returns them.
    ///
    /// A store that can probe for changes (``ChangeProbingStore``: SQLite, LMDB, Core Data, PostgreSQL) answers
    /// "nothing new" without reading a record or its history. When something changed, a store whose description
    /// turns on ``StoreOptions/historyTracking`` reports the records its new history transactions name; otherwise
    /// the change is reported with ``SavedChanges/isComplete`` `false` (look again at everything). A store that
    /// cannot probe is checked through its history alone, when it keeps it; one that can do neither reports
    /// nothing. The first check of a store only notes where it stands. A change may be reported that this process made itself (an LMDB environment counts
    /// its own commits too): observers treat a report as "look again", not as proof of a foreign write.
    ///
    /// Call it from a timer, or when the app comes to the foreground; `StoreModels`' `ModelStore` polls it while
    /// observations run.
    @discardableResult
    public func checkForExternalChanges() throws -> [SavedChanges] {
        var found: [SavedChanges] = []
        try changeFeed.checking.withLock { _ in
            for loaded in stores where loaded.invalidationReason == nil {
                if let change = try check(loaded) { found.append(change) }
            }
        }
        for change in found { changeFeed.post(change) }
        return found
    }

    private func check(_ loaded: LoadedStore) throws -> SavedChanges? {
        let id = loaded.identifier
        let before = changeFeed.probes.withLock { $0[id] }
        let tracksHistory = loaded.storeDescription.options.historyTracking
        // A probe answers "nothing new" without reading history; when it moved, history (if kept) says what changed.
        var probed = false
        if let probing = loaded.store as? any ChangeProbingStore {
            let token = try probing.changeToken()
            changeFeed.probes.withLock { $0[id, default: .init()].token = token }
            if let was = before?.token {
                guard was != token else { return nil }
                probed = true
            }
            guard tracksHistory else { return probed ? SavedChanges(unknownChangeOf: id, origin: .otherProcess) : nil }
        }
        guard tracksHistory else { return nil }
        guard let before, let last = before.historyToken else {
            let newest = try loaded.store.history(after: nil).last?.token ?? 0
            changeFeed.probes.withLock { $0[id, default: .init()].historyToken = newest }
            return nil
        }
        let transactions = try loaded.store.history(after: last)
        guard let newest = transactions.last?.token else {
            // The probe saw a commit history does not show (a writer that keeps no history): what changed is unknown.
            return probed ? SavedChanges(unknownChangeOf: id, origin: .otherProcess) : nil
        }
        changeFeed.probes.withLock { $0[id, default: .init()].historyToken = newest }
        var inserted: [ObjectID] = [], updated: [ObjectID] = [], deleted: [ObjectID] = []
        for t in transactions {
            for c in t.changes {
                let oid = ObjectID(storeUUID: id, entity: c.entity, primaryKey: c.primaryKey)
                switch c.kind {
                case .insert: inserted.append(oid)
                case .update: updated.append(oid)
                case .delete: deleted.append(oid)
                }
            }
        }
        return SavedChanges(store: id, origin: .otherProcess, inserted: inserted, updated: updated, deleted: deleted,
                            schema: schema)
    }
}
