import Foundation

/// What one committed change of a store did, as a coordinator's change observers receive it (see
/// ``StoreCoordinator/observeChanges(_:)``): Core Data's `NSManagedObjectContextDidSave` notification.
///
/// Saves made in this process (through any context of the coordinator, batch inserts and sync pulls included) list
/// the records they inserted, updated and deleted. A change found otherwise — another process's save found by
/// ``StoreCoordinator/checkForExternalChanges()``, a store replaced or restored — may not know which records it
/// touched: then ``isComplete`` is `false` and anything in the store may have changed.
public struct SavedChanges: Sendable {
    /// Where a change came from.
    public enum Origin: Sendable, Hashable {
        /// A save of a context of this coordinator (its ``StoreContext/contextID``), including batch inserts.
        case context(StoreContext.ID)
        /// A save by another process (or another coordinator on the same files), found by
        /// ``StoreCoordinator/checkForExternalChanges()``.
        case otherProcess
        /// A store operation swapped the store's contents (replace, restore, migrate).
        case storeOperation
    }

    /// The UUID of the store that changed (``LoadedStore/identifier``).
    public let store: UUID
    /// Where the change came from.
    public let origin: Origin
    /// Records the change inserted.
    public let inserted: [ObjectID]
    /// Records the change updated.
    public let updated: [ObjectID]
    /// Records the change deleted.
    public let deleted: [ObjectID]
    /// Whether the three lists name every record that changed; `false` when only *that* the store changed is known.
    public let isComplete: Bool
    /// The entities of the records that changed, with their ancestors (a change to a `Novel` is a change to
    /// `Book`); empty when the change is not complete.
    public let entities: Set<String>

    init(store: UUID, origin: Origin, inserted: [ObjectID], updated: [ObjectID], deleted: [ObjectID], schema: Schema) {
        self.store = store
        self.origin = origin
        self.inserted = inserted
        self.updated = updated
        self.deleted = deleted
        self.isComplete = true
        var names = Set<String>()
        var seen = Set<String>()
        for id in inserted + updated + deleted where seen.insert(id.entity).inserted {
            names.insert(id.entity)
            if let e = schema.entity(named: id.entity) { names.formUnion(e.ancestorNames) }
        }
        self.entities = names
    }

    /// A change whose records are not known.
    init(unknownChangeOf store: UUID, origin: Origin) {
        self.store = store
        self.origin = origin
        self.inserted = []
        self.updated = []
        self.deleted = []
        self.isComplete = false
        self.entities = []
    }

    /// Whether the change may have touched records of any of `entities` (always, when it is not complete).
    public func mayTouch(_ entities: Set<String>) -> Bool {
        !isComplete || !self.entities.isDisjoint(with: entities)
    }

    /// Whether nothing changed.
    public var isEmpty: Bool { isComplete && inserted.isEmpty && updated.isEmpty && deleted.isEmpty }
}
