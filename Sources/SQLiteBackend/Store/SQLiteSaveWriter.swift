import CSQLite
import Foundation
import StoreAPI

/// `SQLITE_CONSTRAINT_PRIMARYKEY` and `SQLITE_CONSTRAINT_UNIQUE` (function-like macros Swift does not import).
let sqliteConstraintPrimaryKey: Int32 = SQLITE_CONSTRAINT | (6 << 8)
let sqliteConstraintUnique: Int32 = SQLITE_CONSTRAINT | (8 << 8)

/// Writes one ``StoreChanges`` inside the caller's write transaction.
///
/// Order: deletes, updates, inserts (so a value freed by a delete or an update can be taken by an insert), then the
/// relationship data that lives outside a record's own row (order and join tables), then the key allocator and
/// history. Updates of records with uniqueness constraints first clear the constrained columns of every updated
/// record, so two records may swap values in one save.
///
/// The to-one side of a relationship is authoritative for derived to-many sides: a to-many side only writes its
/// order, which applies to the members whose foreign key points back to it.
struct SQLiteSaveWriter {
    let layout: SQLiteLayout
    let connection: SQLiteConnection
    let url: URL
    let storeUUID: UUID

    private var maxInserted: [String: Int64] = [:]
    /// The highest key this writer inserted into each hierarchy, kept after ``moveKeyAllocators()`` used it: once
    /// the save commits, the store's reserved key blocks start again above it.
    private(set) var highestInserted: [String: Int64] = [:]
    /// The highest key inserted into the root written last, folded into `maxInserted` when the root changes: saves
    /// insert runs of one entity, and this keeps two dictionary updates per record out of them.
    private var runMaximum: (root: String, key: Int64)?
    /// The layout looked up last, for the same reason.
    private var lastLayout: EntityLayout?

    /// Whether the store is being bulk loaded (see `SQLitePersistentStore+BulkLoad`): inserted records' join rows are then
    /// added without reading what is there (the store was empty when the load began, so a record's rows can only
    /// come from the other side of a many-to-many, which stored the same pairs).
    let isBulkLoad: Bool
    /// During a bulk load, the links of many-to-many sides that were not written because the other side writes
    /// the same rows (see ``DeferredLinks``), by join table; `nil` when every side writes its rows.
    private(set) var deferredLinks: [String: DeferredLinks]?

    init(layout: SQLiteLayout, connection: SQLiteConnection, url: URL, storeUUID: UUID, isBulkLoad: Bool = false,
         deferredLinks: [String: DeferredLinks]? = nil) {
        self.layout = layout
        self.connection = connection
        self.url = url
        self.storeUUID = storeUUID
        self.isBulkLoad = isBulkLoad
        self.deferredLinks = isBulkLoad ? deferredLinks : nil
    }

    mutating func apply(_ changes: StoreChanges) throws {
        if let links = deferredLinks, !changes.updated.isEmpty || !changes.deleted.isEmpty {
            // Updates and deletes read and rewrite join rows: from here on every side writes its own, and the
            // links deferred so far must be in the table already (the other side loaded them).
            for l in links.values { try l.verify(connection) }
            deferredLinks = nil
        }
        for key in changes.deleted { try delete(key) }
        try clearConstrainedColumns(of: changes.updated)
        for (i, r) in changes.updated.enumerated() {
            if try rowChanged(r, changes.changedProperties(ofUpdated: i)) {
                try write(r, insert: false)
            } else {
                try requireRow(r)
            }
        }
        // Many records into an empty table: its indexes are built after the inserts (see deferIndexes).
        let deferred = try deferIndexes(inserting: changes.inserted)
        // By position, not `for r in`: each record is read where it is, not copied out (retaining its arrays).
        var i = changes.inserted.startIndex
        // The end of a run a batch refused: its records go in one by one, to the error of the record at fault,
        // without a batch tried again from each of them.
        var singlyUntil = i
        while i < changes.inserted.endIndex {
            if i >= singlyUntil {
                switch try insertBatch(of: changes.inserted, from: i) {
                case .inserted(let next):
                    i = next
                    continue
                case .refused(let end): singlyUntil = end
                case .notABatch: break
                }
            }
            do {
                try write(changes.inserted[i], insert: true)
            } catch {
                // With the indexes in place, an earlier record's repeated global ID would have failed first.
                if let duplicate = try duplicateGlobalIDError(in: changes.inserted[..<i], tables: deferred.tables) {
                    throw duplicate
                }
                throw error
            }
            i += 1
        }
        flushRunMaximum()
        try restoreIndexes(deferred, inserted: changes.inserted)
        for (i, r) in changes.updated.enumerated() {
            try writeRelationships(r, only: changes.changedProperties(ofUpdated: i)?.relationships)
        }
        if isBulkLoad {
            try addJoinRows(of: changes.inserted)
        } else {
            // Records whose relationships all live in their own row have nothing more to write.
            for i in changes.inserted.indices where try cachedEntityLayout(changes.inserted[i].entity).hasToMany {
                try writeRelationships(changes.inserted[i])
            }
        }
        try moveKeyAllocators()
        try appendHistory(changes.history)
    }

