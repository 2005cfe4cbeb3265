import CSQLite
import Foundation
@_spi(BackendKit) import StoreAPI

/// A bulk load's page of records whose rows do not depend on each other: the rows are bound from the page's bytes
/// and inserted ``CoreDataWritePlan/Table/insertBatchRows`` to a statement, with no record, value array or per-save
/// lookup table made for them, and the bookkeeping a save does per record (the highest key, `Z_MAX`) done once for
/// the page. A statement that would fail is not kept, and its rows go in one by one, so that the page fails with the
/// error of the row at fault. The entity numbers of the page's rows are kept for the entity columns of rows that
/// point at them (``CoreDataLoadedEntities``).
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
        let width = sources.count
        let batchRows = p.table.insertBatchRows
        // The rows of one batch are staged before any goes in: each slot's relationship values (into the slot's own
        // lists, overwritten per record: a new list per record and value cost more than its keys) and the columns
        // that come from its to-ones.
        var relationships = [[RelationshipValue]](
            repeating: [RelationshipValue](repeating: .toOne(nil), count: toMany.count), count: batchRows)
        var derived = [Int64?](repeating: nil, count: width * batchRows)
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
        let insertBatchSQL = p.table.insertBatchSQL
        let insertBatch = batchRows > 1 && keys.count >= batchRows ? try db.statement(insertBatchSQL) : nil
        // Each ordered join's statement too, taken once for the page rather than once per record (an unordered
        // join's pairs are gathered for ``insertJoinPairs(_:_:all:pending:)``).
        let joinStatements: [OpaquePointer?] = try links.map { link throws(StoreError) in
            guard case .join(let join) = link, join.myOrder != nil else { return nil }
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
        // The pairs of each unordered join table this side writes, gathered across records and written many per
        // statement (``insertJoinPairs(_:_:all:pending:)``): owner and member, flattened.
        var joinPairs = [[Int64]](repeating: [], count: links.count)
        // No parameter keeps pointing into the page once it is gone, whether the page goes in or fails.
        defer {
            sqlite3_clear_bindings(insert)
            if let insertBatch { sqlite3_clear_bindings(insertBatch) }
        }

        /// Binds the row of record `i`, staged in `slot`, into `s` from parameter `base + 1`, its text and data where
        /// they lie in the page; the error when a value does not fit.
        func bindRow(_ s: OpaquePointer, _ i: Int, slot: Int, base: Int32, _ records: RecordPage.EncodedRecords) -> StoreError? {
            let pk = keys[i]
            for c in sources.indices {
                let parameter = base + Int32(c + 1)
                switch sources[c] {
                case .primaryKey: sqlite3_bind_int64(s, parameter, pk)
                case .entityNumber: sqlite3_bind_int64(s, parameter, p.number)
                case .optimisticLock: sqlite3_bind_int64(s, parameter, 1)
                case .attribute: break  // bound from the page's bytes below
                case .null, .inverselessKey, .inverselessOrder: sqlite3_bind_null(s, parameter)
                case .toOne, .toOneEntity, .toOneOrder:
                    if let value = derived[slot * width + c] {
                        sqlite3_bind_int64(s, parameter, value)
                    } else {
                        sqlite3_bind_null(s, parameter)
                    }
                }
            }
            return Self.bindValues(records.values(at: i), of: page, at: i, p, to: s, url: url, borrowing: true,
                                   parameterOffset: base)
        }

        /// Works out the columns of record `i` that come from its to-ones into `slot`, taking the positions that wait
        /// for it: once, whether its row then goes in with a batch or alone.
        func derive(_ i: Int, slot: Int) throws {
            let pk = keys[i]
            let rs = relationships[slot]
            for c in sources.indices {
                switch sources[c] {
                case .toOne(let k):
                    derived[slot * width + c] = Self.toOne(rs, k)
                case .toOneEntity(let k):
                    guard let key = Self.toOne(rs, k), case .toOne(_, _, _, let root) = links[k] else {
                        derived[slot * width + c] = nil
                        continue
                    }
                    // Nil when not stored yet: filled when the load finishes (`fillEntityColumns`).
                    let number = try loadedEntities[c]?.number(key: key) ?? entityNumber(root: root, key: key, inSave: [:])
                    derived[slot * width + c] = number
                    if number == nil { leftNull[c] = true }
                case .toOneOrder(let k):
                    guard Self.toOne(rs, k) != nil, case .toOne = links[k] else {
                        derived[slot * width + c] = nil
                        continue
                    }
                    let order = columns[c].name
                    derived[slot * width + c] = try pending.takePosition(CoreDataPendingLinks.Key(table: table, column: order, primaryKey: pk))
                        ?? pending.spilled.position(member: pk, table: table, order: order, db)
                default:
                    continue
                }
            }
        }

        /// What record `i`'s row brings once it is in: the entity columns that waited for it and its to-manys.
        func followUp(_ i: Int, slot: Int) throws {
            let pk = keys[i]
            if !pending.entityColumns.isEmpty {
                try fillWaitingEntityColumns(root: p.root, primaryKey: pk, number: p.number, pending: &pending)
            }
            for k in relationships[slot].indices where k < links.count {
                switch links[k] {
                case .join(let join) where join.myOrder == nil:
                    let members = relationships[slot][k].keys
                    guard writesJoinRows(join, owner: pk, members: members, p, k, pending: &pending) else { continue }
                    for m in members {
                        joinPairs[k].append(pk)
                        joinPairs[k].append(m)
                    }
                    if joinPairs[k].count >= 2 * CoreDataWritePlan.JoinLink.bulkBatchPairs {
                        try insertJoinPairs(join, &joinPairs[k], all: false, pending: &pending)
                    }
                case .members, .join, .unwritable:
                    try writeMembers(pk, relationships[slot][k].keys, p, k, isInsert: true, inserted: [:], pending: &pending,
                                     joinStatement: joinStatements[k], highest: highestMembers[k])
                case .toOne, .none:
                    continue
                }
            }
        }

        // The page's bytes stay borrowed while its rows go in, so that a batch's rows are bound where they lie
        // instead of copied (the parameters are cleared when the page is done).
        try page.withEncodedRecords { records in
            var start = 0
            while start < keys.count {
                // Staging stops before a record whose relationship values are malformed: the rows before it go in
                // (with their follow-ups) before its error, as they would one by one.
                var end = start
                while end < keys.count, end - start < batchRows {
                    let slot = end - start
                    var reader = RecordPage.LinkReader(records.links(at: end))
                    var malformed: String?
                    for (k, isToMany) in toMany.enumerated() {
                        guard reader.next(into: &relationships[slot][k]), relationships[slot][k].isToMany == isToMany else {
                            malformed = "the value of \(entity.name).\(entity.relationships[k].name)"
                            break
                        }
                    }
                    if malformed == nil, !reader.isAtEnd { malformed = "the relationship values" }
                    if let malformed {
                        guard end == start else { break }
                        throw StoreError.io(url, operation: "inserting a page of \(page.entity) records",
                                            reason: "record \(keys[end]): \(malformed) is malformed")
                    }
                    try derive(end, slot: slot)
                    end += 1
                }
                var inBatch = false
                if end - start == batchRows, let insertBatch {
                    inBatch = try db.runBatch(insertBatch, sql: insertBatchSQL) { s in
                        for i in start..<end {
                            let slot = i - start
                            if bindRow(s, i, slot: slot, base: Int32(slot * width), records) != nil { return false }
                        }
                        return true
                    } != nil
                }
                for i in start..<end {
                    let slot = i - start
                    if !inBatch {
                        // One by one, each with the error of its own row (a refused duplicate names it).
                        let pk = keys[i]
                        try refusingDuplicates(table: table, pk: pk) { () throws(StoreError) in
                            try db.run(insert, sql: insertSQL, bindingEvery: { (s) throws(StoreError) in
                                if let error = bindRow(s, i, slot: slot, base: 0, records) { throw error }
                            })
                        }
                    }
                    try followUp(i, slot: slot)
                }
                start = end
            }
        }

        for k in joinPairs.indices where !joinPairs[k].isEmpty {
            guard case .join(let join) = links[k] else { continue }
            try insertJoinPairs(join, &joinPairs[k], all: true, pending: &pending)
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
