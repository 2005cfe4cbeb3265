import Foundation
import StoreAPI

extension SyncSession {
    /// Merges records that share a deduplication key (an entity's uniqueness constraint) after a pull: the record
    /// with the lowest global ID wins on every peer without coordination, the others' relationships move to it and
    /// they are deleted. Their global IDs then stand for the winner in every later change.
    func deduplicate(context: StoreContext, created: [UUID], index: [UUID: ObjectID],
                     object: (UUID) throws -> ManagedObject?) throws {
        var createdByEntity: [String: [UUID]] = [:]
        for id in created {
            if let o = try object(id) { createdByEntity[o.entity.name, default: []].append(id) }
        }
        for (name, ids) in createdByEntity.sorted(by: { $0.key < $1.key }) {
            guard let shape = shapes.shapes[name], !shape.entity.uniquenessConstraints.isEmpty else { continue }
            let entity = shape.entity
            for constraint in entity.uniquenessConstraints {
                let positions = constraint.compactMap { entity.attributeIndex($0) }
                guard positions.count == constraint.count else { continue }
                var groups: [[StoreValue]: [UUID]] = [:]
                func add(_ id: UUID, _ values: [StoreValue]) {
                    // Like a uniqueness constraint, a key with a missing value matches nothing.
                    guard !values.contains(.null) else { return }
                    groups[values, default: []].append(id)
                }
                var seen = Set<UUID>()
                try forEachRecord(of: name) { r in
                    seen.insert(r.globalID)
                    if let o = try object(r.globalID) {
                        add(r.globalID, try constraint.map { try o.value(forKey: $0) })
                    }
                }
                for id in ids where !seen.contains(id) {
                    if let o = try object(id) { add(id, try constraint.map { try o.value(forKey: $0) }) }
                }
                for (_, members) in groups where members.count > 1 {
                    let sorted = members.sorted { $0.uuidString < $1.uuidString }
                    guard let winner = try object(sorted[0]) else { continue }
                    for loserID in sorted.dropFirst() {
                        guard let loser = try object(loserID) else { continue }
                        try merge(loser, into: winner, context: context)
                        state.redirects[loserID.uuidString] = sorted[0].uuidString
                        state.clocks[loserID.uuidString] = nil
                        state.dangling[loserID.uuidString] = nil
                        report.mergedDuplicates += 1
                    }
                }
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

    /// Every record of one concrete entity, a page at a time.
    func forEachRecord(of name: String, _ body: (Record) throws -> Void) throws {
        var after: Int64? = nil
        while true {
            let page = try store.scan(entity: name, after: after, limit: 1_000)
            for r in page { try body(r) }
            guard let last = page.last, page.count == 1_000 else { break }
            after = last.primaryKey
        }
    }
}
