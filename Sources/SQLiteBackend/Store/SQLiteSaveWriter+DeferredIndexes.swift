import CSQLite
import Foundation
import StoreAPI

/// A save that inserts many records into a table holding none (a first pull of a store, an import into a new one)
/// builds the table's global-ID index (and its entity-code index, when several entities share the table) once, from
/// one sort, after its inserts, instead of adding each row to it at a random place. The indexes are dropped and
/// created again inside the save's transaction, so a save that fails leaves them as they were, and a save that
/// commits leaves the same indexes, made from the statements the store holds for them.
/// Uniqueness-constraint and fetch indexes are kept as they are: their errors name the records they find.
///
/// A record whose global ID another inserted record has fails the save with the error the row-by-row path gives:
/// the first such record, in insertion order, named as the insert that found it.
extension SQLiteSaveWriter {
    /// Inserts into one empty table from which building its indexes afterwards beats adding each row to them.
    static let deferredIndexMinimum = 4_096

    /// Indexes dropped by ``deferIndexes(inserting:)``, to create again with ``restoreIndexes(_:inserted:)``.
    struct DeferredIndexes {
        /// Each index's table, name and `CREATE INDEX` statement.
        fileprivate(set) var indexes: [(table: String, name: String, sql: String)] = []
        /// The tables whose indexes were dropped.
        fileprivate(set) var tables: Set<String> = []
    }

    /// Drops the global-ID and entity-code indexes of each table this save inserts at least
    /// ``deferredIndexMinimum`` records into and that holds no row once the save's deletes and updates are done.
    /// Nothing during a bulk load, whose indexes are dropped already.
    mutating func deferIndexes(inserting inserted: [Record]) throws -> DeferredIndexes {
        var deferred = DeferredIndexes()
        guard !isBulkLoad, inserted.count >= Self.deferredIndexMinimum else { return deferred }
        // Counted by runs of records of one entity: a save inserts runs, and a table is looked up once per run.
        var counts: [String: Int] = [:]
        var run = (entity: "", table: "", start: 0)
        func endRun(at end: Int) {
            if !run.table.isEmpty { counts[run.table, default: 0] += end - run.start }
        }
        for i in inserted.indices where inserted[i].entity != run.entity || run.table.isEmpty {
            endRun(at: i)
            // An entity the layout does not know fails the save at that record's insert, as without deferral.
            guard let el = try? cachedEntityLayout(inserted[i].entity) else {
                run = ("", "", i)
                continue
            }
            run = (inserted[i].entity, el.tableName, i)
        }
        endRun(at: inserted.count)
        for (table, count) in counts.sorted(by: { $0.key < $1.key }) where count >= Self.deferredIndexMinimum {
            let quoted = SQLiteLayout.quote(table)
            guard try connection.int64("SELECT NOT EXISTS (SELECT 1 FROM \(quoted))") == 1 else { continue }
            let names = ["X_\(table)._gid", "X_\(table)._ent"]
            var found: [(table: String, name: String, sql: String)] = []
            try connection.withStatement("SELECT name, sql FROM sqlite_master WHERE type = 'index' AND tbl_name = ? AND name IN (?, ?) ORDER BY name") { s in
                try s.bind(1, table)
                try s.bind(2, names[0])
                try s.bind(3, names[1])
                while try s.step() { found.append((table, s.text(0), s.text(1))) }
            }
            for index in found {
                try connection.exec("DROP INDEX \(SQLiteLayout.quote(index.name))", "deferring index \(index.name) to the end of the save")
            }
            deferred.indexes += found
            deferred.tables.insert(table)
        }
        return deferred
    }

    /// Creates the indexes ``deferIndexes(inserting:)`` dropped. A global-ID index that cannot be built fails with
    /// ``duplicateGlobalIDError(in:tables:)``.
    mutating func restoreIndexes(_ deferred: DeferredIndexes, inserted: [Record]) throws {
        for index in deferred.indexes {
            do {
                try connection.exec(index.sql, "building index \(index.name) after the save's inserts")
            } catch {
                if let duplicate = try duplicateGlobalIDError(in: inserted[...], tables: deferred.tables) { throw duplicate }
                throw error
            }
        }
    }

    /// The error the row-by-row path gives for the first of `records` (in order) whose global ID an earlier one of
    /// them has in the same table of `tables`; `nil` when there is none.
    mutating func duplicateGlobalIDError(in records: ArraySlice<Record>, tables: Set<String>) throws -> StoreError? {
        guard !tables.isEmpty else { return nil }
        var seen: [String: Set<UUID>] = [:]
        for r in records {
            let table = try cachedEntityLayout(r.entity).tableName
            guard tables.contains(table) else { continue }
            if !seen[table, default: []].insert(r.globalID).inserted {
                return .io(url, operation: "insert",
                           reason: "global ID \(r.globalID.uuidString) of \(r.key) is already used by another record")
            }
        }
        return nil
    }
}
