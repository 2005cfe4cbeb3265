import Foundation
import StoreAPI

extension SyncSession {
    /// Merges records that share a deduplication key (an entity's uniqueness constraint) after a pull: the record
    /// with the lowest global ID wins on every peer without coordination, the others' relationships move to it and
    /// they are deleted. Only `entities` (those the pull created or changed records of) can have new duplicates.
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
                func add(_ o: ManagedObject) throws {
                    guard !o.isDeleted else { return }
                    let values = try constraint.map { try o.value(forKey: $0) }
                    // Like a uniqueness constraint, a key with a missing value matches nothing.
                    guard !values.contains(.null) else { return }
                    groups[values, default: []].append(o)
                }
                // Stored records, with the pull's pending changes, and the records the pull inserts.
                try forEachRecord(of: name) { r in
                    try add(try context.object(with: ObjectID(storeUUID: loaded.identifier, entity: r.entity, primaryKey: r.primaryKey)))
                }
                for o in context.insertedObjects where o.entity.name == name { try add(o) }
                for (_, members) in groups where members.count > 1 {
                    let sorted = members.sorted { $0.globalID.uuidString < $1.globalID.uuidString }
                    let winner = sorted[0]
                    for loser in sorted.dropFirst() {
                        try noteMerge(loser, into: winner)
                        try merge(loser, into: winner, context: context)
                        state.redirects[loser.globalID.uuidString] = winner.globalID.uuidString
                        state.dangling[loser.globalID.uuidString] = nil
                        report.mergedDuplicates += 1
                    }
                }
            }
        }
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
