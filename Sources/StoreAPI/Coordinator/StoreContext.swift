import Foundation

/// A unit of work over a ``StoreCoordinator``: insert, fetch, change and delete records, then ``save()`` them
/// atomically per store — or ``rollback()``.
///
/// ```swift
/// let context = coordinator.newContext()
/// let author = try context.insert("Author", ["name": "Ursula K. Le Guin"])
/// let book = try context.insert("Book", ["title": "The Dispossessed", "pages": 387])
/// try book.setObject(author, forKey: "author")        // also adds the book to author.books
/// try context.save()
///
/// let long = try context.fetch(FetchRequest(entity: "Book", predicate: try FetchPredicate("pages > 300")))
/// ```
///
/// A context keeps one ``ManagedObject`` per record (an identity map) and includes its unsaved changes in fetches.
/// It is not thread-safe: use it from one thread or task at a time, and pass ``ObjectID``s between contexts.
public final class StoreContext {
    /// The coordinator this context works over.
    public let coordinator: StoreCoordinator
    /// Recorded as the author of history transactions this context saves.
    public var author: String?
    /// Recorded as the context name of history transactions this context saves (Core Data's context `name`), so
    /// history readers can tell, say, an app's import context from its view context.
    public var name: String?
    /// What a save does with an inserted object that collides with another record on a uniqueness constraint
    /// (see ``MergePolicy``); ``MergePolicy/error`` unless set.
    public var mergePolicy: MergePolicy = .error
    /// Policies set for single inserted objects (``setMergePolicy(_:for:)``), by object.
    var insertMergePolicies: [ObjectKey: MergePolicy] = [:]

    /// Every live object the context handed out, not retained: an object nobody uses any more (and that has no
    /// unsaved changes) is released and takes itself out (``unregister(_:)``, from its deinit), so a long-lived
    /// context does not grow with every fetch. Weak references would do the same, but an object that is the target
    /// of a weak reference pays a side-table lookup on every retain and release, which made bulk inserts a third
    /// slower. The invariant that keeps this safe: an object in this map has `context === self`, and an object
    /// leaves the map only through ``forget(_:)`` (which clears its `context`) or its own deinit.
    let registered = IdentityMap()
    /// Objects with unsaved changes (held strongly until saved or rolled back), in the order they first changed.
    /// (Unchecked for overlapping accesses like the objects' own state: see ``ManagedObject/state``.)
    @exclusivity(unchecked) var changes = ChangeList()
    /// Records to insert without objects (``insertWithoutObjects(_:attributeValues:globalIDs:into:)``), written by
    /// the next save with ``changes``.
    var recordInserts: [RecordInserts] = []
    /// The entities and stores inserts resolved, reused while the coordinator's stores stay the same (bulk inserts
    /// resolve them once, not per record). Searched by name: a context inserts into a handful of entities.
    @exclusivity(unchecked) private var insertTargets: [InsertTarget] = []
    /// The coordinator's ``StoreCoordinator/storesGeneration`` the insert targets were resolved in.
    private var insertTargetsGeneration = -1
    /// Global identifiers for inserts that do not bring their own. (Only the context touches it, one call at a
    /// time: the runtime's exclusivity check cost more than the identifier.)
    @exclusivity(unchecked) private var globalIDs = GlobalIDSource()

    /// Identifies this context in the changes it saves (``SavedChanges/Origin/context(_:)``).
    public let contextID = ID.next()
    /// Other contexts' and processes' changes waiting to be merged, and the observation that collects them, while
    /// ``automaticallyMergesChanges`` is on.
    let mergeInbox = MergeInbox()
    var mergeObservation: ChangeObservation?

    init(coordinator: StoreCoordinator) {
        self.coordinator = coordinator
    }

    deinit {
        // Objects outlive their context as invalid objects: they must not reach back into it.
        registered.forEach { $0.context = nil }
    }

    /// The schema of the coordinator.
    public var schema: Schema { coordinator.schema }

    /// Whether there are unsaved changes.
    public var hasChanges: Bool { !changes.isEmpty || !recordInserts.isEmpty }

    /// Objects inserted, updated and deleted since the last save.
    public var insertedObjects: [ManagedObject] { pending(.inserted) }
    /// Objects changed since the last save.
    public var updatedObjects: [ManagedObject] { pending(.updated) }
    /// Objects deleted since the last save.
    public var deletedObjects: [ManagedObject] { pending(.deleted) }

    private func pending(_ state: ManagedObject.State) -> [ManagedObject] {
        changes.objects.filter { $0.state == state }
    }

    // MARK: Insert

