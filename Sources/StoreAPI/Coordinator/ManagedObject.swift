import Foundation

/// A record as seen by one ``StoreContext``: read its values, change them, and follow or change its relationships.
///
/// Changes stay in the context until ``StoreContext/save()``. The context keeps both sides of every relationship
/// consistent: setting a book's `author` also adds the book to the author's `books`.
///
/// Every accessor throws instead of returning stale data: after the object's store was removed, replaced or
/// restored, or after the object was deleted and saved, access fails with ``StoreError/objectInvalidated(_:reason:)``.
/// Objects belong to their context and must not cross threads; pass ``objectID`` instead. A context does not keep
/// unchanged objects alive and objects do not keep their context alive: hold on to the context while you use its
/// objects (an object whose context is gone throws ``StoreError/objectInvalidated(_:reason:)``).
public final class ManagedObject: CustomStringConvertible {
    /// Where the object stands in its context.
    public enum State: Sendable, Equatable {
        /// Unchanged since it was fetched or saved.
        case clean
        /// Inserted in this context, not saved yet.
        case inserted
        /// Changed in this context, not saved yet.
        case updated
        /// Deleted in this context, not saved yet.
        case deleted
        /// No longer usable: the reason says why.
        case invalidated(String)
    }

    /// The permanent ID: store UUID, entity and primary key.
    public let objectID: ObjectID
    /// The global identifier, which no store operation ever changes.
    public let globalID: UUID
    /// The object's entity.
    public let entity: Entity
    /// The store the object lives in.
    public let loadedStore: LoadedStore
    // The mutable state below is only touched by the object's context, which is used from one thread at a time
    // (its documented contract) and never reenters an access to it. The runtime's check that two accesses do not
    // overlap runs on every access, several times per inserted and saved object: it is off for these properties
    // (`@exclusivity(unchecked)`); the compiler's static checks still apply.

    /// The object's state in its context.
    @exclusivity(unchecked) public internal(set) var state: State

    /// The owning context, not retained (a context owns its objects, not the reverse) and not weak (an object
    /// holding a weak reference is cheap, but see ``StoreContext/registered`` for why objects avoid them). The
    /// context clears it when it forgets the object or goes away itself, so it is never left dangling.
    unowned(unsafe) var context: StoreContext?
    /// Current values, including unsaved changes.
    @exclusivity(unchecked) var record: Record
    /// Where the object is in its context's ``ChangeList`` (`nil` when it has no unsaved changes there).
    @exclusivity(unchecked) var changeSlot: Int?
    /// The key space of the object's store and hierarchy in its context's ``IdentityMap``.
    @exclusivity(unchecked) var identitySpace: Int32 = 0
    /// Values as last fetched or saved (`nil` for inserted objects).
    @exclusivity(unchecked) var committed: Record?
    /// Whether an attribute was set since ``committed`` was taken. Most updated objects only gained or lost related
    /// objects (an inverse relationship the context maintains), and a save then need not compare every attribute.
    @exclusivity(unchecked) var attributesTouched = false

    init(record: Record, entity: Entity, store: LoadedStore, context: StoreContext, state: State) {
        self.objectID = ObjectID(storeUUID: store.identifier, entity: record.entity, primaryKey: record.primaryKey)
        self.globalID = record.globalID
        self.entity = entity
        self.loadedStore = store
        self.record = record
        self.committed = state == .inserted ? nil : record
        self.context = context
        self.state = state
    }

    deinit {
        context?.unregister(self)
    }

    var key: ObjectKey { ObjectKey(store: loadedStore.identifier, root: entity.rootName, primaryKey: record.primaryKey) }

    public var description: String { "ManagedObject(\(objectID))" }

    /// Whether the object has unsaved changes (inserted, updated or deleted).
    public var hasChanges: Bool { state == .inserted || state == .updated || state == .deleted }
    /// Whether the object is deleted in its context (not saved yet).
    public var isDeleted: Bool { state == .deleted }

    /// Throws unless the object can be used.
    func checkUsable() throws -> StoreContext {
        if case .invalidated(let why) = state { throw StoreError.objectInvalidated(objectID, reason: why) }
        if let why = loadedStore.invalidationReason { throw StoreError.objectInvalidated(objectID, reason: why) }
        guard let context else { throw StoreError.objectInvalidated(objectID, reason: "its context no longer exists") }
        return context
    }

    // MARK: Attributes

    /// The value of an attribute (``StoreValue/null`` when it has none).
    public func value(forKey key: String) throws -> StoreValue {
        _ = try checkUsable()
        guard let i = entity.attributeIndex(key) else {
            throw StoreError.unknownProperty(entity: entity.name, property: key)
        }
        return record.attributes[i]
    }

