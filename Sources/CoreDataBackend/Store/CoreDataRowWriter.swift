import CSQLite
import Foundation
@_spi(BackendKit) import StoreAPI

/// What a save could not write yet because the row it belongs in is not stored yet, kept by the open store until
/// that row is inserted. A transfer saves a store entity by entity, so an owner's ordered list arrives before its
/// members, and a to-one before a destination whose sub-entity its entity column names.
struct CoreDataPendingLinks {
    // The keys below hash their key (or their names' lengths) only: a save looks one up per row and member, and
    // hashing the names cost more than the rest of the lookup. Equal keys still hash alike; `==` tells apart the
    // few that share a key.
    struct Key: Hashable {
        var table: String
        var column: String
        var primaryKey: Int64

        func hash(into hasher: inout Hasher) { hasher.combine(primaryKey) }
    }

    struct Target: Hashable {
        var root: String
        var primaryKey: Int64

        func hash(into hasher: inout Hasher) { hasher.combine(primaryKey) }
    }

    /// A join table, by name (a bulk load looks its side and pairs up for every record that lists members).
    struct JoinTable: Hashable {
        var name: String

        init(_ name: String) { self.name = name }

        func hash(into hasher: inout Hasher) { hasher.combine(name.utf8.count) }
    }

    /// A table's column.
    struct Column: Hashable {
        var table: String
        var column: String

        func hash(into hasher: inout Hasher) { hasher.combine(table.utf8.count &* 64 &+ column.utf8.count) }
    }

    /// A member's position in its owner's ordered list, by the member's order column and key (a dictionary per
    /// column: a transfer can hold one entry for every member of a large table).
    private var positions: [Column: [Int64: Int64]] = [:]
    /// The owner and position of a member of a to-many without an inverse, by the member's hidden key column.
    private var owners: [Column: [Int64: (owner: Int64, position: Int64?)]] = [:]

    /// How many positions `positions` holds.
    private(set) var positionCount = 0
    /// The most positions a bulk load keeps in memory; beyond them it spills to ``spilled``, so that its memory
    /// stays flat in the store's size while a small load pays nothing for the temporary table.
    var positionLimit = 1 << 16

    mutating func setPosition(_ position: Int64, for key: Key) {
        if positions[Column(table: key.table, column: key.column), default: [:]].updateValue(position, forKey: key.primaryKey) == nil {
            positionCount += 1
        }
    }

    /// Keeps `position` for `key` by the member's key (``CoreDataWaitingPositions``) when it fits there, in a bulk
    /// load; `false` when it does not.
    mutating func keepByKey(_ position: Int64, for key: Key) -> Bool {
        guard waiting.set(position, member: key.primaryKey, table: key.table, order: key.column) else { return false }
        // One place holds a member's position, so that the last one given wins.
        _ = takeMappedPosition(key)
        return true
    }

    /// The position kept for `key`, removed.
    mutating func takePosition(_ key: Key) -> Int64? {
        if !waiting.isEmpty, let position = waiting.take(member: key.primaryKey, table: key.table, order: key.column) {
            return position
        }
        return takeMappedPosition(key)
    }

    /// The position kept for `key` in the map, removed; a position given later for the same member went by key
    /// (``keepByKey(_:for:)``) and was taken first.
    private mutating func takeMappedPosition(_ key: Key) -> Int64? {
        guard positionCount > 0,
            let position = positions[Column(table: key.table, column: key.column)]?.removeValue(forKey: key.primaryKey)
        else { return nil }
        positionCount -= 1
        return position
    }

    mutating func setOwner(_ owner: (owner: Int64, position: Int64?), for key: Key) {
        owners[Column(table: key.table, column: key.column), default: [:]][key.primaryKey] = owner
    }

    func owner(_ key: Key) -> (owner: Int64, position: Int64?)? {
        owners[Column(table: key.table, column: key.column)]?[key.primaryKey]
    }

