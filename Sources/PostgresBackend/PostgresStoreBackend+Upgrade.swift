import Foundation
@_spi(BackendKit) import StoreAPI

extension PostgresStoreBackend: InPlaceUpgradingBackend {
    /// Adds what an additive plan adds with `ALTER TABLE`, `CREATE TABLE` and `CREATE INDEX` in one transaction
    /// (PostgreSQL's DDL is transactional): no record is read or written, so the time does not grow with the store,
    /// and a failure at any point leaves the old store. Returns `false` when the plan would move stored values (see
    /// ``StoreAPI/StoreOperations/upgradeStore(at:type:to:options:)``, which then streams the store).
    ///
    /// The `ALTER TABLE`s hold their tables' exclusive locks to the commit: other processes' reads of those tables
    /// wait for the upgrade, which takes no longer than its statements.
    public func upgradeInPlace(at url: URL, plan: SchemaMigrationPlan, from stored: StoreMetadata, to metadata: StoreMetadata) throws -> Bool {
        let old = PostgresLayout(schema: stored.schema)
        let new = PostgresLayout(schema: metadata.schema)
        guard let upgrade = PostgresInPlaceUpgrade(from: old, to: new, plan: plan) else { return false }
        let c = try connectToStore(url)
        defer { c.close() }
        do {
            return try c.transaction {
                // The metadata row locked: a second upgrade waits, then finds the layout changed.
                try c.execute("SELECT 1 FROM \(PostgresLayout.quote(PostgresLayout.metadataTable)) WHERE id = 1 FOR UPDATE")
                let current = try Self.readMetadata(c)
                guard PostgresLayout(schema: current.schema).fingerprint == old.fingerprint else { return false }
                try c.execute("SET LOCAL standard_conforming_strings = on")
                for statement in upgrade.statements { try c.execute(statement) }
                for root in upgrade.newRoots {
                    try c.execute(
                        "INSERT INTO \(PostgresLayout.quote(PostgresLayout.keysTable)) (root, next) VALUES ($1, 1) ON CONFLICT (root) DO NOTHING",
                        [root])
                }
                for d in upgrade.defaults {
                    let rows = try c.execute("SELECT \(PostgresLayout.quote(d.column)) FROM \(PostgresLayout.quote(d.table)) LIMIT 1")
                    guard rows.count == 1 else { continue }
                    let read = try? PostgresValueCodec.read(rows, 0, 0, type: d.type, url: url, entity: d.table, property: d.column)
                    if read != d.value { throw DefaultReadsDifferently() }
                }
                try Self.writeMetadata(metadata, c)
                return true
            }
        } catch is DefaultReadsDifferently {
            return false
        }
    }
}

/// Rolls an in-place upgrade back: a column default does not read back as the attribute's default value.
private struct DefaultReadsDifferently: Error {}
