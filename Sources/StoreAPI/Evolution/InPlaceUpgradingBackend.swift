import Foundation

/// A backend that can carry out some schema upgrades where the store is, without rewriting its records — SQL
/// engines with `ALTER TABLE`, say, for an upgrade that only adds a column.
///
/// ``StoreOperations/upgradeStore(at:type:to:options:)`` offers a backend that conforms every upgrade whose plan
/// ``SchemaMigrationPlan/onlyAdds`` (and that has no custom step) before it falls back to streaming the store into a
/// new one. The backend decides from the two schemas whether its layout allows it; when it does not, it returns
/// `false` having changed nothing, and the upgrade streams the store as it would for any other backend.
public protocol InPlaceUpgradingBackend: StoreBackend {
    /// Upgrades the store at `url`, whose metadata is `stored`, to `metadata` (same store UUID, custom metadata,
    /// history and sync state; the destination schema and its version hashes) where it is, in one transaction:
    /// after a crash at any point the store is either wholly the old one or wholly the new one.
    ///
    /// Called only for plans that ``SchemaMigrationPlan/onlyAdds``, on a store nobody else has open (unless the
    /// caller forced the upgrade). The upgraded store must read exactly as a store streamed through the plan would:
    /// every record, with an added attribute's default in every existing record of an entity that has it.
    ///
    /// - Returns: `true` when the store was upgraded; `false`, with nothing changed, when this plan needs the
    ///   streaming upgrade.
    func upgradeInPlace(at url: URL, plan: SchemaMigrationPlan, from stored: StoreMetadata, to metadata: StoreMetadata) throws -> Bool
}

extension SchemaMigrationPlan {
    /// Whether the plan only adds — entities, optional attributes or attributes with a default, optional
    /// relationships, relaxed requirements, changes that keep every stored value (``PropertyMigration/Change/modified``)
    /// — so that no stored value has to change and no record can fail a check. Only such plans are offered to an
    /// ``InPlaceUpgradingBackend``.
    public var onlyAdds: Bool {
        guard removedEntities.isEmpty else { return false }
        let additive: Set<PropertyMigration.Change> = [.unchanged, .added, .madeOptional, .modified]
        return entities.allSatisfy { e in
            // A new entity has no records, so nothing it declares can fail or change a stored value.
            e.change == .added || (
                e.change != .renamed && e.parentChange == nil && e.removedAttributes.isEmpty && e.removedRelationships.isEmpty
                    && e.addedUniquenessConstraints.isEmpty
                    && (e.attributes + e.relationships).allSatisfy {
                        additive.contains($0.change) && !$0.requiresValue && $0.checkedMaximum == nil
                            && ($0.source ?? $0.name) == $0.name
                    })
        }
    }
}