    mutating func removeOwner(_ key: Key) {
        owners[Column(table: key.table, column: key.column)]?[key.primaryKey] = nil
    }
    /// Rows whose entity column waits for the `Z_ENT` of the record their key points at.
    var entityColumns: [Target: [(table: String, column: String, primaryKey: Int64)]] = [:]
    /// The highest `Z_PK` stored in each table, as far as this store knows (a key above it has no row yet).
    var highestKey: [String: Int64] = [:]
    /// In a bulk load: the column of each join table whose side writes its rows, and the other side's pairs.
    var joinWriters: [JoinTable: String] = [:]
    var deferredJoins: [JoinTable: CoreDataDeferredJoin] = [:]
    /// In a bulk load: the rows the writing side of each join table inserted, as (the other side's key, the writer's
    /// key), known to be all the table holds unless the table is in ``rewrittenJoins``. A table starts the load
    /// empty, so these are what a deferred side is checked against without reading the table back.
    var writtenJoins: [JoinTable: PairSetChecksum] = [:]
    /// In a bulk load: the join tables whose rows something other than their writing side's inserts changed (a
    /// pair given twice, an update or a delete, an ordered writer): checked by reading the table back.
    var rewrittenJoins: Set<String> = []
    /// In a bulk load: the waiting positions beyond ``positionLimit``, in a temporary table.
    var spilled = CoreDataSpilledPositions()
    /// In a bulk load: the entity numbers of rows that entity columns may point at.
    var loadedEntities = CoreDataLoadedEntities()
    /// In a bulk load: the waiting positions kept by member key, before the map and the temporary table.
    var waiting = CoreDataWaitingPositions()
    /// In a bulk load: the entity columns (`table.column`) a row went in with NULL although its to-one has a key,
    /// for ``CoreDataRowWriter/fillEntityColumns(only:)``; `nil` once an update may have left any such NULL.
    var entityColumnsLeftNull: Set<String>? = []

    /// Notes that a row of `table` went in with NULL in its entity column `column` although its to-one has a key.
    mutating func leftNull(table: String, column: String) {
        entityColumnsLeftNull?.insert(table + "." + column)
    }
}

/// Writes one save into a Core Data store's tables, inside the caller's transaction, touching only the rows the
/// changes name (see ``CoreDataWritePlan`` for where each value goes):
///
/// - deleted records: their rows, their join rows, and the foreign keys that pointed at them (set to NULL);
/// - inserted records: one row each, with `Z_OPT` 1;
/// - updated records: `Z_OPT` + 1 and the columns of the values ``StoreChanges/updatedProperties`` says changed;
/// - the members of each inserted or changed to-many: their order column (from the owner's list: a member's
///   position, from 1, times ``orderSpacing``), a to-many without an inverse's hidden key, or join rows;
/// - `Z_PRIMARYKEY.Z_MAX` of each hierarchy that got records, kept at or above every key in its table.
///
/// A member whose owner's list is not in the save (it moved to an owner stored earlier) goes after the owner's
/// last member.
struct CoreDataRowWriter {
    let plan: CoreDataWritePlan
    let schema: Schema
    let db: CoreDataConnection
    let url: URL
    let storeUUID: UUID
    /// In a bulk load the foreign-key indexes are dropped: positions that would be looked up by foreign key (a
    /// member whose owner's list is not known, a pair whose other side's list is not known) are left NULL, since a
    /// transfer delivers every owner's list.
    let isBulkLoad: Bool
    /// Where values of attributes that allow external storage go (see ``CoreDataExternalDataWriter``).
    var external: CoreDataExternalDataWriter? = nil
    /// Keeps the global identifiers that are not the derived ones (see ``CoreDataGlobalIDTable``).
    var globalIDs: CoreDataGlobalIDWriter? = nil

    /// Core Data's spacing of `Z_FOK_` values: the spacing seen in real stores, which leaves Core Data room to insert
    /// between two members without renumbering.
    static let orderSpacing: Int64 = 1024

    private typealias Key = CoreDataPendingLinks.Key