    /// Sets an attribute. Integer, double and string literals are converted to the attribute's type when nothing
    /// is lost (see ``StoreValue/coerced(to:)``); anything else is ``StoreError/typeMismatch(entity:property:expected:got:)``.
    public func setValue(_ value: StoreValue, forKey key: String) throws {
        let context = try checkUsable()
        try context.checkWritable(self)
        guard let i = entity.attributeIndex(key) else {
            throw StoreError.unknownProperty(entity: entity.name, property: key)
        }
        let attribute = entity.attributes[i]
        guard let v = value.coerced(to: attribute.type) else {
            throw StoreError.typeMismatch(entity: entity.name, property: key, expected: attribute.type, got: value.type?.rawValue ?? "nil")
        }
        record.attributes[i] = v
        attributesTouched = true
        context.markUpdated(self)
    }

    /// The object's current values as one record (its unsaved changes included): attribute values aligned with
    /// ``Entity/attributes`` and related primary keys aligned with ``Entity/relationships``, without fetching the
    /// related objects. Typed layers decode their values from it.
    public func recordSnapshot() throws -> Record {
        _ = try checkUsable()
        return record
    }

    /// Every attribute value by name.
    public func attributeValues() throws -> [String: StoreValue] {
        _ = try checkUsable()
        var out: [String: StoreValue] = [:]
        for (i, a) in entity.attributes.enumerated() { out[a.name] = record.attributes[i] }
        return out
    }

    /// Sets several attributes at once.
    public func setValues(_ values: [String: StoreValue]) throws {
        for (k, v) in values { try setValue(v, forKey: k) }
    }

    /// `subscript` access for reading; `nil` when the key is not an attribute or the object is unusable.
    /// Use ``value(forKey:)`` to learn why.
    public subscript(key: String) -> StoreValue? {
        try? value(forKey: key)
    }

    // MARK: Relationships

    /// The record a to-one relationship points to.
    public func object(forKey key: String) throws -> ManagedObject? {
        let context = try checkUsable()
        let (i, rel) = try relationship(key, toMany: false)
        return try context.related(self, index: i, relationship: rel).first
    }

    /// The records of a to-many relationship (in order, for ordered relationships).
    public func objects(forKey key: String) throws -> [ManagedObject] {
        let context = try checkUsable()
        let (i, rel) = try relationship(key, toMany: true)
        return try context.related(self, index: i, relationship: rel)
    }

    /// Points a to-one relationship at `object` (or clears it), updating the inverse side.
    public func setObject(_ object: ManagedObject?, forKey key: String) throws {
        let context = try checkUsable()
        try context.checkWritable(self)
        let (i, rel) = try relationship(key, toMany: false)
        try context.setToOne(self, index: i, relationship: rel, target: object)
    }

    /// Replaces the records of a to-many relationship (their order is kept for ordered relationships).
    public func setObjects(_ objects: [ManagedObject], forKey key: String) throws {
        let context = try checkUsable()
        try context.checkWritable(self)
        let (i, rel) = try relationship(key, toMany: true)
        try context.setToMany(self, index: i, relationship: rel, targets: objects)
    }

    /// Adds a record to a to-many relationship (at the end, for ordered relationships).
    public func addObject(_ object: ManagedObject, forKey key: String) throws {
        var current = try objects(forKey: key)
        guard !current.contains(where: { $0 === object }) else { return }
        current.append(object)
        try setObjects(current, forKey: key)
    }

    /// Inserts a record into an ordered to-many relationship at `index` (moving it if it is already there).
    public func insertObject(_ object: ManagedObject, at index: Int, forKey key: String) throws {
        var current = try objects(forKey: key).filter { $0 !== object }
        current.insert(object, at: max(0, min(index, current.count)))
        try setObjects(current, forKey: key)
    }

    /// Removes a record from a to-many relationship.
    public func removeObject(_ object: ManagedObject, forKey key: String) throws {
        let current = try objects(forKey: key)
        try setObjects(current.filter { $0 !== object }, forKey: key)
    }

    private func relationship(_ key: String, toMany: Bool) throws -> (Int, RelationshipDescription) {
        guard let i = entity.relationshipIndex(key) else {
            throw StoreError.unknownProperty(entity: entity.name, property: key)
        }
        let rel = entity.relationships[i]
        guard rel.isToMany == toMany else {
            throw StoreError.invalidRelationshipTarget(entity: entity.name, relationship: key,
                reason: rel.isToMany ? "is to-many: use objects(forKey:)/setObjects(_:forKey:)" : "is to-one: use object(forKey:)/setObject(_:forKey:)")
        }
        return (i, rel)
    }
}

/// Identifies an object inside a context: store, key space and primary key.
struct ObjectKey: Hashable {
    let store: UUID
    let root: String
    let primaryKey: Int64

    // Hashing the primary key alone: the context looks keys up several times per inserted object, and hashing the
    // root's name and the store's UUID each time cost more than the rest of an insert. Keys that differ only by root
    // or store collide and are told apart by `==`; a context holds few roots and fewer stores.
    func hash(into hasher: inout Hasher) { hasher.combine(primaryKey) }

    static func == (a: ObjectKey, b: ObjectKey) -> Bool {
        a.primaryKey == b.primaryKey && a.root == b.root && a.store == b.store
    }
}
