import CSQLite
import Foundation
@_spi(BackendKit) import StoreAPI

/// A bulk load's page of records whose rows do not depend on each other: each row is bound and inserted as it is
/// read from the page, through one prepared statement, with no record, value array or per-save lookup table made
/// for it, and the bookkeeping a save does per record (the highest key, `Z_MAX`) done once for the page. The entity
/// numbers of the page's rows are kept for the entity columns of rows that point at them (``CoreDataLoadedEntities``).
///
/// It writes what ``CoreDataRowWriter/save(_:pending:page:)`` writes for the same records. That save looks records
/// up among the others it inserts (a to-one's entity column, an ordered list's positions, the keys a list's
/// members are written under); a page reaches this path only when none of its links can point into its own table
/// and it has no hidden keys of a to-many without an inverse (``rowsAreIndependent(_:)``), so that it never needs to.
extension CoreDataRowWriter {
    /// Whether the rows of `p`'s records can be inserted one by one as they come (see above).
    func rowsAreIndependent(_ p: CoreDataWritePlan.EntityPlan) -> Bool {
        for source in p.sources {
            switch source {
            case .inverselessKey, .inverselessOrder: return false
            default: continue
            }
        }
        return p.entity.relationships.allSatisfy { r in schema.entity(named: r.destination).map { $0.rootName != p.root } ?? false }
    }