    /// Writes `changes`. With `page`, the inserted records are its records' shells, in page order: their keys,
    /// global IDs and relationships, their attribute values bound from the page (see `CoreDataRowWriter+Page`).
    func save(_ changes: StoreChanges, pending: inout CoreDataPendingLinks, page: RecordPage? = nil) throws {
        // The plan looked up last: a save's records come in runs of one entity (a page is all one), and comparing
        // the same name is cheaper than hashing it.
        var last: CoreDataWritePlan.EntityPlan?
        func entityPlan(_ name: String) throws -> CoreDataWritePlan.EntityPlan {
            if let last, last.entity.name == name { return last }
            guard let p = plan.entities[name] else {
                _ = try schema.requireEntity(name)
                throw StoreError.unsupported("\(url.path): entity \(name) has no table in this store")
            }
            last = p
            return p
        }
        // The records of this save by root and key, and the positions their lists give their members.
        var inSave: [String: [Int64: String]] = [:]
        var inserted: [String: Set<Int64>] = [:]
        var positions: [Key: Int64] = [:]
        var owners: [Key: (owner: Int64, position: Int64?)] = [:]
        var changed: [(record: Record, plan: CoreDataWritePlan.EntityPlan, relationships: [Int], isInsert: Bool)] = []
        for r in changes.inserted {
            let p = try entityPlan(r.entity)
            inSave[p.root, default: [:]][r.primaryKey] = r.entity
            inserted[p.root, default: []].insert(r.primaryKey)
            changed.append((r, p, p.linkIndices, true))
        }
        for (u, r) in changes.updated.enumerated() {
            let p = try entityPlan(r.entity)
            inSave[p.root, default: [:]][r.primaryKey] = r.entity
            changed.append((r, p, changes.changedProperties(ofUpdated: u)?.relationships ?? p.linkIndices, false))
        }
        for (r, p, relationships, _) in changed {
            for i in relationships where i < p.links.count && i < r.relationships.count {
                guard case .members(let link) = p.links[i], let saved = inSave[link.root] else { continue }
                // Members outside this save get theirs from `writeMembers` (their rows, or the pending links).
                for (j, m) in r.relationships[i].keys.enumerated() where saved[m] != nil {
                    let position = Int64(j + 1) * Self.orderSpacing
                    if link.hasInverse {
                        if let order = link.order { positions[Key(table: link.table, column: order, primaryKey: m)] = position }
                    } else {
                        owners[Key(table: link.table, column: link.foreignKey, primaryKey: m)] =
                            (r.primaryKey, link.order == nil ? nil : position)
                    }
                }
            }
        }

        // A row updated or deleted may no longer have the entity number a bulk load kept for it.
        if !pending.loadedEntities.isEmpty, !changes.updated.isEmpty || !changes.deleted.isEmpty {
            pending.loadedEntities.removeAll()
        }
        // An update may leave an entity column NULL: the load fills every one when it finishes.
        if isBulkLoad, !changes.updated.isEmpty { pending.entityColumnsLeftNull = nil }
        if isBulkLoad, !changes.deleted.isEmpty {
            // A delete removes join rows the writing sides' checksums still hold.
            for columns in plan.joinColumns.values { for c in columns { pending.rewrittenJoins.insert(c.table) } }
        }
        for key in changes.deleted { try delete(key, entityPlan(key.entity)) }
        // One value array for every row: emptied, not freed, between them.
        var values: [SQLiteValue] = []
        for (k, r) in changes.inserted.enumerated() {
            try insert(r, try entityPlan(r.entity), inSave: inSave, positions: positions, owners: owners, pending: &pending,
                       values: &values, page: page, pageIndex: k)
        }
        for (u, r) in changes.updated.enumerated() {
            try update(r, try entityPlan(r.entity), changes.changedProperties(ofUpdated: u), inSave: inSave,
                       positions: positions)
        }
        for (r, p, relationships, isInsert) in changed {
            for i in relationships where i < p.links.count && i < r.relationships.count {
                try writeMembers(r.primaryKey, r.relationships[i].keys, p, i, isInsert: isInsert, inserted: inserted,
                                 pending: &pending)
            }
        }
        for (root, keys) in inserted {
            guard let number = plan.rootNumbers[root], let highest = keys.max() else { continue }
            try db.run("UPDATE Z_PRIMARYKEY SET Z_MAX = max(ifnull(Z_MAX, 0), ?) WHERE Z_ENT = ?",
                       [.integer(highest), .integer(number)])
        }
    }