    /// Moves each hierarchy's key allocator past the largest key inserted into it.
    mutating func moveKeyAllocators() throws {
        flushRunMaximum()
        for (root, highest) in maxInserted {
            highestInserted[root] = max(highestInserted[root] ?? highest, highest)
            // A record at the very top of the key space leaves nothing to allocate: the next allocation says so.
            let next = highest == .max ? highest : highest + 1
            try connection.withStatement("UPDATE \(SQLiteLayout.quote(SQLiteLayout.keysTable)) SET next = ? WHERE root = ? AND next <= ?") { s in
                s.bind(1, next)
                try s.bind(2, root)
                s.bind(3, highest)
                try s.step()
            }
        }
        maxInserted = [:]
    }

    /// Whether an update changes the record's row: an attribute or a foreign key. Linking a record to others
    /// changes its to-many sides, which live in other rows and tables; rewriting the row for them was most of a
    /// save that links new records to existing ones. Records with uniqueness constraints are always rewritten
    /// (``clearConstrainedColumns(of:)`` may have cleared their columns).
    private mutating func rowChanged(_ r: Record, _ changed: ChangedProperties?) throws -> Bool {
        guard let changed else { return true }
        if !changed.attributes.isEmpty { return true }
        let el = try cachedEntityLayout(r.entity)
        if !el.entity.uniquenessConstraints.isEmpty { return true }
        for k in changed.relationships where k < el.relationships.count {
            if case .foreignKey = el.relationships[k] { return true }
        }
        return false
    }

    /// Throws ``StoreError/objectNotFound(_:)`` unless the record's row exists (an update whose row is not
    /// rewritten must still fail for a record deleted elsewhere, as a rewrite would).
    private mutating func requireRow(_ r: Record) throws {
        let el = try cachedEntityLayout(r.entity)
        let found = try connection.withStatement(el.existsSQL) { s in
            s.bind(1, r.primaryKey)
            return try s.step()
        }
        if !found { throw StoreError.objectNotFound(ObjectID(storeUUID: storeUUID, entity: r.entity, primaryKey: r.primaryKey)) }
    }

    func entityLayout(_ name: String) throws -> EntityLayout {
        guard let el = layout.entities[name] else { throw StoreError.unknownEntity(name) }
        return el
    }

    mutating func cachedEntityLayout(_ name: String) throws -> EntityLayout {
        if let last = lastLayout, last.entity.name == name { return last }
        let el = try entityLayout(name)
        lastLayout = el
        return el
    }

    mutating func noteInserted(_ key: Int64, root: String) {
        if let run = runMaximum, run.root == root {
            runMaximum = (root, max(run.key, key))
            return
        }
        flushRunMaximum()
        runMaximum = (root, key)
    }

    mutating func flushRunMaximum() {
        guard let run = runMaximum else { return }
        maxInserted[run.root] = max(maxInserted[run.root] ?? .min, run.key)
        runMaximum = nil
    }