    /// Inserts a new record of `entity` with `values` (other attributes take their defaults).
    ///
    /// The record gets its permanent primary key and global identifier at once: `globalID`, or a new random
    /// (version 4) UUID when it is `nil`. It goes to `store`, or to the first loaded store whose configuration
    /// holds the entity.
    @discardableResult
    public func insert(
        _ entity: String, _ values: [String: StoreValue] = [:], globalID: UUID? = nil, into store: LoadedStore? = nil
    ) throws -> ManagedObject {
        let resolved = try insertTarget(entity, store)
        return try insert(resolved, attributes: try resolved.entity.attributeValues(values), globalID: globalID)
    }

    /// Inserts a new record of `entity` with its attribute values in the order of ``Entity/attributes`` (`nil`:
    /// the attribute's default), converted as ``insert(_:_:globalID:into:)`` converts named values. For layers
    /// that resolve attribute names once (typed models): no name is looked up per record.
    ///
    /// - Throws: ``StoreError/invalidArgument(_:)`` when there are not as many values as attributes; the errors of
    ///   ``insert(_:_:globalID:into:)`` otherwise.
    @discardableResult
    public func insert(
        _ entity: String, attributeValues values: [StoreValue?], globalID: UUID? = nil, into store: LoadedStore? = nil
    ) throws -> ManagedObject {
        let resolved = try insertTarget(entity, store)
        return try insert(resolved, attributes: try resolved.entity.attributeValues(ordered: values), globalID: globalID)
    }

    private func insert(_ resolved: InsertTarget, attributes: [StoreValue], globalID: UUID?) throws -> ManagedObject {
        let e = resolved.entity
        let target = resolved.store
        try checkInsertable(target)
        let primaryKey = try resolved.takePrimaryKey()
        let record = Record(entity: e.name, primaryKey: primaryKey, globalID: globalID ?? globalIDs.next(),
                            attributes: attributes, relationships: e.blankRelationships)
        let object = ManagedObject(record: record, entity: e, store: target, context: self, state: .inserted)
        object.identitySpace = resolved.space
        registered.set(object, space: resolved.space, primaryKey: primaryKey)
        changes.add(object)
        return object
    }

    /// A global identifier for a record inserted without one.
    func nextGlobalID() -> UUID { globalIDs.next() }

    /// Resolves the entity and store an insert goes to, checking that the store takes inserts.
    func resolveInsert(_ entity: String, into store: LoadedStore?) throws -> (Entity, LoadedStore) {
        let resolved = try insertTarget(entity, store)
        try checkInsertable(resolved.store)
        return (resolved.entity, resolved.store)
    }

    private func checkInsertable(_ target: LoadedStore) throws {
        if let why = target.invalidationReason {
            throw StoreError.refused(target.url ?? URL(fileURLWithPath: "/"), reason: "store is no longer valid: \(why)")
        }
        guard !target.storeDescription.options.isReadOnly else {
            throw StoreError.readOnly(target.url ?? URL(fileURLWithPath: "/"), reason: "store is loaded read-only")
        }
    }

    /// What an insert resolved its entity name and store to, and the primary keys it took from the store and has
    /// not used yet: inserts take growing runs of keys (1, 2, 4 … 1024) instead of locking the store's key
    /// allocator and hashing the hierarchy's name for each record. Keys a context never uses are skipped.
    private final class InsertTarget {
        let name: String
        let entity: Entity
        let store: LoadedStore
        /// The identity map's key space of the entity's hierarchy in the store.
        let space: Int32
        /// Whether the store was chosen by configuration (not passed to ``StoreContext/insert(_:_:globalID:into:)``).
        let isDefault: Bool
        var nextKey: Int64 = 0
        var endKey: Int64 = 0
        var runSize = 1

        init(name: String, entity: Entity, store: LoadedStore, space: Int32, isDefault: Bool) {
            self.isDefault = isDefault
            self.name = name
            self.entity = entity
            self.store = store
            self.space = space
        }

        func takePrimaryKey() throws -> Int64 {
            if nextKey < endKey {
                nextKey += 1
                return nextKey - 1
            }
            let keys = try store.takePrimaryKeys(root: entity.rootName, upTo: runSize)
            runSize = min(runSize * 2, 1024)
            nextKey = keys.lowerBound + 1
            endKey = keys.upperBound
            return keys.lowerBound
        }
    }

    private func insertTarget(_ name: String, _ store: LoadedStore?) throws -> InsertTarget {
        let generation = coordinator.storesGeneration
        if insertTargetsGeneration != generation {
            insertTargets.removeAll()
            insertTargetsGeneration = generation
        }
        if let t = insertTargets.first(where: { $0.name == name && (store == nil ? $0.isDefault : $0.store === store) }) {
            return t
        }
        let e = try schema.requireEntity(name)
        guard !e.isAbstract else { throw StoreError.abstractEntity(name) }
        let target = try store ?? coordinator.store(for: name)
        guard target.entityNames.contains(name) else { throw StoreError.noStoreForEntity(name) }
        let resolved = InsertTarget(name: name, entity: e, store: target,
                                    space: registered.space(store: target.identifier, root: e.rootName), isDefault: store == nil)
        insertTargets.append(resolved)
        return resolved
    }

