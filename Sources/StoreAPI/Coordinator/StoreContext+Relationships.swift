import Foundation

/// Relationship changes with inverse maintenance.
///
/// Every change goes through ``connect`` and ``disconnect``, which update both sides: the relationship on the source
/// and its inverse on the destination, and — for one-to-one and one-to-many inverses — the previous partner that
/// loses the destination.
extension StoreContext {
    func setToOne(_ source: ManagedObject, index: Int, relationship: RelationshipDescription, target: ManagedObject?) throws {
        if let target { try checkTarget(target, of: source, relationship: relationship) }
        let current = source.record.relationships[index].keys.first
        if current == target?.record.primaryKey { return }
        if let current, let old = try objects(forKeys: [current], destination: relationship.destination, in: source.loadedStore).first {
            try disconnect(source, index: index, relationship: relationship, from: old)
        } else if current != nil {
            unlink(source, index: index, key: current)
        }
        if let target { try connect(source, index: index, relationship: relationship, to: target) }
    }

    func setToMany(_ source: ManagedObject, index: Int, relationship: RelationshipDescription, targets: [ManagedObject]) throws {
        for t in targets { try checkTarget(t, of: source, relationship: relationship) }
        // Filling an empty relationship with a few distinct records (what linking a new record does) needs none of
        // the sets below.
        if source.record.relationships[index].keys.isEmpty, targets.count <= 16,
           Self.areDistinct(targets.map(\.record.primaryKey))
        {
            for t in targets { try connect(source, index: index, relationship: relationship, to: t) }
            return
        }
        var seen: Set<Int64> = []
        let wanted = targets.filter { seen.insert($0.record.primaryKey).inserted }
        let wantedKeys = Set(wanted.map(\.record.primaryKey))
        let current = try related(source, index: index, relationship: relationship)
        for old in current where !wantedKeys.contains(old.record.primaryKey) {
            try disconnect(source, index: index, relationship: relationship, from: old)
        }
        // Dangling keys (records deleted elsewhere) are dropped too.
        let currentKeys = Set(current.map(\.record.primaryKey))
        for k in source.record.relationships[index].keys where !currentKeys.contains(k) && !wantedKeys.contains(k) {
            unlink(source, index: index, key: k)
        }
        for t in wanted { try connect(source, index: index, relationship: relationship, to: t) }
        // connect appends; put the keys in the caller's order.
        let ordered = wanted.map(\.record.primaryKey)
        if source.record.relationships[index].keys != ordered {
            source.record.relationships[index] = .toMany(ordered)
            markUpdated(source)
        }
    }

    private static func areDistinct(_ keys: [Int64]) -> Bool {
        for i in keys.indices { for j in keys.indices where j > i && keys[i] == keys[j] { return false } }
        return true
    }

    private func checkTarget(_ target: ManagedObject, of source: ManagedObject, relationship: RelationshipDescription) throws {
        _ = try target.checkUsable()
        guard target.context === self else {
            throw StoreError.invalidRelationshipTarget(entity: source.entity.name, relationship: relationship.name,
                reason: "\(target.objectID) belongs to another context")
        }
        guard target.entity.isKind(of: relationship.destination) else {
            throw StoreError.invalidRelationshipTarget(entity: source.entity.name, relationship: relationship.name,
                reason: "\(target.entity.name) is not a \(relationship.destination)")
        }
        guard target.loadedStore === source.loadedStore else {
            throw StoreError.invalidRelationshipTarget(entity: source.entity.name, relationship: relationship.name,
                reason: "\(target.objectID) lives in another store; relationships cannot cross stores")
        }
        if target.state == .deleted {
            throw StoreError.invalidRelationshipTarget(entity: source.entity.name, relationship: relationship.name,
                reason: "\(target.objectID) is deleted")
        }
    }

    /// Links `source` and `target` on both sides, first detaching whatever each side has to give up.
    func connect(_ source: ManagedObject, index: Int, relationship: RelationshipDescription, to target: ManagedObject) throws {
        let inverse = inverseIndex(of: relationship, on: target)
        // A to-one source can point to one record only.
        if !relationship.isToMany, let current = source.record.relationships[index].keys.first, current != target.record.primaryKey {
            if let old = try objects(forKeys: [current], destination: relationship.destination, in: source.loadedStore).first {
                try disconnect(source, index: index, relationship: relationship, from: old)
            }
        }
        // A to-one inverse means the target belongs to one source only: take it from its previous one.
        if let (ii, inv) = inverse, !inv.isToMany,
           let previous = target.record.relationships[ii].keys.first, previous != source.record.primaryKey,
           let prevObject = try objects(forKeys: [previous], destination: inv.destination, in: source.loadedStore).first,
           let pi = prevObject.entity.relationshipIndex(relationship.name)
        {
            try disconnect(prevObject, index: pi, relationship: relationship, from: target)
        }
        link(source, index: index, key: target.record.primaryKey, toMany: relationship.isToMany)
        if let (ii, inv) = inverse {
            link(target, index: ii, key: source.record.primaryKey, toMany: inv.isToMany)
        }
    }

    /// Unlinks `source` and `target` on both sides.
    func disconnect(_ source: ManagedObject, index: Int, relationship: RelationshipDescription, from target: ManagedObject) throws {
        unlink(source, index: index, key: target.record.primaryKey)
        if let (ii, _) = inverseIndex(of: relationship, on: target) {
            unlink(target, index: ii, key: source.record.primaryKey)
        }
    }

    func inverseIndex(of relationship: RelationshipDescription, on target: ManagedObject) -> (Int, RelationshipDescription)? {
        guard let name = relationship.inverse, let i = target.entity.relationshipIndex(name) else { return nil }
        return (i, target.entity.relationships[i])
    }

    private func link(_ object: ManagedObject, index: Int, key: Int64, toMany: Bool) {
        switch object.record.relationships[index] {
        case .toOne(let k):
            if k == key { return }
            object.record.relationships[index] = .toOne(key)
        case .toMany(var ks):
            if ks.contains(key) { return }
            // Emptied first, so the keys are not shared with the record and the append does not copy them all
            // (adding each of n records to one owner copied the owner's keys n times).
            object.record.relationships[index] = .toOne(nil)
            ks.append(key)
            object.record.relationships[index] = .toMany(ks)
        }
        markUpdated(object)
    }

    func unlink(_ object: ManagedObject, index: Int, key: Int64?) {
        switch object.record.relationships[index] {
        case .toOne(let k):
            guard k != nil, key == nil || k == key else { return }
            object.record.relationships[index] = .toOne(nil)
        case .toMany(var ks):
            guard let key, let at = ks.firstIndex(of: key) else { return }
            ks.remove(at: at)
            object.record.relationships[index] = .toMany(ks)
        }
        if object.state != .deleted { markUpdated(object) }
    }
}
