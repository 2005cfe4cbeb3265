import Foundation

extension StoreContext {
    /// Sets the merge policy for one inserted object (overriding ``mergePolicy`` for it), or removes it (`nil`):
    /// what its save does if the object collides with another record on a uniqueness constraint (see
    /// ``MergePolicy``).
    public func setMergePolicy(_ policy: MergePolicy?, for object: ManagedObject) throws {
        _ = try object.checkUsable()
        guard object.state == .inserted else {
            throw StoreError.invalidArgument("\(object.objectID): a merge policy applies to an inserted object only")
        }
        insertMergePolicies[object.key] = policy
    }

    /// The policy that applies to an inserted object.
    private func mergePolicy(for object: ManagedObject) -> MergePolicy {
        insertMergePolicies[object.key] ?? mergePolicy
    }

    /// Turns each inserted object that collides on a uniqueness constraint, and whose policy is not
    /// ``MergePolicy/error``, into an update of the record it collides with (see ``MergePolicy``). Runs before a
    /// save checks anything, so the save then validates the merged records as any others; what stays colliding
    /// fails it as before.
    func resolveInsertConflicts() throws {
        guard mergePolicy != .error || insertMergePolicies.values.contains(where: { $0 != .error }) else { return }
        let live = changes.objects.filter { $0.state == .inserted || $0.state == .updated }
        guard live.contains(where: { $0.state == .inserted && mergePolicy(for: $0) != .error }) else { return }

        // Within the save: changed stored records hold their values first, then inserts in the order they were made.
        var holders: [String: [[StoreValue]: ManagedObject]] = [:]
        let ordered = live.filter { $0.state == .updated } + live.filter { $0.state == .inserted }
        for o in ordered {
            for (owner, attributes) in constraints(of: o.entity) {
                guard let values = Self.constraintValues(o, attributes) else { continue }
                let id = owner.name + "\u{1}" + attributes.joined(separator: "\u{1}")
                guard let holder = holders[id]?[values], holder.state == .inserted || holder.state == .updated else {
                    holders[id, default: [:]][values] = o
                    continue
                }
                if o.state == .inserted, mergePolicy(for: o) != .error, holder.entity.name == o.entity.name,
                   holder.loadedStore === o.loadedStore
                {
                    try merge(o, into: holder, mergePolicy(for: o))
                    break
                }
            }
        }

        // Against stored records: each constraint's values looked up together, a chunk at a time, per store.
        var pending: [String: (store: LoadedStore, owner: Entity, attributes: [String], items: [(ManagedObject, [StoreValue])])] = [:]
        for o in live where o.state == .inserted && mergePolicy(for: o) != .error {
            for (owner, attributes) in constraints(of: o.entity) {
                guard let values = Self.constraintValues(o, attributes) else { continue }
                let id = o.loadedStore.identifier.uuidString + "\u{1}" + owner.name + "\u{1}" + attributes.joined(separator: "\u{1}")
                pending[id, default: (o.loadedStore, owner, attributes, [])].items.append((o, values))
            }
        }
        for (_, group) in pending.sorted(by: { $0.key < $1.key }) {
            for start in stride(from: 0, to: group.items.count, by: Self.lookupChunk) {
                let items = group.items[start..<min(start + Self.lookupChunk, group.items.count)]
                try mergeWithStored(items, store: group.store, owner: group.owner, attributes: group.attributes)
            }
        }
    }

    /// Inserts whose constraint values are looked up in one query (an `IN` list, or an `OR` of conjunctions).
    private static let lookupChunk = 500