    // MARK: Rows

    private func delete(_ key: RecordKey, _ p: CoreDataWritePlan.EntityPlan) throws {
        let q = CoreDataSQL.quoted
        let pk = SQLiteValue.integer(key.primaryKey)
        try db.run("DELETE FROM \(q(p.table.name)) WHERE Z_PK = ?", [pk])
        try globalIDs?.removed(root: p.root, primaryKey: key.primaryKey, db)
        for c in plan.incoming[p.root] ?? [] {
            let extra = [c.entityColumn, c.order].compactMap { $0 }.map { ", \(q($0)) = NULL" }.joined()
            try db.run("UPDATE \(q(c.table)) SET \(q(c.column)) = NULL\(extra) WHERE \(q(c.column)) = ?", [pk])
        }
        for c in plan.joinColumns[p.root] ?? [] {
            try db.run("DELETE FROM \(q(c.table)) WHERE \(q(c.column)) = ?", [pk])
        }
    }

    private func insert(
        _ r: Record, _ p: CoreDataWritePlan.EntityPlan, inSave: [String: [Int64: String]], positions: [Key: Int64],
        owners: [Key: (owner: Int64, position: Int64?)], pending: inout CoreDataPendingLinks,
        values: inout [SQLiteValue], page: RecordPage?, pageIndex: Int
    ) throws {
        let e = p.entity
        let attributes = e.attributes
        values.removeAll(keepingCapacity: true)
        values.reserveCapacity(p.sources.count)
        let table = p.table.name
        let columns = p.table.columns
        let sources = p.sources
        for c in sources.indices {
            let source = sources[c]
            let column = columns[c].name
            switch source {
            case .primaryKey: values.append(.integer(r.primaryKey))
            case .entityNumber: values.append(.integer(p.number))
            case .optimisticLock: values.append(.integer(1))
            case .null: values.append(.null)
            case .attribute(let i):
                // A page's values are bound from its bytes once every other column is.
                guard page == nil, i < r.attributes.count else { values.append(.null); continue }
                // Only an attribute that allows external storage goes to the external writer, and the attribute is
                // passed by array and index: copying its description per value cost more than encoding the value.
                if attributes[i].allowsExternalBinaryDataStorage, let external,
                    let v = try external.encode(r.attributes[i], attributes[i], table: table, column: column,
                                                primaryKey: r.primaryKey)
                {
                    values.append(v)
                } else {
                    values.append(try encode(r.attributes[i], attributes, i, record: r))
                }
            case .toOne(let i):
                values.append(toOne(r, i).map { .integer($0) } ?? .null)
            case .toOneEntity(let i):
                guard let k = toOne(r, i), case .toOne(_, _, _, let root) = p.links[i] else { values.append(.null); continue }
                if let n = try entityNumber(root: root, key: k, inSave: inSave) {
                    values.append(.integer(n))
                } else if isBulkLoad {
                    // Not stored yet: filled when the load finishes (`fillEntityColumns`).
                    values.append(.null)
                    pending.leftNull(table: table, column: column)
                } else {
                    values.append(.null)
                    pending.entityColumns[.init(root: root, primaryKey: k), default: []].append((table, column, r.primaryKey))
                }
            case .toOneOrder(let i):
                guard let owner = toOne(r, i), case .toOne(let fk, _, _, _) = p.links[i] else { values.append(.null); continue }
                let key = Key(table: table, column: column, primaryKey: r.primaryKey)
                if let position = positions[key] ?? pending.takePosition(key) {
                    values.append(.integer(position))
                } else if isBulkLoad {
                    let spilled = try pending.spilled.position(member: r.primaryKey, table: table, order: column, db)
                    values.append(spilled.map { .integer($0) } ?? .null)
                } else {
                    values.append(.integer(try nextPosition(table: table, order: column, foreignKey: fk, owner: owner)))
                }
            case .inverselessKey(let keyColumn):
                let key = Key(table: table, column: keyColumn, primaryKey: r.primaryKey)
                values.append((owners[key] ?? pending.owner(key)).map { .integer($0.owner) } ?? .null)
            case .inverselessOrder(let keyColumn):
                let key = Key(table: table, column: keyColumn, primaryKey: r.primaryKey)
                values.append((owners[key] ?? pending.owner(key))?.position.map { .integer($0) } ?? .null)
            }
        }
        for case .inverselessKey(let keyColumn) in p.sources {
            pending.removeOwner(Key(table: table, column: keyColumn, primaryKey: r.primaryKey))
        }
        if let page {
            // The closure captures the page and the URL only: capturing the writer copied all of it per row.
            let url = url
            try refusingDuplicates(table: table, pk: r.primaryKey) { () throws(StoreError) in
                try db.run(p.table.insertSQL, values, bind: { (s) throws(StoreError) in
                    try Self.bindPageValues(page, at: pageIndex, p, to: s, url: url)
                })
            }
        } else {
            try run(p.table.insertSQL, values, table: table, pk: r.primaryKey)
        }
        try globalIDs?.inserted(r.globalID, primaryKey: r.primaryKey, root: p.root, db, isBulkLoad: isBulkLoad)
        pending.highestKey[table] = max(pending.highestKey[table] ?? .min, r.primaryKey)
        try fillWaitingEntityColumns(root: p.root, primaryKey: r.primaryKey, number: p.number, pending: &pending)
    }

