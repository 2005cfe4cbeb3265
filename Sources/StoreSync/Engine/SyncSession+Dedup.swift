import Foundation
@_spi(BackendKit) import StoreAPI

extension SyncSession {
    /// Merges records that share a deduplication key (an entity's uniqueness constraint) after a pull: the record
    /// with the lowest global ID wins on every peer without coordination, the others' relationships move to it and
    /// they are deleted. Only `entities` (those the pull created or changed records of) can have new duplicates.
    ///
    /// Only the keys the pull brought can be shared: the context holds nothing but the pull's changes, and the store
    /// held no duplicates before it. So the stored records are looked up by those keys (``storedRecords(of:_:matching:)``)
    /// rather than read whole, and the pull's own records are grouped with them on their current values.
    ///
    /// The merge is part of the pull's save, and is then pushed like a local change (``merges``): the losers'
    /// deletions and the moved links reach every peer, including peers that never see both records alive (one
    /// deleted the winner before the other's copy arrived). The losers' global IDs then stand for the winner in
    /// every later change.
    func deduplicate(entities: Set<String>, context: StoreContext) throws {
        for name in entities.sorted() {
            guard let shape = shapes.shapes[name], !shape.entity.uniquenessConstraints.isEmpty else { continue }
            let entity = shape.entity
            for constraint in entity.uniquenessConstraints {
                guard constraint.allSatisfy({ entity.attributeIndex($0) != nil }) else { continue }
                var groups: [[StoreValue]: [ManagedObject]] = [:]
                var grouped: Set<ObjectIdentifier> = []
                func add(_ o: ManagedObject) throws {
                    guard !o.isDeleted, grouped.insert(ObjectIdentifier(o)).inserted else { return }
                    let values = try constraint.map { try o.value(forKey: $0) }
                    // Like a uniqueness constraint, a key with a missing value matches nothing.
                    guard !values.contains(.null) else { return }
                    groups[values, default: []].append(o)
                }
                // The records the pull inserted or changed, on their new values, then the stored records that have
                // one of their keys (those the pull changed are already grouped, on their current values).
                for o in context.insertedObjects where o.entity.name == name { try add(o) }
                for o in context.updatedObjects where o.entity.name == name { try add(o) }
                guard !groups.isEmpty else { continue }
                for r in try storedRecords(of: entity, constraint, matching: Array(groups.keys)) {
                    try add(try context.object(with: ObjectID(storeUUID: loaded.identifier, entity: r.entity, primaryKey: r.primaryKey)))
                }
                for (_, members) in groups where members.count > 1 {
                    let sorted = members.sorted { $0.globalID.uuidString < $1.globalID.uuidString }
                    let winner = sorted[0]
                    for loser in sorted.dropFirst() {
                        try noteMerge(loser, into: winner)
                        try merge(loser, into: winner, context: context)
                        state.redirects[loser.globalID] = winner.globalID
                        state.dangling[loser.globalID.uuidString] = nil
                        report.mergedDuplicates += 1
                    }
                }
            }
        }
    }

    /// Keys per lookup: an `IN` list of this many values for a one-attribute key; for a compound key, tuples few
    /// enough that the product of the per-attribute value lists stays within what an index lookup plan takes.
    static let keysPerLookup = (single: 1_000, compound: 64)

    /// The stored records of `entity` itself (not of its sub-entities) whose values of `constraint`, as stored,
    /// are one of `keys`; possibly more, never fewer.
    ///
    /// A predicate fetch per chunk of keys, which backends with an index on the constraint answer from it (SQLite
    /// and PostgreSQL in SQL, LMDB from its uniqueness index): `a IN (…)`, or for a compound key each attribute
    /// `IN` its values (which the index narrows to) AND the OR of the exact tuples. A store kept in memory (the
    /// in-memory and XML types) answers every fetch by reading all its records, so it is read once instead, its
    /// records matched by hashing their key.
    func storedRecords(of entity: Entity, _ constraint: [String], matching keys: [[StoreValue]]) throws -> [Record] {
        if store is MemoryStore {
            let positions = constraint.compactMap { entity.attributeIndex($0) }
            let wanted = Set(keys)
            var found: [Record] = []
            try forEachRecord(of: entity.name) { r in
                guard positions.allSatisfy({ $0 < r.attributes.count }) else { return }
                if wanted.contains(positions.map { r.attributes[$0] }) { found.append(r) }
            }
            return found
        }
        func attribute(_ i: Int) -> FetchExpression { .keyPath([constraint[i]]) }
        var found: [Record] = []
        let chunk = constraint.count == 1 ? Self.keysPerLookup.single : Self.keysPerLookup.compound
        for start in stride(from: 0, to: keys.count, by: chunk) {
            let slice = keys[start..<min(start + chunk, keys.count)]
            let predicate: FetchPredicate
            if constraint.count == 1 {
                predicate = .comparison(attribute(0), .in, .list(slice.map { $0[0] }), [])
            } else {
                let narrowing = constraint.indices.map { i -> FetchPredicate in
                    var seen: Set<StoreValue> = []
                    return .comparison(attribute(i), .in, .list(slice.map { $0[i] }.filter { seen.insert($0).inserted }), [])
                }
                let exact = FetchPredicate.or(slice.map { key in
                    .and(constraint.indices.map { .comparison(attribute($0), .equal, .constant(key[$0]), []) })
                })
                predicate = .and(narrowing + [exact])
            }
            found += try store.fetch(FetchRequest(entity: entity.name, predicate: predicate, includesSubentities: false))
        }
        return found
    }

    /// Records what a merge changes, to push it after the save: the loser's deletion, the winner's links, and the
    /// links of the loser's related records whose owning side is theirs.
    private func noteMerge(_ loser: ManagedObject, into winner: ManagedObject) throws {
        merges.append(MergeChange(id: loser.globalID, entity: loser.entity.name, primaryKey: loser.objectID.primaryKey,
                                  keys: nil, deleted: true))
        let winnerKeys = Set(winner.entity.relationships.map(\.name))
        merges.append(MergeChange(id: winner.globalID, entity: winner.entity.name, primaryKey: winner.objectID.primaryKey,
                                  keys: winnerKeys, deleted: false))
        for rel in loser.entity.relationships {
            guard let inverse = rel.inverse else { continue }
            let targets = rel.isToMany ? try loser.objects(forKey: rel.name) : [try loser.object(forKey: rel.name)].compactMap { $0 }
            for t in targets where t !== loser && t !== winner {
                merges.append(MergeChange(id: t.globalID, entity: t.entity.name, primaryKey: t.objectID.primaryKey,
                                          keys: [inverse], deleted: false))
            }
        }
    }

    /// Moves the loser's relationships to the winner (a to-one only where the winner has none) and deletes it.
    private func merge(_ loser: ManagedObject, into winner: ManagedObject, context: StoreContext) throws {
        for rel in loser.entity.relationships {
            if rel.isToMany {
                for t in try loser.objects(forKey: rel.name) where t !== loser && t !== winner {
                    try winner.addObject(t, forKey: rel.name)
                }
            } else if let t = try loser.object(forKey: rel.name), t !== loser, t !== winner,
                      try winner.object(forKey: rel.name) == nil {
                try winner.setObject(t, forKey: rel.name)
            }
        }
        try context.delete(loser)
    }
}