    func table(_ el: EntityLayout) throws -> TableLayout {
        guard let t = layout.tables[el.root] else {
            throw StoreError.corruptStore(url, reason: "no table for the \(el.root) hierarchy")
        }
        return t
    }

    // MARK: Deletes

    private func delete(_ key: RecordKey) throws {
        let el = try entityLayout(key.entity)
        let t = try table(el)
        try connection.withStatement("DELETE FROM \(SQLiteLayout.quote(t.name)) WHERE _pk = ?") { s in
            s.bind(1, key.primaryKey)
            try s.step()
        }
        for storage in el.relationships {
            let js: JoinStorage
            switch storage {
            case .joinTable(let j): js = j
            case .inverseForeignKey(let ifk):
                // The record's order rows; its members keep their foreign keys (a dangling reference, as with
                // `noAction`, until they are saved).
                guard let table = ifk.orderTable else { continue }
                try connection.withStatement("DELETE FROM \(SQLiteLayout.quote(table)) WHERE src = ?") { s in
                    s.bind(1, key.primaryKey)
                    try s.step()
                }
                continue
            case .foreignKey: continue
            }
            let j = SQLiteLayout.quote(js.table)
            if js.isShared {
                // The other side still lists this record until it is saved without it (as with `noAction`);
                // rows whose both records are gone are removed.
                guard let other = layout.tables[js.otherRoot] else { continue }
                try connection.withStatement(
                    "DELETE FROM \(j) WHERE \(js.ownColumn) = ? AND \(js.otherColumn) NOT IN (SELECT _pk FROM \(SQLiteLayout.quote(other.name)))"
                ) { s in
                    s.bind(1, key.primaryKey)
                    try s.step()
                }
            } else {
                try connection.withStatement("DELETE FROM \(j) WHERE \(js.ownColumn) = ?") { s in
                    s.bind(1, key.primaryKey)
                    try s.step()
                }
            }
        }
    }

    // MARK: Rows

    private mutating func write(_ r: Record, insert: Bool) throws {
        let el = try cachedEntityLayout(r.entity)
        // Every parameter is bound for each row: the statement's bindings are not cleared between rows, so that
        // SQLite keeps the buffers of the text and blob values it copied and reuses them for the next row's.
        let url = self.url
        try connection.withStatement(insert ? el.insertSQL : el.updateSQL, clearingBindings: false) { s in
            try Self.bind(r, el, to: s, from: 1, insert: insert, url: url)
            let rc = sqlite3_step(s.handle)
            guard rc == SQLITE_DONE else { throw try constraintError(rc, r, el, table(el), insert: insert) }
        }
        if insert {
            noteInserted(r.primaryKey, root: el.root)
        } else if connection.changes == 0 {
            throw StoreError.objectNotFound(ObjectID(storeUUID: storeUUID, entity: r.entity, primaryKey: r.primaryKey))
        }
    }

    /// What ``insertBatch(of:from:)`` did.
    enum BatchOutcome {
        /// The records up to `next` went in.
        case inserted(next: Int)
        /// One of the records up to `end` would fail: nothing went in, and inserting them one by one gives the
        /// error for the record at fault, as without batches.
        case refused(end: Int)
        /// Too few records are left, or they are not all of one entity.
        case notABatch
    }

    /// Inserts the records from `start` with one statement (``EntityLayout/insertBatchSQL``) when the next
    /// ``EntityLayout/insertBatchRows`` of them are of one entity.
    private mutating func insertBatch(of records: [Record], from start: Int) throws -> BatchOutcome {
        let entity = records[start].entity
        guard let el = try? cachedEntityLayout(entity), el.insertBatchRows > 1 else { return .notABatch }
        let end = start + el.insertBatchRows
        guard end <= records.endIndex, records[start..<end].allSatisfy({ $0.entity == entity }) else { return .notABatch }
        // Nothing of `self` in the closure: a mutating method's closure would copy the writer for it.
        let (url, connection) = (self.url, self.connection)
        let inserted: Bool = try connection.withStatement(el.insertBatchSQL, clearingBindings: false) { s in
            do {
                for i in start..<end {
                    let first = Int32(i - start) * el.insertParameterCount + 1
                    try Self.bind(records[i], el, to: s, from: first, insert: true, url: url)
                }
            } catch {
                return false
            }
            return try Self.stepBatch(s, connection, "inserting \(records[start].key) and the \(end - start - 1) records after it")
        }
        guard inserted else { return .refused(end: end) }
        for i in start..<end { noteInserted(records[i].primaryKey, root: el.root) }
        return .inserted(next: end)
    }

