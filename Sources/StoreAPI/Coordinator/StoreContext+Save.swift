import Foundation

extension StoreContext {
    /// Validates and writes every unsaved change, one atomic save per store.
    ///
    /// Before anything is written, every inserted and changed object is checked: required attributes and
    /// relationships have values, to-many relationships respect their min/max counts, and uniqueness constraints
    /// hold against the other objects of the save and the records already stored. A failed check throws and writes
    /// nothing; the context keeps its changes so they can be fixed and saved again. Before the checks, an inserted
    /// object that collides with another record on a uniqueness constraint becomes an update of that record when
    /// its merge policy (``mergePolicy``, ``setMergePolicy(_:for:)``) is not ``MergePolicy/error``.
    ///
    /// Each store's changes are written in one transaction (with a history transaction when the store tracks
    /// history). A save spanning several stores is atomic per store, not across stores.
    public func save() throws {
        mergeChanges()
        guard hasChanges else { return }
        for o in changes.objects {
            if let why = o.loadedStore.invalidationReason {
                throw StoreError.objectInvalidated(o.objectID, reason: why)
            }
        }
        // Records inserted without objects: their store must still take inserts.
        for staged in recordInserts { _ = try resolveInsert(staged.entity.name, into: staged.store) }
        // Inserts that collide on a uniqueness constraint become updates, where a merge policy says so.
        try resolveInsertConflicts()
        let objects = changes.objects
        let live = objects.filter { $0.state == .inserted || $0.state == .updated }
        for o in live { try validate(o) }
        try checkUniqueness(live, deleted: objects.filter { $0.state == .deleted })

        // A context rarely spans more than a few stores: a linear search by identity beats hashing UUIDs per object.
        var byStore: [(store: LoadedStore, objects: [ManagedObject])] = []
        for o in objects {
            if let i = byStore.firstIndex(where: { $0.store === o.loadedStore }) {
                byStore[i].objects.append(o)
            } else {
                byStore.append((o.loadedStore, [o]))
            }
        }
        for staged in recordInserts where !byStore.contains(where: { $0.store === staged.store }) {
            byStore.append((staged.store, []))
        }
        let now = Date()
        var savedGroups = 0
        // Built only when something observes the coordinator: a large save would otherwise list every record twice.
        var saved: [SavedChanges] = []
        let announcing = coordinator.isObservingChanges
        defer {
            // Observers hear of every store's save that committed, even when a later store's failed.
            for changes in saved { coordinator.post(changes) }
            // Forget what was written, even when a later store's save failed (its changes stay pending).
            if savedGroups == byStore.count {
                changes.removeAll()
                recordInserts.removeAll()
                insertMergePolicies.removeAll()
            } else {
                for group in byStore[..<savedGroups] {
                    for o in group.objects { changes.remove(o) }
                    recordInserts.removeAll { $0.store === group.store }
                }
            }
        }
        for (store, group) in byStore {
            let changes = try changeSet(for: group, store: store, timestamp: now)
            if !changes.isEmpty { try store.store.save(changes) }
            if announcing { saved.append(announcement(of: changes, in: store)) }
            for o in group { finishSave(o) }
            savedGroups += 1
        }
    }

    /// What a store's save changed, for the coordinator's observers.
    private func announcement(of changes: StoreChanges, in store: LoadedStore) -> SavedChanges {
        let uuid = store.identifier
        return SavedChanges(
            store: uuid, origin: .context(contextID),
            inserted: changes.inserted.map { ObjectID(storeUUID: uuid, entity: $0.entity, primaryKey: $0.primaryKey) },
            updated: changes.updated.map { ObjectID(storeUUID: uuid, entity: $0.entity, primaryKey: $0.primaryKey) },
            deleted: changes.deleted.map { ObjectID(storeUUID: uuid, entity: $0.entity, primaryKey: $0.primaryKey) },
            schema: schema)
    }

    /// Marks an object as saved (its context bookkeeping is cleared by ``save()``).
    private func finishSave(_ o: ManagedObject) {
        if o.state == .deleted {
            o.state = .invalidated("it was deleted")
            forget(o)
        } else {
            o.state = .clean
            o.committed = o.record
            o.attributesTouched = false
        }
    }

