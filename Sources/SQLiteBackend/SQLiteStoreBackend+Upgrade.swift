import CSQLite
import Foundation
@_spi(BackendKit) import StoreAPI

extension SQLiteStoreBackend: InPlaceUpgradingBackend {
    /// Adds what an additive plan adds with `ALTER TABLE`, `CREATE TABLE` and `CREATE INDEX` in one transaction:
    /// no record is read or written, so the time does not grow with the store. Returns `false` when the plan would
    /// move stored values (see ``StoreOperations/upgradeStore(at:type:to:options:)``, which then streams the store).
    public func upgradeInPlace(at url: URL, plan: SchemaMigrationPlan, from stored: StoreMetadata, to metadata: StoreMetadata) throws -> Bool {
        try requireStore(url)
        let old = SQLiteLayout(schema: stored.schema)
        let new = SQLiteLayout(schema: metadata.schema)
        guard let upgrade = SQLiteInPlaceUpgrade(from: old, to: new, plan: plan) else { return false }
        let c = try SQLiteConnection.open(url, readOnly: false, timeout: StoreOptions().timeout)
        defer { c.close() }
        if sqlite3_db_readonly(c.db, "main") == 1 { throw StoreError.readOnly(url, reason: "the file is not writable") }
        try requireMetadataTable(c)
        do {
            return try c.transaction(write: true) { try Self.apply(upgrade, from: old, metadata: metadata, c, url) }
        } catch is DefaultReadsDifferently {
            return false
        }
    }

    /// The upgrade's statements, the dropped fetch indexes, the check of each column default and the new metadata,
    /// inside the caller's write transaction. `false` when the store no longer holds what was planned from.
    private static func apply(_ upgrade: SQLiteInPlaceUpgrade, from old: SQLiteLayout, metadata: StoreMetadata,
                              _ c: SQLiteConnection, _ url: URL) throws -> Bool {
        // What was planned from must still be what the store holds (another process may have upgraded it).
        let current = try StoreMetadata.decode(SQLitePersistentStore.readMetadataJSON(c), url: url)
        guard SQLiteLayout(schema: current.schema).fingerprint == old.fingerprint else { return false }
        for statement in upgrade.statements { try c.exec(statement, "upgrading the schema") }
        for dropped in upgrade.droppedFetchIndexes {
            let names = try c.withStatement("SELECT name FROM sqlite_schema WHERE type = 'index' AND sql = ?") { s in
                try s.bind(1, dropped)
                var names: [String] = []
                while try s.step() { names.append(s.text(0)) }
                return names
            }
            for name in names { try c.exec("DROP INDEX \(SQLiteLayout.quote(name))", "upgrading the schema") }
        }
        for d in upgrade.defaults {
            let sql = "SELECT \(SQLiteLayout.quote(d.column)) FROM \(SQLiteLayout.quote(d.table)) LIMIT 1"
            let read = try c.withStatement(sql) { s -> StoreValue?? in
                try s.step() ? .some(try? SQLiteValueCodec.read(s, column: 0, type: d.type)) : .none
            }
            if case .some(let value) = read, value != d.value { throw DefaultReadsDifferently() }
        }
        try SQLitePersistentStore.writeMetadataJSON(metadata.encoded(), c)
        return true
    }
}

/// Rolls an in-place upgrade back: a column default does not read back as the attribute's default value.
private struct DefaultReadsDifferently: Error {}