    /// Writes `number` into the entity columns of the rows whose to-one waited for record `primaryKey` of `root`.
    func fillWaitingEntityColumns(root: String, primaryKey: Int64, number: Int64, pending: inout CoreDataPendingLinks) throws {
        guard let waiting = pending.entityColumns.removeValue(forKey: .init(root: root, primaryKey: primaryKey)) else { return }
        for w in waiting {
            try db.run("UPDATE \(CoreDataSQL.quoted(w.table)) SET \(CoreDataSQL.quoted(w.column)) = ? WHERE Z_PK = ?",
                       [.integer(number), .integer(w.primaryKey)])
        }
    }

    private func update(
        _ r: Record, _ p: CoreDataWritePlan.EntityPlan, _ changed: ChangedProperties?, inSave: [String: [Int64: String]],
        positions: [Key: Int64]
    ) throws {
        let q = CoreDataSQL.quoted
        var sets = ["Z_ENT = ?", "Z_OPT = ifnull(Z_OPT, 0) + 1"]
        var values: [SQLiteValue] = [.integer(p.number)]
        for i in changed?.attributes ?? Array(p.entity.attributes.indices) {
            guard i < r.attributes.count, i < p.attributeColumns.count, let column = p.attributeColumns[i] else { continue }
            sets.append("\(q(column)) = ?")
            values.append(try external?.encode(r.attributes[i], p.entity.attributes[i], table: p.table.name, column: column,
                                               primaryKey: r.primaryKey)
                ?? encode(r.attributes[i], p.entity.attributes, i, record: r))
        }
        for i in changed?.relationships ?? Array(p.links.indices) {
            guard i < p.links.count, case .toOne(let fk, let ent, let order, let root) = p.links[i] else { continue }
            let key = toOne(r, i)
            sets.append("\(q(fk)) = ?")
            values.append(key.map { .integer($0) } ?? .null)
            if let ent {
                sets.append("\(q(ent)) = ?")
                values.append(try key.flatMap { try entityNumber(root: root, key: $0, inSave: inSave) }.map { .integer($0) } ?? .null)
            }
            if let order {
                sets.append("\(q(order)) = ?")
                if let key {
                    let position = try positions[Key(table: p.table.name, column: order, primaryKey: r.primaryKey)]
                        ?? nextPosition(table: p.table.name, order: order, foreignKey: fk, owner: key)
                    values.append(.integer(position))
                } else {
                    values.append(.null)
                }
            }
        }
        values.append(.integer(r.primaryKey))
        let sql = "UPDATE \(q(p.table.name)) SET \(sets.joined(separator: ", ")) WHERE Z_PK = ?"
        guard try run(sql, values, table: p.table.name, pk: r.primaryKey) > 0 else {
            throw StoreError.objectNotFound(ObjectID(storeUUID: storeUUID, entity: r.entity, primaryKey: r.primaryKey))
        }
    }