    private func changeSet(for group: [ManagedObject], store: LoadedStore, timestamp: Date) throws -> StoreChanges {
        var changes = StoreChanges()
        var history: [HistoryChange] = []
        let tracking = store.storeDescription.options.historyTracking
        for o in group {
            switch o.state {
            case .inserted:
                changes.inserted.append(o.record)
                if tracking { history.append(HistoryChange(kind: .insert, entity: o.entity.name, primaryKey: o.record.primaryKey, globalID: o.globalID)) }
            case .updated:
                let changed = changedProperties(o)
                guard !changed.isEmpty else { continue }
                changes.updated.append(o.record)
                changes.updatedProperties.append(changed)
                if tracking {
                    let keys = changed.attributes.map { o.entity.attributes[$0].name } + changed.relationships.map { o.entity.relationships[$0].name }
                    history.append(HistoryChange(kind: .update, entity: o.entity.name, primaryKey: o.record.primaryKey,
                                                 globalID: o.globalID, changedKeys: keys))
                }
            case .deleted:
                changes.deleted.append(o.record.key)
                if tracking {
                    history.append(HistoryChange(kind: .delete, entity: o.entity.name, primaryKey: o.record.primaryKey,
                                                 globalID: o.globalID, tombstone: tombstone(o)))
                }
            default:
                continue
            }
        }
        for staged in recordInserts where staged.store === store {
            // Shared with the staged list when nothing comes before them, not copied record by record: a copy
            // retains every record's values, only to release them again after the save.
            if changes.inserted.isEmpty {
                changes.inserted = staged.records
            } else {
                changes.inserted += staged.records
            }
            if tracking {
                history.reserveCapacity(history.count + staged.records.count)
                for r in staged.records {
                    history.append(HistoryChange(kind: .insert, entity: r.entity, primaryKey: r.primaryKey, globalID: r.globalID))
                }
            }
        }
        if tracking, !history.isEmpty {
            changes.history = [.saved(at: timestamp, author: author, contextName: self.name, changes: history)]
        }
        return changes
    }

    /// The attributes and relationships whose value differs from the committed one.
    private func changedProperties(_ o: ManagedObject) -> ChangedProperties {
        var changed = ChangedProperties()
        guard let before = o.committed else { return changed }
        if o.attributesTouched {
            for i in o.entity.attributes.indices where before.attributes[i] != o.record.attributes[i] {
                changed.attributes.append(i)
            }
        }
        for (i, r) in o.entity.relationships.enumerated() {
            let x = before.relationships[i].keys
            let y = o.record.relationships[i].keys
            if x == y { continue }
            // Unordered to-many values are sets: only the same keys in another order count as unchanged.
            if r.isOrdered || !r.isToMany || x.count != y.count || Set(x) != Set(y) {
                changed.relationships.append(i)
            }
        }
        return changed
    }

    /// The uniqueness-constrained values of a deleted record, so a sync peer can match it by natural key.
    private func tombstone(_ o: ManagedObject) -> [String: String] {
        var out: [String: String] = [:]
        for name in Set(o.entity.uniquenessConstraints.flatMap { $0 }) {
            if let i = o.entity.attributeIndex(name) {
                let v = o.record.attributes[i]
                out[name] = v.stringValue ?? "\(v)"
            }
        }
        return out
    }

    // MARK: Validation

    private func validate(_ o: ManagedObject) throws {
        try validate(o.record, of: o.entity, id: o.objectID)
    }

    /// Checks that a record has every required value and that its to-many relationships respect their counts.
    func validate(_ record: Record, of entity: Entity, id: @autoclosure () -> ObjectID) throws {
        for i in entity.requiredAttributes where record.attributes[i].isNull {
            throw StoreError.missingValue(entity: entity.name, property: entity.attributes[i].name, object: id())
        }
        for i in entity.checkedRelationships {
            let r = entity.relationships[i]
            let n = record.relationships[i].keys.count
            if n == 0 {
                if !r.isOptional {
                    throw StoreError.missingValue(entity: entity.name, property: r.name, object: id())
                }
                continue
            }
            if r.isToMany, n < r.minCount || (r.maxCount > 0 && n > r.maxCount) {
                throw StoreError.countViolation(entity: entity.name, relationship: r.name, count: n, object: id())
            }
        }
    }

    /// A record whose uniqueness-constrained values a save checks.
    struct UniquenessCandidate {
        let entity: Entity
        let record: Record
        let store: LoadedStore

        init(entity: Entity, record: Record, store: LoadedStore) {
            self.entity = entity
            self.record = record
            self.store = store
        }

        init(_ o: ManagedObject) {
            self.init(entity: o.entity, record: o.record, store: o.loadedStore)
        }

        var objectID: ObjectID { ObjectID(storeUUID: store.identifier, entity: record.entity, primaryKey: record.primaryKey) }
    }

    /// Checks every uniqueness constraint of the saved objects against each other and against the stores.
    private func checkUniqueness(_ objects: [ManagedObject], deleted: [ManagedObject]) throws {
        guard schema.entities.contains(where: { !$0.uniquenessConstraints.isEmpty }) else { return }
        try checkUniqueness(objects.map(UniquenessCandidate.init), excluding: Set(deleted.map(\.key)), unsavedChangesCount: true)
    }