    /// Runs a batch insert whose parameters are bound: `true` when its rows went in, `false` when one of them broke
    /// a constraint. That failure ends the statement alone, its rows undone; any other may have ended the
    /// transaction, and is thrown (`operation` describing the batch), so that no row is written after it.
    static func stepBatch(_ s: Statement, _ connection: SQLiteConnection, _ operation: @autoclosure () -> String) throws -> Bool {
        let rc = sqlite3_step(s.handle)
        if rc == SQLITE_DONE { return true }
        guard rc & 0xFF == SQLITE_CONSTRAINT else { throw connection.error(rc, operation()) }
        return false
    }

    /// Binds the parameters of `r`'s row in ``EntityLayout/insertSQL`` (`insert`) or ``EntityLayout/updateSQL``,
    /// the first at `first`; errors name `url`.
    private static func bind(_ r: Record, _ el: EntityLayout, to s: Statement, from first: Int32, insert: Bool, url: URL) throws {
        let entity = el.entity
        guard r.attributes.count == entity.attributes.count, r.relationships.count == entity.relationships.count else {
            throw StoreError.io(
                url, operation: "saving \(r.key)",
                reason: "the record has \(r.attributes.count) attribute and \(r.relationships.count) relationship values; \(entity.name) has \(entity.attributes.count) and \(entity.relationships.count)")
        }
        guard el.isComplete else {
            throw StoreError.corruptStore(url, reason: "the layout has no column for a property of \(entity.name)")
        }
        var i = first
        if insert {
            s.bind(i, r.primaryKey)
            i += 1
        }
        s.bind(i, el.code)
        var gid = r.globalID.uuid
        try withUnsafeBytes(of: &gid) { try s.bind(i + 1, bytes: $0) }
        i += 2
        // Each attribute's type from the layout, its name only for an error: no attribute description is
        // copied per record.
        let reads = el.attributeReads
        for k in reads.indices {
            try SQLiteValueCodec.bind(r.attributes[k], type: reads[k].type, to: s, at: i, entity: entity.name,
                                      property: entity.attributes[k].name)
            i += 1
        }
        for (k, storage) in el.relationships.enumerated() {
            guard case .foreignKey = storage else { continue }
            guard case .toOne(let key) = r.relationships[k] else {
                throw shapeError(url, r.key, entity.relationships[k].name, expected: "to-one")
            }
            if let key { s.bind(i, key) } else { s.bindNull(i) }
            i += 1
        }
        if !insert { s.bind(i, r.primaryKey) }
    }

    private func shapeError(_ r: Record, _ relationship: String, expected: String) -> StoreError {
        Self.shapeError(url, r.key, relationship, expected: expected)
    }

    static func shapeError(_ url: URL, _ key: RecordKey, _ relationship: String, expected: String) -> StoreError {
        .io(url, operation: "saving \(key)", reason: "'\(key.entity).\(relationship)' needs a \(expected) value")
    }

    /// Sets the uniqueness-constrained columns of updated records to NULL, so updates never collide with values the
    /// same save moves away.
    private func clearConstrainedColumns(of updated: [Record]) throws {
        var perTable: [String: Int] = [:]
        for r in updated {
            if let el = layout.entities[r.entity], !el.entity.uniquenessConstraints.isEmpty {
                perTable[el.root, default: 0] += 1
            }
        }
        guard perTable.values.contains(where: { $0 > 1 }) else { return }
        for r in updated {
            guard let el = layout.entities[r.entity], (perTable[el.root] ?? 0) > 1 else { continue }
            let t = try table(el)
            let names = Set(el.entity.uniquenessConstraints.joined())
            let cols = el.entity.attributes.enumerated().filter { names.contains($0.element.name) }
                .map { el.attributeColumns[$0.offset] }.filter { $0 >= 0 }
            guard !cols.isEmpty else { continue }
            let sets = cols.map { "\(SQLiteLayout.quote(t.columns[$0].name)) = NULL" }.joined(separator: ", ")
            try connection.withStatement("UPDATE \(SQLiteLayout.quote(t.name)) SET \(sets) WHERE _pk = ?") { s in
                s.bind(1, r.primaryKey)
                try s.step()
            }
        }
    }

