import StoreAPI

/// Write access to the models of a ``ModelStore``, handed to ``ModelStore/write(_:)``: inserts, updates and
/// deletes are saved together when the closure returns, or not at all when it throws. Fetches see the changes
/// made so far.
public final class ModelWriter {
    let context: StoreContext
    // The buffers below are touched only by this writer's own methods, which its write closure calls one at a time
    // and which never reenter each other: the runtime's check that two accesses do not overlap, paid on every
    // access to a class's stored property, is off for them (the compiler's static checks still apply).

    /// Each model type's layout, resolved on its first use in this write (not per record).
    @exclusivity(unchecked) private var layouts: [ObjectIdentifier: ModelLayout] = [:]
    /// The fields of the model being inserted, kept from one insert to the next: a write that inserts many
    /// records grows the buffer once instead of once per record.
    @exclusivity(unchecked) private var row = ModelRowWriter()
    /// The attribute values of the model being inserted, by position; reused the same way.
    @exclusivity(unchecked) private var positional: [StoreValue?] = []

    init(context: StoreContext) {
        self.context = context
    }

    private func resolvedLayout<M: PersistentModel>(_ type: M.Type) throws -> ModelLayout {
        if let known = layouts[ObjectIdentifier(type)] { return known }
        let resolved = try ModelLayout(type, in: context.schema)
        layouts[ObjectIdentifier(type)] = resolved
        return resolved
    }

    // MARK: Fetch

    /// The models of type `M` matching `predicate`, sorted by `sort`, at most `limit` (this write's changes
    /// included).
    public func fetch<M: PersistentModel>(
        _ type: M.Type, where predicate: ModelPredicate<M>? = nil, sortedBy sort: [ModelSort<M>] = [],
        offset: Int = 0, limit: Int? = nil
    ) throws -> [M] {
        let request = try FetchRequest(M.self, where: predicate, sortedBy: sort, offset: offset, limit: limit)
        let layout = try resolvedLayout(M.self)
        return try context.fetch(request).map { try decode(M.self, $0, layout) }
    }

    /// The number of models of type `M` matching `predicate` (this write's changes included).
    public func count<M: PersistentModel>(_ type: M.Type, where predicate: ModelPredicate<M>? = nil) throws -> Int {
        try context.count(FetchRequest(M.self, where: predicate, sortedBy: []))
    }

    /// The model a reference points to, or `nil` when its record no longer exists.
    public func model<M: PersistentModel>(_ ref: ModelRef<M>) throws -> M? {
        guard let id = ref.objectID, let o = try? context.object(with: id), !o.isDeleted else { return nil }
        return try decode(M.self, o, try resolvedLayout(M.self))
    }

    // MARK: Insert, update, delete

    /// Inserts a new record for `model` and returns the model with its ``PersistentModel/persistentID``; pass
    /// its ``PersistentModel/ref`` to the relationships of other models.
    @discardableResult
    public func insert<M: PersistentModel>(_ model: M) throws -> M {
        let layout = try resolvedLayout(M.self)
        row.fields.removeAll(keepingCapacity: true)
        model.encode(to: &row)
        let writer = row
        // By attribute position, resolved once per write: no attribute name is hashed per record.
        let count = layout.entity.attributes.count
        if positional.count == count {
            for i in 0..<count { positional[i] = nil }
        } else {
            positional = [StoreValue?](repeating: nil, count: count)
        }
        var hasRelationships = false
        for (i, field) in writer.fields.enumerated() {
            switch field {
            case .value(let v):
                if case .attribute(let position, _) = layout.slots[i] { positional[position] = v }
            case .unencodable(let why): throw unencodable(layout, i, why)
            case .toOne(nil, isSet: false): break
            case .toMany(let ids) where ids.isEmpty: break
            case .toOne, .toMany: hasRelationships = true
            }
        }
        let object = try context.insert(M.entityName, attributeValues: positional)
        if hasRelationships {
            for (i, field) in writer.fields.enumerated() {
                switch field {
                case .toOne(nil, isSet: false): break
                case .toMany(let ids) where ids.isEmpty: break
                case .toOne, .toMany: try setRelationship(object, layout, i, field)
                case .value, .unencodable: break
                }
            }
        }
        // The values are the model's own: only its identity and the stored form of its values are new.
        var saved = model
        saved.persistentID = PersistentID(objectID: object.objectID, snapshot: try object.recordSnapshot())
        return saved
    }