    /// Checks the candidates' uniqueness constraints against each other and against their stores' records, except
    /// the records `excluding` names. With `unsavedChangesCount`, stored records this context has changed are
    /// judged on their unsaved values (which are among the candidates), not their stored ones.
    func checkUniqueness(_ objects: [UniquenessCandidate], excluding deletedKeys: Set<ObjectKey>, unsavedChangesCount: Bool) throws {
        var groups: [String: (owner: Entity, attributes: [String], objects: [UniquenessCandidate])] = [:]
        // Constraints are looked up once per entity, not once per object.
        var byEntity: [ObjectIdentifier: [(id: String, owner: Entity, attributes: [String])]] = [:]
        for o in objects {
            let applicable = byEntity[ObjectIdentifier(o.entity)] ?? {
                let found = constraints(of: o.entity).map { owner, attrs in
                    (id: owner.name + "\u{1}" + attrs.joined(separator: "\u{1}"), owner: owner, attributes: attrs)
                }
                byEntity[ObjectIdentifier(o.entity)] = found
                return found
            }()
            for c in applicable {
                groups[c.id, default: (c.owner, c.attributes, [])].objects.append(o)
            }
        }
        for (_, group) in groups.sorted(by: { $0.key < $1.key }) {
            var seen: [[StoreValue]: UniquenessCandidate] = [:]
            var toCheck: [(UniquenessCandidate, [StoreValue])] = []
            for o in group.objects {
                let values = group.attributes.compactMap { name in o.entity.attributeIndex(name).map { o.record.attributes[$0] } }
                // Like SQL UNIQUE, a constraint with an empty value cannot conflict.
                guard values.count == group.attributes.count, !values.contains(where: \.isNull) else { continue }
                if let other = seen[values], other.store === o.store {
                    throw StoreError.uniquenessViolation(entity: group.owner.name, attributes: group.attributes, values: values, existing: other.objectID)
                }
                seen[values] = o
                toCheck.append((o, values))
            }
            try checkStored(toCheck, owner: group.owner, attributes: group.attributes, exclude: deletedKeys,
                            unsavedChangesCount: unsavedChangesCount)
        }
    }

    /// Looks for stored records that already use the values. Records changed or deleted in this context are judged
    /// on their unsaved values (already compared above), not their stored ones, when `unsavedChangesCount`.
    private func checkStored(_ items: [(UniquenessCandidate, [StoreValue])], owner: Entity, attributes: [String], exclude: Set<ObjectKey>,
                             unsavedChangesCount: Bool) throws {
        var byStore: [UUID: [(UniquenessCandidate, [StoreValue])]] = [:]
        for item in items { byStore[item.0.store.identifier, default: []].append(item) }
        for (_, batch) in byStore {
            guard let store = batch.first?.0.store else { continue }
            let chunks: [[(UniquenessCandidate, [StoreValue])]] = attributes.count == 1
                ? stride(from: 0, to: batch.count, by: 500).map { Array(batch[$0..<min($0 + 500, batch.count)]) }
                : batch.map { [$0] }
            for chunk in chunks {
                let predicate: FetchPredicate = attributes.count == 1
                    ? .comparison(.keyPath([attributes[0]]), .in, .list(chunk.map { $0.1[0] }), [])
                    : .and(zip(attributes, chunk[0].1).map { .comparison(.keyPath([$0.0]), .equal, .constant($0.1), []) })
                let hits = try store.store.fetch(FetchRequest(entity: owner.name, predicate: predicate))
                for hit in hits {
                    let hitKey = ObjectKey(store: store.identifier, root: owner.rootName, primaryKey: hit.primaryKey)
                    if exclude.contains(hitKey) { continue }
                    if unsavedChangesCount, let registeredObject = registeredObject(hitKey), registeredObject.changeSlot != nil,
                       registeredObject.state != .clean { continue }
                    guard let hitEntity = schema.entity(named: hit.entity) else { continue }
                    let hitValues = attributes.compactMap { a in hitEntity.attributeIndex(a).map { hit.attributes[$0] } }
                    for (o, values) in chunk where o.record.primaryKey != hit.primaryKey
                        && zip(values, hitValues).allSatisfy({ PredicateEvaluator.equal($0, $1) })
                    {
                        throw StoreError.uniquenessViolation(entity: owner.name, attributes: attributes, values: values,
                            existing: ObjectID(storeUUID: store.identifier, entity: hit.entity, primaryKey: hit.primaryKey))
                    }
                }
            }
        }
    }

    /// Each constraint that applies to `entity`, with the entity that declares it (whose hierarchy it spans).
    func constraints(of entity: Entity) -> [(Entity, [String])] {
        var out: [(Entity, [String])] = []
        for name in [entity.name] + entity.ancestorNames {
            guard let e = schema.entity(named: name) else { continue }
            for c in e.definition.uniquenessConstraints { out.append((e, c)) }
        }
        return out
    }
}