    /// Writes what `members`, the value of relationship `i` of record `owner`, hold of it: order columns, hidden keys
    /// or join rows. `joinStatement`, when given, is the statement of the join's bulk-load SQL, and `highest` the
    /// highest key stored in the members' table (``highestKey(_:_:)``), looked up once by a caller writing a whole
    /// page in a bulk load.
    func writeMembers(
        _ owner: Int64, _ members: [Int64], _ p: CoreDataWritePlan.EntityPlan, _ i: Int, isInsert: Bool,
        inserted: [String: Set<Int64>], pending: inout CoreDataPendingLinks, joinStatement: OpaquePointer? = nil,
        highest: Int64? = nil
    ) throws {
        let q = CoreDataSQL.quoted
        switch p.links[i] {
        case .toOne, .none:
            return
        case .unwritable(let reason):
            guard !members.isEmpty || !isInsert else { return }
            throw StoreError.unsupported("\(url.path): \(reason)")
        case .members(let link):
            if !link.hasInverse, !isInsert {
                let extra = link.order.map { ", \(q($0)) = NULL" } ?? ""
                try db.run("UPDATE \(q(link.table)) SET \(q(link.foreignKey)) = NULL\(extra) WHERE \(q(link.foreignKey)) = ?",
                           [.integer(owner)])
            }
            // With an inverse, each member's own to-one holds the key: only an ordered list has more to write.
            guard !link.hasInverse || link.order != nil else { return }
            let highest = try highest ?? highestKey(link.table, &pending)
            let insertedMembers = inserted[link.root]
            for (j, m) in members.enumerated() where insertedMembers?.contains(m) != true {
                let position = Int64(j + 1) * Self.orderSpacing
                let changedRows: Int
                if m > highest {
                    changedRows = 0
                } else if link.hasInverse, let order = link.order {
                    changedRows = try db.run("UPDATE \(q(link.table)) SET \(q(order)) = ? WHERE Z_PK = ? AND \(q(link.foreignKey)) = ?",
                                             [.integer(position), .integer(m), .integer(owner)])
                } else {
                    let extra = link.order.map { ", \(q($0)) = ?" } ?? ""
                    var values: [SQLiteValue] = [.integer(owner)]
                    if link.order != nil { values.append(.integer(position)) }
                    changedRows = try db.run("UPDATE \(q(link.table)) SET \(q(link.foreignKey)) = ?\(extra) WHERE Z_PK = ?",
                                             values + [.integer(m)])
                }
                guard changedRows == 0 else { continue }
                // Not stored yet (a transfer writes owners before members): kept until the member's row is inserted.
                if link.hasInverse, let order = link.order {
                    let key = Key(table: link.table, column: order, primaryKey: m)
                    if isBulkLoad, pending.keepByKey(position, for: key) {
                        continue
                    }
                    // One place holds a member's position, so that the last one given wins.
                    _ = pending.takePosition(key)
                    if isBulkLoad, pending.positionCount >= pending.positionLimit {
                        try pending.spilled.add(position, member: m, table: link.table, order: order, db)
                    } else {
                        pending.setPosition(position, for: key)
                    }
                } else if !link.hasInverse {
                    pending.setOwner((owner, link.order == nil ? nil : position),
                                     for: Key(table: link.table, column: link.foreignKey, primaryKey: m))
                }
            }
        case .join(let link):
            var current: Set<Int64> = []
            if !isInsert {
                if isBulkLoad { pending.rewrittenJoins.insert(link.table) }
                try db.query("SELECT \(q(link.theirs)) FROM \(q(link.table)) WHERE \(q(link.mine)) = ?", [.integer(owner)]) { s in
                    current.insert(sqlite3_column_int64(s, 0))
                }
                for gone in current.subtracting(members) {
                    try db.run("DELETE FROM \(q(link.table)) WHERE \(q(link.mine)) = ? AND \(q(link.theirs)) = ?",
                               [.integer(owner), .integer(gone)])
                }
            }
            if isBulkLoad, isInsert, link.myOrder == nil,
                !writesJoinRows(link, owner: owner, members: members, p, i, pending: &pending)
            {
                return
            }
            let sql = isBulkLoad ? link.bulkUpsertSQL : link.upsertSQL
            let (hasMyOrder, bindsTheirOrder) = (link.myOrder != nil, link.theirOrder != nil && !isBulkLoad)
            let statement = try (isBulkLoad ? joinStatement : nil) ?? db.statement(sql)
            let inserted = try refusingDuplicates(table: link.table, pk: owner) { () throws(StoreError) in
                try db.run(statement, sql: sql, rows: members.count) { j, bind in
                    bind(1, owner)
                    bind(2, members[j])
                    if hasMyOrder { bind(3, Int64(j + 1) * Self.orderSpacing) }
                    if bindsTheirOrder { bind(hasMyOrder ? 4 : 3, members[j]) }
                }
            }
            if isBulkLoad {
                // Each unordered pair either went in as a new row or met one there already (and did nothing); only
                // when every one went in are the table's rows still exactly the pairs counted.
                if isInsert, !hasMyOrder, inserted == members.count,
                    pending.rewrittenJoins.isEmpty || !pending.rewrittenJoins.contains(link.table)
                {
                    Self.add(members, owner, to: &pending.writtenJoins[.init(link.table), default: PairSetChecksum()])
                } else {
                    pending.rewrittenJoins.insert(link.table)
                }
            }
        }
    }