    /// Merges each of `items` (inserted objects and their values of one constraint) that is still an insert into
    /// the stored record that has the same values, if any.
    private func mergeWithStored(
        _ items: ArraySlice<(ManagedObject, [StoreValue])>, store: LoadedStore, owner: Entity, attributes: [String]
    ) throws {
        let predicate: FetchPredicate = attributes.count == 1
            ? .comparison(.keyPath([attributes[0]]), .in, .list(items.map { $0.1[0] }), [])
            : .or(items.map { item in
                .and(zip(attributes, item.1).map { .comparison(.keyPath([$0.0]), .equal, .constant($0.1), []) })
            })
        var stored: [[StoreValue]: [Record]] = [:]
        for hit in try store.store.fetch(FetchRequest(entity: owner.name, predicate: predicate)) {
            guard let e = schema.entity(named: hit.entity) else { continue }
            let values = attributes.compactMap { a in e.attributeIndex(a).map { hit.attributes[$0] } }
            stored[values, default: []].append(hit)
        }
        for (o, values) in items where o.state == .inserted {
            for hit in stored[values] ?? [] where hit.primaryKey != o.record.primaryKey && hit.entity == o.entity.name {
                let key = ObjectKey(store: store.identifier, root: owner.rootName, primaryKey: hit.primaryKey)
                let target: ManagedObject
                if let registered = registeredObject(key) {
                    // A record this context deleted or changed away from the values is no longer in the way (one
                    // changed to them held them above).
                    guard registered.state == .clean else { continue }
                    target = registered
                } else {
                    target = try register(hit, from: store)
                }
                try merge(o, into: target, mergePolicy(for: o))
                break
            }
        }
    }

    /// The object's values of a constraint's attributes; `nil` when one is `nil` (which cannot collide).
    private static func constraintValues(_ o: ManagedObject, _ attributes: [String]) -> [StoreValue]? {
        var values: [StoreValue] = []
        for name in attributes {
            guard let i = o.entity.attributeIndex(name), i < o.record.attributes.count, !o.record.attributes[i].isNull
            else { return nil }
            values.append(o.record.attributes[i])
        }
        return values
    }

    /// Moves the inserted object `o` into `target` under `policy`, then discards `o`.
    private func merge(_ o: ManagedObject, into target: ManagedObject, _ policy: MergePolicy) throws {
        let entity = o.entity
        if policy != .rollback {
            for (i, a) in entity.attributes.enumerated() where !a.isTransient && a.derivation == nil {
                let mine = o.record.attributes[i]
                let theirs = target.record.attributes[i]
                let value: StoreValue
                switch policy {
                case .overwrite: value = mine
                case .mergeByPropertyObjectTrump: value = mine.isNull ? theirs : mine
                case .mergeByPropertyStoreTrump: value = theirs.isNull ? mine : theirs
                case .rollback, .error: value = theirs
                }
                if value != theirs { try target.setValue(value, forKey: a.name) }
            }
        }
        for r in entity.relationships {
            if r.isToMany {
                let mine = try o.objects(forKey: r.name).filter { $0 !== target }
                let theirs = try target.objects(forKey: r.name)
                // Unlinked first, so that its members can join the target (a to-one inverse holds one owner).
                try o.setObjects([], forKey: r.name)
                let merged: [ManagedObject]
                switch policy {
                case .overwrite: merged = mine
                case .mergeByPropertyObjectTrump, .mergeByPropertyStoreTrump:
                    merged = theirs + mine.filter { m in !theirs.contains { $0 === m } }
                case .rollback, .error: continue
                }
                if merged.map(ObjectIdentifier.init) != theirs.map(ObjectIdentifier.init) {
                    try target.setObjects(merged, forKey: r.name)
                }
            } else {
                let mine = try o.object(forKey: r.name).flatMap { $0 === target ? nil : $0 }
                let theirs = try target.object(forKey: r.name)
                try o.setObject(nil, forKey: r.name)
                let chosen: ManagedObject?
                switch policy {
                case .overwrite: chosen = mine
                case .mergeByPropertyObjectTrump: chosen = mine ?? theirs
                case .mergeByPropertyStoreTrump: chosen = theirs ?? mine
                case .rollback, .error: continue
                }
                if chosen !== theirs { try target.setObject(chosen, forKey: r.name) }
            }
        }
        insertMergePolicies[o.key] = nil
        try delete(o)
    }
}