    /// The typed error for a failed insert or update.
    func constraintError(_ rc: Int32, _ r: Record, _ el: EntityLayout, _ t: TableLayout, insert: Bool) throws
        -> StoreError
    {
        let message = String(cString: sqlite3_errmsg(connection.db))
        if rc == sqliteConstraintPrimaryKey || (rc == sqliteConstraintUnique && message.hasSuffix("._pk")) {
            return .io(url, operation: "insert", reason: "primary key \(r.primaryKey) of \(t.root) is already used")
        }
        if rc == sqliteConstraintUnique {
            if message.hasSuffix("._gid") {
                return .io(url, operation: insert ? "insert" : "update",
                           reason: "global ID \(r.globalID.uuidString) of \(r.key) is already used by another record")
            }
            return try uniquenessViolation(r, el, t)
        }
        return connection.error(rc, insert ? "inserting \(r.key)" : "updating \(r.key)")
    }

    /// Finds the constraint a record breaks and the record it collides with.
    private func uniquenessViolation(_ r: Record, _ el: EntityLayout, _ t: TableLayout) throws -> StoreError {
        let entity = el.entity
        var first: ([String], [StoreValue])?
        for constraint in entity.uniquenessConstraints {
            let indexes = constraint.compactMap { entity.attributeIndex($0) }
            guard indexes.count == constraint.count else { continue }
            let values = indexes.map { r.attributes[$0] }
            if first == nil { first = (constraint, values) }
            if values.contains(where: { $0.isNull || ($0.doubleValue?.isNaN ?? false) }) { continue }
            let conditions = indexes.map { "\(SQLiteLayout.quote(t.columns[el.attributeColumns[$0]].name)) = ?" }
            let sql = "SELECT _pk, _ent FROM \(SQLiteLayout.quote(t.name)) WHERE \(conditions.joined(separator: " AND ")) AND _pk <> ? LIMIT 1"
            let existing: ObjectID? = try connection.withStatement(sql) { s in
                for (n, ai) in indexes.enumerated() {
                    let a = entity.attributes[ai]
                    try SQLiteValueCodec.bind(r.attributes[ai], type: a.type, to: s, at: Int32(n + 1), entity: entity.name, property: a.name)
                }
                s.bind(Int32(indexes.count + 1), r.primaryKey)
                guard try s.step() else { return nil }
                let name = layout.entity(code: s.int64(1))?.name ?? entity.name
                return ObjectID(storeUUID: storeUUID, entity: name, primaryKey: s.int64(0))
            }
            if let existing {
                return .uniquenessViolation(entity: entity.name, attributes: constraint, values: values, existing: existing)
            }
        }
        return .uniquenessViolation(
            entity: entity.name, attributes: first?.0 ?? [], values: first?.1 ?? [], existing: nil)
    }

    // MARK: Relationships outside the row

    /// Writes the record's relationships kept outside its row — all of them, or the ones at the positions `only`.
    private func writeRelationships(_ r: Record, only: [Int]? = nil) throws {
        let el = try entityLayout(r.entity)
        for (k, storage) in el.relationships.enumerated() where only?.contains(k) ?? true {
            switch storage {
            case .foreignKey:
                continue
            case .inverseForeignKey(let ifk):
                guard case .toMany(let keys) = r.relationships[k] else {
                    throw shapeError(r, el.entity.relationships[k].name, expected: "to-many")
                }
                guard let order = ifk.orderJoin else { continue }
                try syncJoinRows(order, owner: r.primaryKey, keys: keys)
            case .joinTable(let js):
                guard case .toMany(let keys) = r.relationships[k] else {
                    throw shapeError(r, el.entity.relationships[k].name, expected: "to-many")
                }
                try syncJoinRows(js, owner: r.primaryKey, keys: keys)
            }
        }
    }