    /// In a bulk load, whether this side of an unordered join table writes its rows for an inserted record's list:
    /// one side does (the side leading the table's primary key, else the first the load meets); the other only
    /// adds its pairs, here, to a checksum that must match the table when the load finishes.
    func writesJoinRows(
        _ link: CoreDataWritePlan.JoinLink, owner: Int64, members: [Int64], _ p: CoreDataWritePlan.EntityPlan, _ i: Int,
        pending: inout CoreDataPendingLinks
    ) -> Bool {
        let writer: String
        let joinTable = CoreDataPendingLinks.JoinTable(link.table)
        if let known = pending.joinWriters[joinTable] {
            writer = known
        } else {
            writer = plan.bulkJoinWriters[link.table] ?? link.mine
            pending.joinWriters[joinTable] = writer
        }
        guard writer != link.mine else { return true }
        pending.deferredJoins[joinTable, default: CoreDataDeferredJoin(
            table: link.table, column: link.mine, other: link.theirs, entity: p.entity.name,
            relationship: p.entity.relationships[i].name)].add(mine: owner, theirs: members)
        return false
    }

    /// Adds the pairs (member, owner) to `pairs` (one lookup of the table's checksum for the list, not one a pair).
    private static func add(_ members: [Int64], _ owner: Int64, to pairs: inout PairSetChecksum) {
        for m in members { pairs.add(m, owner) }
    }

    /// Sets every to-one's entity column still NULL from its destination's row, in one statement per column: a
    /// bulk load leaves those NULL whose destination was not stored yet (one lookup by key is cheaper than the
    /// row's second write, so a destination already stored is looked up as the row is inserted). `only`, when
    /// given, names the columns (`table.column`) the load left NULL: each statement scans its whole table, so the
    /// others are not visited.
    func fillEntityColumns(only: Set<String>? = nil) throws {
        let q = CoreDataSQL.quoted
        var done: Set<String> = []
        for p in plan.entities.values {
            for link in p.links {
                guard case .toOne(let fk, let ent?, _, let root) = link, let destination = plan.tables[root]?.name,
                    done.insert(p.table.name + "." + ent).inserted, only?.contains(p.table.name + "." + ent) ?? true
                else { continue }
                try db.run("UPDATE \(q(p.table.name)) SET \(q(ent)) = (SELECT d.Z_ENT FROM \(q(destination)) AS d "
                    + "WHERE d.Z_PK = \(q(p.table.name)).\(q(fk))) WHERE \(q(fk)) IS NOT NULL AND \(q(ent)) IS NULL")
            }
        }
    }

    // MARK: Helpers

    private func toOne(_ r: Record, _ i: Int) -> Int64? {
        guard i < r.relationships.count, case .toOne(let k) = r.relationships[i] else { return nil }
        return k
    }