    func insertIndependentRows(_ page: RecordPage, _ p: CoreDataWritePlan.EntityPlan, pending: inout CoreDataPendingLinks) throws {
        let entity = p.entity
        let table = p.table.name
        let columns = p.table.columns
        let sources = p.sources
        let links = p.links
        let toMany = entity.relationships.map(\.isToMany)
        let keys = page.primaryKeys
        let url = url
        // One slot per relationship, overwritten for each record: emptying and refilling the array per record cost
        // more than the values it holds.
        var relationships = [RelationshipValue](repeating: .toOne(nil), count: toMany.count)
        var derived = [Int64?](repeating: nil, count: sources.count)
        // The entity columns some row went in with NULL although its to-one has a key, noted for the load once.
        var leftNull = [Bool](repeating: false, count: sources.count)
        // The entity numbers this load keeps of each to-one's destination hierarchy, looked up once for the page:
        // nothing is added to them while its rows go in (its own keys are added when it is done).
        let loadedEntities: [CoreDataLoadedEntities.Numbers?] = sources.map { source in
            guard case .toOneEntity(let k) = source, k < links.count, case .toOne(_, _, _, let root) = links[k] else { return nil }
            return pending.loadedEntities.numbers(root: root)
        }
        let insertSQL = p.table.insertSQL
        let insert = try db.statement(insertSQL)
        // Each join's statement too, taken once for the page rather than once per record.
        let joinStatements: [OpaquePointer?] = try links.map { link throws(StoreError) in
            guard case .join(let join) = link else { return nil }
            return try db.statement(join.bulkUpsertSQL)
        }
        // And the highest key of each ordered list's members' table: those tables get no rows while the page's go
        // in (its links never point into its own table).
        var highestMembers: [Int64?] = []
        for link in links {
            guard case .members(let m) = link, m.order != nil || !m.hasInverse else {
                highestMembers.append(nil)
                continue
            }
            highestMembers.append(try highestKey(m.table, &pending))
        }
        // No parameter keeps pointing into the page once it is gone, whether the page goes in or fails.
        defer { sqlite3_clear_bindings(insert) }
        for i in keys.indices {
            let pk = keys[i]
            let malformed: String? = page.withEncodedRecord(at: i) { _, encoded in
                var reader = RecordPage.LinkReader(encoded)
                for (k, isToMany) in toMany.enumerated() {
                    // Into the slot's own list: a new list per record and value cost more than its keys.
                    guard reader.next(into: &relationships[k]), relationships[k].isToMany == isToMany else {
                        return "the value of \(entity.name).\(entity.relationships[k].name)"
                    }
                }
                return reader.isAtEnd ? nil : "the relationship values"
            }
            if let malformed {
                throw StoreError.io(url, operation: "inserting a page of \(page.entity) records",
                                    reason: "record \(pk): \(malformed) is malformed")
            }
            // The columns that come from the record's to-ones, worked out before the row is bound.
            for c in sources.indices {
                switch sources[c] {
                case .toOne(let k):
                    derived[c] = Self.toOne(relationships, k)
                case .toOneEntity(let k):
                    guard let key = Self.toOne(relationships, k), case .toOne(_, _, _, let root) = links[k] else {
                        derived[c] = nil
                        continue
                    }
                    // Nil when not stored yet: filled when the load finishes (`fillEntityColumns`).
                    derived[c] = try loadedEntities[c]?.number(key: key)
                        ?? entityNumber(root: root, key: key, inSave: [:])
                    if derived[c] == nil { leftNull[c] = true }
                case .toOneOrder(let k):
                    guard Self.toOne(relationships, k) != nil, case .toOne = links[k] else {
                        derived[c] = nil
                        continue
                    }
                    let order = columns[c].name
                    derived[c] = try pending.takePosition(CoreDataPendingLinks.Key(table: table, column: order, primaryKey: pk))
                        ?? pending.spilled.position(member: pk, table: table, order: order, db)
                default:
                    continue
                }
            }
            // The row is inserted while its values are borrowed from the page, so that its text and data are bound
            // where they lie instead of copied (the parameters are cleared when the page is done).
            let failure: StoreError? = page.withEncodedRecord(at: i) { values, _ in
                do throws(StoreError) {
                    try refusingDuplicates(table: table, pk: pk) { () throws(StoreError) in
                        try db.run(insert, sql: insertSQL, bindingEvery: { (s) throws(StoreError) in
                            for c in sources.indices {
                                let parameter = Int32(c + 1)
                                switch sources[c] {
                                case .primaryKey: sqlite3_bind_int64(s, parameter, pk)
                                case .entityNumber: sqlite3_bind_int64(s, parameter, p.number)
                                case .optimisticLock: sqlite3_bind_int64(s, parameter, 1)
                                case .attribute: break  // bound from the page's bytes below
                                case .null, .inverselessKey, .inverselessOrder: sqlite3_bind_null(s, parameter)
                                case .toOne, .toOneEntity, .toOneOrder:
                                    if let value = derived[c] { sqlite3_bind_int64(s, parameter, value) } else { sqlite3_bind_null(s, parameter) }
                                }
                            }
                            if let error = Self.bindValues(values, of: page, at: i, p, to: s, url: url, borrowing: true) { throw error }
                        })
                    }
                    return nil
                } catch {
                    return error
                }
            }
            if let failure { throw failure }
            if !pending.entityColumns.isEmpty {
                try fillWaitingEntityColumns(root: p.root, primaryKey: pk, number: p.number, pending: &pending)
            }
            for k in relationships.indices where k < links.count {
                switch links[k] {
                case .members, .join, .unwritable:
                    try writeMembers(pk, relationships[k].keys, p, k, isInsert: true, inserted: [:], pending: &pending,
                                     joinStatement: joinStatements[k], highest: highestMembers[k])
                case .toOne, .none:
                    continue
                }
            }
        }
        for c in sources.indices where leftNull[c] { pending.leftNull(table: table, column: columns[c].name) }
        // Once for the page (its hierarchy's maker looked up once), in its transaction like its rows.
        try globalIDs?.inserted(page.globalIDs, primaryKeys: keys, root: p.root, db, isBulkLoad: true)
        guard let highest = keys.max() else { return }
        pending.highestKey[table] = max(pending.highestKey[table] ?? .min, highest)
        if plan.incoming[p.root]?.contains(where: { $0.entityColumn != nil }) == true {
            pending.loadedEntities.insert(keys, number: p.number, root: p.root)
        }
        if let number = plan.rootNumbers[p.root] {
            try db.run("UPDATE Z_PRIMARYKEY SET Z_MAX = max(ifnull(Z_MAX, 0), ?) WHERE Z_ENT = ?",
                       [.integer(highest), .integer(number)])
        }
    }

    private static func toOne(_ relationships: [RelationshipValue], _ k: Int) -> Int64? {
        guard k < relationships.count, case .toOne(let key) = relationships[k] else { return nil }
        return key
    }
}
