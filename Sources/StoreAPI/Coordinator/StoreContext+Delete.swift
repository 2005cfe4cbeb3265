import Foundation

extension StoreContext {
    /// Deletes an object, applying the delete rule of each of its relationships:
    /// - `deny`: refuse while the relationship holds records (nothing is changed);
    /// - `cascade`: delete the related records too (their own rules apply in turn);
    /// - `nullify`: remove the object from the related records' inverse relationship;
    /// - `noAction`: leave the related records pointing at the deleted one.
    ///
    /// Deny rules are checked over everything the delete would cascade to before anything changes.
    public func delete(_ object: ManagedObject) throws {
        _ = try object.checkUsable()
        guard object.state != .deleted else { return }
        if object.loadedStore.storeDescription.options.isReadOnly {
            throw StoreError.readOnly(object.loadedStore.url ?? URL(fileURLWithPath: "/"), reason: "store is loaded read-only")
        }
        let doomed = try cascadeClosure(of: object)
        let doomedKeys = Set(doomed.map(\.key))
        for o in doomed {
            for (i, rel) in o.entity.relationships.enumerated() where rel.deleteRule == .deny {
                let targets = try related(o, index: i, relationship: rel)
                if targets.contains(where: { !doomedKeys.contains($0.key) }) {
                    throw StoreError.deleteDenied(entity: o.entity.name, relationship: rel.name, object: o.objectID)
                }
            }
        }
        for o in doomed {
            for (i, rel) in o.entity.relationships.enumerated() where rel.deleteRule != .noAction {
                for target in try related(o, index: i, relationship: rel) where !doomedKeys.contains(target.key) {
                    if let (ii, _) = inverseIndex(of: rel, on: target) {
                        unlink(target, index: ii, key: o.record.primaryKey)
                    }
                }
            }
        }
        for o in doomed {
            if o.state == .inserted {
                o.state = .invalidated("it was deleted before it was ever saved")
                forget(o)
                changes.remove(o)
            } else {
                o.state = .deleted
                noteChanged(o)
            }
        }
    }

    /// The object and everything its cascade rules reach, each once.
    private func cascadeClosure(of root: ManagedObject) throws -> [ManagedObject] {
        var result: [ManagedObject] = []
        var seen: Set<ObjectKey> = []
        var queue = [root]
        while let o = queue.popLast() {
            guard seen.insert(o.key).inserted, o.state != .deleted else { continue }
            result.append(o)
            for (i, rel) in o.entity.relationships.enumerated() where rel.deleteRule == .cascade {
                queue.append(contentsOf: try related(o, index: i, relationship: rel))
            }
        }
        return result
    }
}
