import Foundation
import Synchronization

extension StoreContext {
    /// Identifies a context in the changes it saves (``SavedChanges/Origin/context(_:)``); never reused in a process.
    public struct ID: Hashable, Sendable, CustomStringConvertible {
        let value: Int

        private static let counter = Atomic<Int>(0)

        static func next() -> ID { ID(value: counter.add(1, ordering: .relaxed).newValue) }

        public var description: String { "context \(value)" }
    }

    /// Whether the context takes in the changes other contexts of its coordinator save, and the changes other
    /// processes save that ``StoreCoordinator/checkForExternalChanges()`` finds — Core Data's
    /// `automaticallyMergesChangesFromParent`.
    ///
    /// ```swift
    /// let context = coordinator.newContext()
    /// context.automaticallyMergesChanges = true
    /// let book = try context.fetch("Book", where: "title == %@", "The Dispossessed")[0]
    /// // … another context saves a new title for the book …
    /// try context.fetch("Book")            // merges first: book's values are the saved ones
    /// ```
    ///
    /// A context is used from one thread at a time, so changes are not applied while another thread saves: they
    /// wait until this context next fetches or saves, or calls ``mergeChanges()``. Merging refreshes the objects
    /// the context holds without unsaved changes (they show the saved values and relationships) and invalidates
    /// those whose records were deleted; objects with unsaved changes keep them, and records inserted elsewhere
    /// appear in the next fetch. Off by default.
    public var automaticallyMergesChanges: Bool {
        get { mergeObservation != nil }
        set {
            guard newValue != (mergeObservation != nil) else { return }
            if newValue {
                let inbox = mergeInbox
                let me = contextID
                mergeObservation = coordinator.observeChanges { changes in
                    if changes.origin != .context(me) { inbox.add(changes) }
                }
            } else {
                mergeObservation?.cancel()
                mergeObservation = nil
                _ = mergeInbox.take()
            }
        }
    }

    /// Applies the changes other contexts and processes saved since the last merge (when
    /// ``automaticallyMergesChanges`` is on; otherwise it does nothing). Returns whether any object changed.
    ///
    /// Fetches and ``save()`` merge first on their own; call this before reading values of objects you hold when
    /// you want them up to date without fetching.
    @discardableResult
    public func mergeChanges() -> Bool {
        guard mergeObservation != nil else { return false }
        let pending = mergeInbox.take()
        guard !pending.isEmpty else { return false }
        var everything = Set<UUID>()
        var refreshed = Set<ObjectKey>()
        var deleted = Set<ObjectKey>()
        for changes in pending {
            guard changes.isComplete else {
                everything.insert(changes.store)
                continue
            }
            for id in changes.updated {
                if let key = key(of: id) { refreshed.insert(key) }
            }
            for id in changes.deleted {
                if let key = key(of: id) { deleted.insert(key) }
            }
        }
        var stale: [ManagedObject] = []
        if everything.isEmpty {
            for key in refreshed.union(deleted) {
                if let o = registeredObject(key), o.state == .clean { stale.append(o) }
            }
        } else {
            registered.forEach { o in
                if o.state == .clean, everything.contains(o.loadedStore.identifier) || refreshed.contains(o.key)
                    || deleted.contains(o.key)
                {
                    stale.append(o)
                }
            }
        }
        var changed = false
        // One read per store and hierarchy; a record that is gone was deleted.
        let groups = Dictionary(grouping: stale) { "\($0.loadedStore.identifier)\u{1}\($0.entity.rootName)" }
        for (_, objects) in groups {
            guard let first = objects.first else { continue }
            let store = first.loadedStore
            let byKey = Dictionary(objects.map { ($0.record.primaryKey, $0) }, uniquingKeysWith: { a, _ in a })
            let keys = objects.filter { !deleted.contains($0.key) }.map(\.record.primaryKey)
            // A store that cannot be read now (closed, swapped) leaves its objects as they are.
            guard let found = try? store.store.records(withKeys: keys, root: first.entity.rootName) else { continue }
            var present = Set<Int64>()
            for r in found {
                present.insert(r.primaryKey)
                if byKey[r.primaryKey]?.record != r, (try? register(r, from: store)) != nil { changed = true }
            }
            for o in objects where !present.contains(o.record.primaryKey) {
                o.state = .invalidated("its record was deleted by another save")
                forget(o)
                changed = true
            }
        }
        return changed
    }

    private func key(of id: ObjectID) -> ObjectKey? {
        schema.entity(named: id.entity).map { ObjectKey(store: id.storeUUID, root: $0.rootName, primaryKey: id.primaryKey) }
    }
}

/// Changes a merging context received from other threads, until it merges them.
final class MergeInbox: Sendable {
    private let pending = Mutex<[SavedChanges]>([])

    /// More waiting changes than this are kept as "the store changed", which a merge answers by refreshing every
    /// object of the store: a context that does not fetch for a long time holds a bounded list.
    private static let limit = 64

    func add(_ changes: SavedChanges) {
        pending.withLock { list in
            list.append(changes)
            if list.count > Self.limit {
                let stores = Set(list.map(\.store))
                list = stores.map { SavedChanges(unknownChangeOf: $0, origin: .otherProcess) }
            }
        }
    }

    func take() -> [SavedChanges] {
        pending.withLock { list in
            defer { list.removeAll() }
            return list
        }
    }
}