    /// The `Z_ENT` of the record `key` of hierarchy `root`: from this save, else from the store; `nil` when it is
    /// not stored yet.
    func entityNumber(root: String, key: Int64, inSave: [String: [Int64: String]]) throws -> Int64? {
        if let name = inSave[root]?[key], let n = plan.entities[name]?.number { return n }
        guard let sql = plan.tables[root]?.entitySQL else { return nil }
        return try db.integer(sql, key: key)
    }

    /// The position after the last member of `owner`'s ordered list.
    private func nextPosition(table: String, order: String, foreignKey: String, owner: Int64) throws -> Int64 {
        let q = CoreDataSQL.quoted
        let last = try db.integer("SELECT max(\(q(order))) FROM \(q(table)) WHERE \(q(foreignKey)) = ?", [.integer(owner)])
        return (last ?? 0) + Self.orderSpacing
    }

    func highestKey(_ table: String, _ pending: inout CoreDataPendingLinks) throws -> Int64 {
        if let k = pending.highestKey[table] { return k }
        let k = try db.integer("SELECT max(Z_PK) FROM \(CoreDataSQL.quoted(table))") ?? 0
        pending.highestKey[table] = k
        return k
    }

    @discardableResult
    private func run(
        _ sql: String, _ values: [SQLiteValue], table: String, pk: Int64,
        then bind: ((OpaquePointer) throws(StoreError) -> Void)? = nil
    ) throws(StoreError) -> Int {
        try refusingDuplicates(table: table, pk: pk) { () throws(StoreError) in try db.run(sql, values, then: bind) }
    }

    /// Runs `body`, turning a uniqueness violation it meets into the save's refusal, naming the row.
    @discardableResult
    func refusingDuplicates<T>(table: String, pk: Int64, _ body: () throws(StoreError) -> T) throws(StoreError) -> T {
        do throws(StoreError) {
            return try body()
        } catch {
            let code = db.lastExtendedError
            // SQLITE_CONSTRAINT_UNIQUE / _PRIMARYKEY: a uniqueness constraint or a duplicate join row.
            if code == SQLITE_CONSTRAINT | (8 << 8) || code == SQLITE_CONSTRAINT | (6 << 8),
                case .io(_, _, let reason) = error
            {
                throw StoreError.refused(url, reason: "\(table) row Z_PK \(pk): \(reason)")
            }
            throw error
        }
    }

    /// A value as Core Data stores it (see the format reference, §5).
    private func encode(
        _ v: StoreValue, _ attributes: [AttributeDescription], _ i: Int, record: Record
    ) throws(StoreError) -> SQLiteValue {
        switch v {
        case .null: return .null
        case .integer16(let i): return .integer(Int64(i))
        case .integer32(let i): return .integer(Int64(i))
        case .integer64(let i): return .integer(i)
        // [unverified] Core Data was seen storing REAL values in DECIMAL columns. The double is parsed from the
        // decimal's text: NSDecimalNumber's doubleValue can be off in the last bits, and the reader turns the
        // stored double back into its shortest text, so only the nearest double round-trips.
        case .decimal(let d):
            guard let real = Double(DecimalText.string(for: d)) else {
                throw .typeMismatch(entity: record.entity, property: attributes[i].name, expected: .decimal, got: "\(d)")
            }
            return .real(real)
        case .double(let d): return .real(d)
        case .float(let f): return .real(Double(f))
        case .string(let s): return .text(s)
        case .boolean(let b): return .integer(b ? 1 : 0)
        case .date(let d): return .real(d.timeIntervalSinceReferenceDate)
        case .binary(let data):
            // A value that may be stored externally is written inline behind its marker (CoreDataExternalData).
            return .blob(attributes[i].allowsExternalBinaryDataStorage ? CoreDataExternalData.inlineColumn(data) : Array(data))
        case .uuid(let u):
            let b = u.uuid
            return .blob([b.0, b.1, b.2, b.3, b.4, b.5, b.6, b.7, b.8, b.9, b.10, b.11, b.12, b.13, b.14, b.15])
        case .uri(let u): return .text(u.absoluteString)
        }
    }
}
