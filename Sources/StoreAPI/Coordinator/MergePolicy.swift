/// What a save does when an inserted object has the values of a uniqueness constraint that another record already
/// has — Core Data's merge policies (`NSMergePolicy`) for constraint conflicts. Set it on a context
/// (``StoreContext/mergePolicy``) or for one insert (``StoreContext/setMergePolicy(_:for:)``).
///
/// Under every policy but ``error``, the insert becomes an update of the record it collides with: that record
/// keeps its primary key and global ID, the policy decides its values, and the inserted object is discarded
/// (it is invalidated, as an inserted object deleted before a save is; fetch the record to go on using it).
/// Links other objects of the context made to the inserted object move to the record, except under
/// ``rollback``. The record collided with is the stored one, or, when two objects inserted in the same save
/// collide, the one inserted first.
///
/// Where Core Data says nothing, this framework chose: the colliding objects must be of the same entity (a
/// collision across sibling entities of a constraint declared on their parent still fails the save); an
/// attribute that is `nil` counts as not set (so "by property" merges fill it from the other side); to-many
/// relationships are merged as the union of both sides, the record's members first. Optimistic-locking conflicts
/// (``StoreError/conflict(_:object:reason:)``, which the PostgreSQL store reports when another writer saved the
/// same record first) are not resolved by a merge policy: the save still fails, and nothing is written. Rows of
/// ``StoreContext/insertBatch(_:_:globalIDs:into:)`` are not objects and are never merged: a batch that collides fails.
///
/// The policy works the same on every backend: before a save checks anything, the inserts' constraint values are
/// looked up with fetches — one query per constraint for every few hundred inserted objects — while a policy other
/// than ``error`` is in effect.
public enum MergePolicy: Sendable, Hashable, CaseIterable {
    /// The save fails with ``StoreError/uniquenessViolation(entity:attributes:values:existing:)`` and writes nothing
    /// (`NSErrorMergePolicy`); the default.
    case error
    /// The inserted object's values win property by property (`NSMergeByPropertyObjectTrumpMergePolicy`): each of
    /// its attributes that is not `nil` replaces the record's, each to-one relationship it sets replaces the
    /// record's, and to-many relationships hold both sides' members.
    case mergeByPropertyObjectTrump
    /// The record's values win property by property (`NSMergeByPropertyStoreTrumpMergePolicy`): the inserted
    /// object's values fill only the attributes and to-one relationships the record has no value for, and to-many
    /// relationships hold both sides' members.
    case mergeByPropertyStoreTrump
    /// The inserted object replaces the record's values whole (`NSOverwriteMergePolicy`): every attribute, `nil`
    /// included, and every relationship; the record's former related records lose it on their side.
    case overwrite
    /// The record stays as it is and the insert is dropped (`NSRollbackMergePolicy`), with the links other objects
    /// made to the inserted object.
    case rollback
}