    /// A bulk load's join rows: for each run of records of one entity, each relationship kept in a join or order
    /// table is written with one statement, upserting (so the two sides of a many-to-many each add their
    /// position to the same row, and no row is read first — the join tables have no index but their key while
    /// a load runs). The unordered `dst` side of a many-to-many writes nothing: its links are only counted, to be
    /// checked against the other side's rows (``DeferredLinks``).
    private mutating func addJoinRows(of records: [Record]) throws {
        var start = 0
        while start < records.count {
            let el = try entityLayout(records[start].entity)
            var end = start + 1
            while end < records.count, records[end].entity == el.name { end += 1 }
            let run = records[start..<end]
            start = end
            let url = self.url
            try addJoinRows(el, run.indices, primaryKey: { records[$0].primaryKey }) { i, k in
                guard case .toMany(let keys) = records[i].relationships[k] else {
                    throw Self.shapeError(url, records[i].key, el.entity.relationships[k].name, expected: "to-many")
                }
                return keys
            }
        }
    }

    /// The join rows of records `indices` of entity `el`, whose primary keys and to-many values (`keys(record,
    /// relationship)`) the closures give.
    mutating func addJoinRows(
        _ el: EntityLayout, _ indices: Range<Int>, primaryKey: (Int) -> Int64, keys: (Int, Int) throws -> [Int64]
    ) throws {
        guard el.hasToMany else { return }
        for (k, storage) in el.relationships.enumerated() {
            let js: JoinStorage
            switch storage {
            case .foreignKey: continue
            case .inverseForeignKey(let ifk):
                guard let order = ifk.orderJoin else { continue }
                js = order
            case .joinTable(let j):
                if deferredLinks != nil, j.isShared, j.ownColumn == "dst", !el.entity.relationships[k].isOrdered {
                    // Counted into ``deferredLinks`` instead of written: the other side writes the same rows.
                    let rel = el.entity.relationships[k]
                    var links = deferredLinks?[j.table]
                        ?? DeferredLinks(table: j.table, entity: el.name, relationship: rel.name, otherSide: "\(rel.destination).\(rel.inverse ?? "?")")
                    for i in indices {
                        let owner = primaryKey(i)
                        for key in Self.firstOccurrences(try keys(i, k)) { links.add(src: key, dst: owner) }
                    }
                    deferredLinks?[j.table] = links
                    continue
                }
                js = j
            }
            try connection.withStatement(js.sql.upsertRow) { s in
                for i in indices {
                    try Self.addRows(s, js, owner: primaryKey(i), keys: Self.firstOccurrences(try keys(i, k)))
                }
            }
        }
    }

    /// Runs `s` — an insert or upsert of one record's rows on this side — once per key, the positions counting
    /// from 0 when the side is ordered. `keys` holds no key twice.
    static func addRows(_ s: Statement, _ js: JoinStorage, owner: Int64, keys: [Int64]) throws {
        let ordered = js.ownOrderColumn != nil
        for (position, key) in keys.enumerated() {
            s.bind(1, owner)
            s.bind(2, key)
            if ordered { s.bind(3, Int64(position)) }
            try s.step()
            sqlite3_reset(s.handle)
        }
    }

    /// `keys` without repeats, each at its first position (the list itself when it has none, as it usually has not).
    static func firstOccurrences(_ keys: [Int64]) -> [Int64] {
        guard keys.count > 1, !isDistinct(keys) else { return keys }
        var seen = Set<Int64>()
        return keys.filter { seen.insert($0).inserted }
    }