    // MARK: Lookup

    /// The object with this ID, from the context or its store.
    public func object(with id: ObjectID) throws -> ManagedObject {
        guard let store = coordinator.store(withIdentifier: id.storeUUID) else { throw StoreError.objectNotFound(id) }
        let entity = try schema.requireEntity(id.entity)
        if let o = registeredObject(ObjectKey(store: store.identifier, root: entity.rootName, primaryKey: id.primaryKey)) {
            if o.entity.name != id.entity { throw StoreError.objectNotFound(id) }
            return o
        }
        guard let r = try store.store.records(withKeys: [id.primaryKey], root: entity.rootName).first, r.entity == id.entity
        else { throw StoreError.objectNotFound(id) }
        return try register(r, from: store)
    }

    /// Returns the registered object for a stored record, creating it if needed. Clean objects are refreshed with
    /// the stored values; objects with unsaved changes keep them.
    func register(_ record: Record, from store: LoadedStore) throws -> ManagedObject {
        let entity = try schema.requireEntity(record.entity)
        let space = registered.space(store: store.identifier, root: entity.rootName)
        if let o = registered.object(space: space, primaryKey: record.primaryKey) {
            if o.state == .clean {
                o.record = record
                o.committed = record
                o.attributesTouched = false
            }
            return o
        }
        let o = ManagedObject(record: record, entity: entity, store: store, context: self, state: .clean)
        o.identitySpace = space
        registered.set(o, space: space, primaryKey: record.primaryKey)
        return o
    }

    /// The objects a relationship of `object` points to, fetching the ones not registered yet in one call.
    func related(_ object: ManagedObject, index: Int, relationship: RelationshipDescription) throws -> [ManagedObject] {
        let keys = object.record.relationships[index].keys
        return try objects(forKeys: keys, destination: relationship.destination, in: object.loadedStore)
    }

    func objects(forKeys keys: [Int64], destination: String, in store: LoadedStore) throws -> [ManagedObject] {
        guard !keys.isEmpty else { return [] }
        let root = try schema.requireEntity(destination).rootName
        let space = registered.existingSpace(store: store.identifier, root: root)
        var found: [Int64: ManagedObject] = [:]
        var missing: [Int64] = []
        for k in keys {
            if let space, let o = registered.object(space: space, primaryKey: k) { found[k] = o }
            else { missing.append(k) }
        }
        if !missing.isEmpty {
            for r in try store.store.records(withKeys: missing, root: root) { found[r.primaryKey] = try register(r, from: store) }
        }
        return keys.compactMap { found[$0] }
    }

    // MARK: Change tracking

    func noteChanged(_ object: ManagedObject) {
        changes.add(object)
    }

    func markUpdated(_ object: ManagedObject) {
        if object.state == .clean { object.state = .updated }
        noteChanged(object)
    }

    func checkWritable(_ object: ManagedObject) throws {
        if object.state == .deleted {
            throw StoreError.objectInvalidated(object.objectID, reason: "it was deleted in this context")
        }
        if object.loadedStore.storeDescription.options.isReadOnly {
            throw StoreError.readOnly(object.loadedStore.url ?? URL(fileURLWithPath: "/"), reason: "store is loaded read-only")
        }
    }

    // MARK: Identity map

    /// The live object registered under `key`.
    func registeredObject(_ key: ObjectKey) -> ManagedObject? {
        guard let space = registered.existingSpace(store: key.store, root: key.root) else { return nil }
        return registered.object(space: space, primaryKey: key.primaryKey)
    }

    /// Takes an object out of the identity map for good (it was invalidated): it no longer refers to this context.
    func forget(_ object: ManagedObject) {
        unregister(object)
        object.context = nil
    }

    /// Removes `object`'s entry, if the entry is this object (a reset context may hold a newer object under the
    /// same key). Called by ``ManagedObject``'s deinit.
    func unregister(_ object: ManagedObject) {
        registered.remove(object, space: object.identitySpace, primaryKey: object.record.primaryKey)
    }

    // MARK: Rollback and reset

    /// Discards every unsaved change: inserted objects become invalid, changed and deleted ones return to their
    /// saved values.
    public func rollback() {
        for o in changes.objects {
            if let committed = o.committed {
                o.record = committed
                o.attributesTouched = false
                o.state = .clean
            } else {
                o.state = .invalidated("its insertion was rolled back")
                forget(o)
            }
        }
        changes.removeAll()
        recordInserts.removeAll()
        insertMergePolicies.removeAll()
    }

    /// Forgets every object (unsaved changes are discarded); objects handed out before become invalid.
    public func reset() {
        registered.forEach { o in
            o.state = .invalidated("its context was reset")
            o.context = nil
        }
        registered.removeAll()
        changes.removeAll()
        recordInserts.removeAll()
    }
}