    /// Saves the properties of `model` that differ from the values it was read with, and returns it as it is
    /// now stored. Properties another writer changed since and this value did not are kept as the other writer
    /// left them.
    @discardableResult
    public func update<M: PersistentModel>(_ model: M) throws -> M {
        guard let id = model.persistentID else {
            throw StoreError.invalidArgument("this \(M.entityName) was never inserted: insert it before updating it")
        }
        let layout = try resolvedLayout(M.self)
        let object = try context.object(with: id.objectID)
        let snapshot = id.snapshot
        var writer = ModelRowWriter()
        model.encode(to: &writer)
        for (i, field) in writer.fields.enumerated() {
            switch (layout.slots[i], field) {
            case (.attribute(let a, let type), .value(let v)):
                if snapshot.attributes.indices.contains(a), snapshot.attributes[a] == (v.coerced(to: type) ?? v) { continue }
                try object.setValue(v, forKey: layout.names[i])
            case (_, .unencodable(let why)):
                throw unencodable(layout, i, why)
            case (.relationship(let r), .toOne(let target, let isSet)):
                if !(isSet && target == nil), snapshot.relationships.indices.contains(r), target.map({ [$0.primaryKey] }) ?? [] == snapshot.relationships[r].keys,
                   target?.storeUUID ?? id.objectID.storeUUID == id.objectID.storeUUID { continue }
                try setRelationship(object, layout, i, field)
            case (.relationship(let r), .toMany(let targets)):
                if snapshot.relationships.indices.contains(r), targets.allSatisfy({ $0 != nil }) {
                    let keys = targets.compactMap { $0?.primaryKey }
                    let old = snapshot.relationships[r].keys
                    let ordered = layout.entity.relationships[r].isOrdered
                    if ordered ? keys == old : Set(keys) == Set(old) && keys.count == old.count { continue }
                }
                try setRelationship(object, layout, i, field)
            default:
                throw StoreError.invalidArgument("\(M.entityName).\(layout.names[i]): the schema and the type disagree on its kind")
            }
        }
        return try decode(M.self, object, layout)
    }

    /// Deletes the record of `model` (its relationships' delete rules apply).
    public func delete<M: PersistentModel>(_ model: M) throws {
        guard let id = model.persistentID else {
            throw StoreError.invalidArgument("this \(M.entityName) was never inserted: there is nothing to delete")
        }
        try context.delete(try context.object(with: id.objectID))
    }

    /// Deletes the record a reference points to.
    public func delete<M: PersistentModel>(_ ref: ModelRef<M>) throws {
        guard let id = ref.objectID else {
            throw StoreError.invalidArgument("a reference to a \(M.entityName) never inserted: there is nothing to delete")
        }
        try context.delete(try context.object(with: id))
    }

    /// Deletes every model of type `M` matching `predicate`; returns how many.
    @discardableResult
    public func deleteAll<M: PersistentModel>(_ type: M.Type, where predicate: ModelPredicate<M>? = nil) throws -> Int {
        let objects = try context.fetch(FetchRequest(M.self, where: predicate, sortedBy: []))
        for o in objects where !o.isDeleted { try context.delete(o) }
        return objects.count
    }

    // MARK: Helpers

    private func decode<M: PersistentModel>(_ type: M.Type, _ object: ManagedObject, _ layout: ModelLayout) throws -> M {
        try M(from: ModelRow(record: try object.recordSnapshot(), layout: layout, storeUUID: object.objectID.storeUUID))
    }

    private func setRelationship(
        _ object: ManagedObject, _ layout: ModelLayout, _ i: Int, _ field: ModelRowWriter.Field
    ) throws {
        let name = layout.names[i]
        func target(_ id: ObjectID?) throws -> ManagedObject {
            guard let id else {
                throw StoreError.invalidRelationshipTarget(entity: layout.entity.name, relationship: name,
                                                           reason: "refers to a model that was never inserted")
            }
            return try context.object(with: id)
        }
        switch field {
        case .toOne(let id, let isSet):
            try object.setObject(isSet ? try target(id) : nil, forKey: name)
        case .toMany(let ids):
            try object.setObjects(try ids.map(target), forKey: name)
        case .value, .unencodable:
            break
        }
    }

    private func unencodable(_ layout: ModelLayout, _ i: Int, _ why: String) -> StoreError {
        .invalidArgument("\(layout.entity.name).\(layout.names[i]): the value cannot be stored: \(why)")
    }
}