    /// Makes the join rows of one record's side equal to `keys` (duplicates keep their first position), writing
    /// only what differs.
    private func syncJoinRows(_ js: JoinStorage, owner: Int64, keys: [Int64]) throws {
        let ordered = js.ownOrderColumn != nil
        var current: [(key: Int64, position: Int64?)] = []
        try connection.withStatement(js.sql.selectRows) { s in
            s.bind(1, owner)
            while try s.step() {
                current.append((s.int64(0), !ordered || s.columnIsNull(1) ? nil : s.int64(1)))
            }
        }
        // Most saves write a new record, with no rows yet: everything is added, and no lookups are needed.
        if current.isEmpty {
            try connection.withStatement(js.sql.insertRow) {
                try Self.addRows($0, js, owner: owner, keys: Self.firstOccurrences(keys))
            }
            return
        }
        // The other side of a many-to-many, saved earlier, may have written exactly these rows already.
        if Self.rowsMatch(current, keys, ordered: ordered) { return }
        var wanted: [Int64: Int64] = [:]
        var list: [Int64] = []
        for key in keys where wanted[key] == nil {
            wanted[key] = Int64(list.count)
            list.append(key)
        }
        var existing: [Int64: Int64?] = [:]
        for row in current { existing.updateValue(row.position, forKey: row.key) }
        let removed = existing.keys.filter { wanted[$0] == nil }
        if !removed.isEmpty {
            try connection.withStatement(js.sql.deleteRow) { s in
                for key in removed {
                    s.bind(1, owner)
                    s.bind(2, key)
                    try s.step()
                    sqlite3_reset(s.handle)
                }
            }
        }
        let added = list.filter { existing[$0] == nil }
        if !added.isEmpty {
            try connection.withStatement(js.sql.insertRow) { s in
                for key in added {
                    s.bind(1, owner)
                    s.bind(2, key)
                    if ordered, let position = wanted[key] { s.bind(3, position) }
                    try s.step()
                    sqlite3_reset(s.handle)
                }
            }
        }
        guard let moveRow = js.sql.moveRow else { return }
        let moved = list.filter { key in
            guard let position = existing[key] else { return false }
            return position != wanted[key]
        }
        if !moved.isEmpty {
            try connection.withStatement(moveRow) { s in
                for key in moved {
                    s.bind(1, wanted[key] ?? 0)
                    s.bind(2, owner)
                    s.bind(3, key)
                    try s.step()
                    sqlite3_reset(s.handle)
                }
            }
        }
    }

    /// Whether the stored rows are exactly `keys` (at their positions, when ordered), for short lists.
    private static func rowsMatch(_ current: [(key: Int64, position: Int64?)], _ keys: [Int64], ordered: Bool) -> Bool {
        guard current.count == keys.count, keys.count <= 16 else { return false }
        // Rows are unique per (owner, other): if every key has its row, the lists are the same.
        for (i, key) in keys.enumerated() {
            guard let row = current.first(where: { $0.key == key }) else { return false }
            if ordered, row.position != Int64(i) { return false }
        }
        return isDistinct(keys)
    }

    /// Whether `keys` holds no key twice: a pairwise check for the short lists most records have, a set beyond.
    static func isDistinct(_ keys: [Int64]) -> Bool {
        if keys.count <= 16 {
            for i in keys.indices.dropFirst() where keys[..<i].contains(keys[i]) { return false }
            return true
        }
        return Set(keys).count == keys.count
    }

    // MARK: History

    // Built once: every save with history tracking runs both.
    private static let lastTokenSQL = "SELECT MAX(token) FROM \(SQLiteLayout.quote(SQLiteLayout.historyTable))"
    private static let appendHistorySQL = "INSERT INTO \(SQLiteLayout.quote(SQLiteLayout.historyTable)) (token, json) VALUES (?, ?)"

    private func appendHistory(_ transactions: [HistoryTransaction]) throws {
        guard !transactions.isEmpty else { return }
        var last = try connection.int64(Self.lastTokenSQL) ?? 0
        try connection.withStatement(Self.appendHistorySQL) { s in
            for var t in transactions {
                if t.token == HistoryTransaction.assignToken { t.token = last + 1 }
                guard t.token > last else {
                    throw StoreError.io(url, operation: "appending history", reason: "token \(t.token) is not after \(last)")
                }
                last = t.token
                s.bind(1, t.token)
                try s.bind(2, try t.encoded())
                try s.step()
                sqlite3_reset(s.handle)
            }
        }
    }
}
