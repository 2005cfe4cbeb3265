import CSQLite
import Foundation
import StoreAPI

/// Turns rows of entity tables into ``Record``s, both sides of every relationship included.
///
/// Rows are decoded from the select list ``TableLayout/selectList``; to-many values are then filled with
/// one query per relationship per batch of records (a key-range query when the batch's keys are dense, as a scan
/// page's are; `IN` lists otherwise), never one query per record.
struct SQLiteRecordReader {
    let layout: SQLiteLayout
    let url: URL
    let connection: SQLiteConnection

    // MARK: Queries returning records

    /// Runs `sql` (whose select list starts with `table.selectList`) and returns complete records.
    func records(_ sql: String, bindings: [SQLValue], table: TableLayout) throws -> [Record] {
        var result = try connection.withStatement(sql) { s in
            try s.bind(bindings)
            var rows: [Record] = []
            while try s.step() { rows.append(try decodeRow(s, table: table)) }
            return rows
        }
        try fillToMany(&result)
        return result
    }

    /// The records of hierarchy `root` with the given keys, in key order; missing keys are left out.
    func records(withKeys keys: [Int64], root: String) throws -> [Record] {
        guard let table = layout.tables[root], !keys.isEmpty else { return [] }
        // One key (a context faulting in one record) needs no set and no sort.
        let sorted = keys.count == 1 ? keys : Array(Set(keys)).sorted()
        var result: [Record] = []
        try forEachKeyBatch(sorted) { batch in
            let sql = table.recordsByKey.sql(batch)
            switch batch {
            case .range(let lo, let hi):
                let rows = try recordsWithoutToMany(sql, [.integer(lo), .integer(hi)], table: table)
                // Both in key order: keep the rows whose key is wanted by walking the keys alongside.
                var next = 0
                for row in rows {
                    while next < sorted.count && sorted[next] < row.primaryKey { next += 1 }
                    if next < sorted.count && sorted[next] == row.primaryKey { result.append(row) }
                }
            case .list(let params, _):
                result += try recordsWithoutToMany(sql, params, table: table)
            }
        }
        try fillToMany(&result)
        return result
    }

    private func recordsWithoutToMany(_ sql: String, _ bindings: [SQLValue], table: TableLayout) throws -> [Record] {
        try connection.withStatement(sql) { s in
            try s.bind(bindings)
            var rows: [Record] = []
            while try s.step() { rows.append(try decodeRow(s, table: table)) }
            return rows
        }
    }

    // MARK: Rows

    /// Decodes the current row; to-many relationships are left empty for ``fillToMany(_:)``.
    func decodeRow(_ s: Statement, table: TableLayout) throws -> Record {
        let (pk, el, gid) = try rowHeader(s, table: table)
        var attributes: [StoreValue] = []
        attributes.reserveCapacity(el.attributeReads.count)
        for (i, read) in el.attributeReads.enumerated() {
            let column = try attributeColumn(read, i, el)
            do {
                attributes.append(try SQLiteValueCodec.read(s, column: column, type: read.type))
            } catch {
                throw error.storeError(url: url, entity: el.name, property: el.entity.attributes[i].name, type: read.type)
            }
        }
        var relationships: [RelationshipValue] = []
        relationships.reserveCapacity(el.relationshipReads.count)
        for i in el.relationshipReads.indices {
            switch try link(s, i, el, pk) {
            case .toOne(let key): relationships.append(.toOne(key))
            case .toMany: relationships.append(.toMany([]))
            }
        }
        return Record(entity: el.name, primaryKey: pk, globalID: gid, attributes: attributes, relationships: relationships)
    }

    /// The current row's primary key, entity and global ID, checked.
    func rowHeader(_ s: Statement, table: TableLayout) throws -> (Int64, EntityLayout, UUID) {
        guard s.type(0) == SQLITE_INTEGER, s.type(1) == SQLITE_INTEGER else {
            throw StoreError.corruptStore(url, reason: "\(table.name) has a row without an integer key or entity code")
        }
        let pk = s.int64(0)
        let code = s.int64(1)
        guard let el = layout.entity(code: code), el.root == table.root else {
            throw StoreError.corruptStore(url, reason: "\(table.name) row \(pk) has the unknown entity code \(code)")
        }
        guard s.type(2) == SQLITE_BLOB, let gid = SQLiteValueCodec.uuid(s, 2) else {
            throw StoreError.corruptStore(url, reason: "\(table.name) row \(pk) has no 16-byte global ID")
        }
        return (pk, el, gid)
    }

    /// Attribute `i`'s column in the select list.
    func attributeColumn(_ read: ColumnRead, _ i: Int, _ el: EntityLayout) throws -> Int32 {
        guard read.column >= 0 else {
            throw StoreError.corruptStore(url, reason: "no column for \(el.name).\(el.entity.attributes[i].name)")
        }
        return read.column
    }

    /// What the current row holds of relationship `i`.
    enum RowLink {
        /// A to-one's foreign key (`nil` for none).
        case toOne(Int64?)
        /// A to-many, which is read from other rows.
        case toMany
    }

    /// Relationship `i` of the current row.
    func link(_ s: Statement, _ i: Int, _ el: EntityLayout, _ pk: Int64) throws -> RowLink {
        switch el.relationshipReads[i] {
        case .toMany:
            return .toMany
        case .missingColumn:
            throw StoreError.corruptStore(url, reason: "no column for \(el.name).\(el.entity.relationships[i].name)")
        case .foreignKey(let c):
            switch s.type(c) {
            case SQLITE_NULL: return .toOne(nil)
            case SQLITE_INTEGER: return .toOne(s.int64(c))
            default:
                throw StoreError.corruptStore(
                    url, reason: "\(el.name).\(el.entity.relationships[i].name) of row \(pk) is not a key")
            }
        }
    }

    // MARK: To-many relationships

    /// Fills every to-many relationship of `records`: one query per relationship per batch.
    func fillToMany(_ records: inout [Record]) throws {
        guard !records.isEmpty else { return }
        // For each storage (by its index in the layout), the records and relationship positions it fills. The
        // slots are looked up once per run of records of one entity: a scan's page is usually one entity.
        var members: [[(record: Int, relationship: Int)]] = Array(repeating: [], count: layout.toManyStorages.count)
        var slotsEntity: String?
        var slots: [(relationship: Int, storage: Int)] = []
        for (ri, r) in records.enumerated() {
            if r.entity != slotsEntity {
                slotsEntity = r.entity
                slots = layout.toManySlots[r.entity] ?? []
            }
            for slot in slots { members[slot.storage].append((ri, slot.relationship)) }
        }
        for (storage, fills) in members.enumerated() where !fills.isEmpty {
            // A scan page's records come in key order: their keys are then the sorted owners as they are.
            var owners = fills.map { records[$0.record].primaryKey }
            if !zip(owners, owners.dropFirst()).allSatisfy({ $0 < $1 }) { owners = Array(Set(owners)).sorted() }
            let related = try relatedKeys(layout.toManyStorages[storage], owners: owners)
            for m in fills {
                records[m.record].relationships[m.relationship] = .toMany(Array(related.keys(of: records[m.record].primaryKey)))
            }
        }
    }

    /// Owner key → related keys (in order for ordered relationships, by key otherwise).
    ///
    /// The queries order by owner only, which the owner column's index (or the join table's key) yields without a
    /// sort; each owner's few rows are then put in order here — by position, rows without one first, then by key,
    /// as `ORDER BY position, key` would. Letting SQLite sort the whole batch by all three cost about as much as
    /// reading the rows.
    func relatedKeys(_ storage: RelationshipStorage, owners: [Int64]) throws -> RelatedKeys {
        var collector = RelatedRowsCollector(owners: owners)
        try forEachKeyBatch(owners) { batch in
            let bindings: [SQLValue]
            switch batch {
            case .range(let lo, let hi):
                bindings = [.integer(lo), .integer(hi)]
                collector.begin(filtered: true)
            case .list(let params, _):
                bindings = params
                collector.begin(filtered: false)
            }
            switch storage {
            case .foreignKey:
                return
            case .joinTable(let js):
                try connection.withStatement(js.relatedRows.sql(batch)) { s in
                    try s.bind(bindings)
                    try collector.collect(s, positionColumn: js.ownOrderColumn == nil ? nil : 2)
                }
            case .inverseForeignKey(let ifk):
                // The positions of an ordered side are read from its order table by key range and matched to the
                // members here: joining the table in the query cost a B-tree search per member.
                let positions = try ifk.orderJoin.map { try orderPositions($0, batch, bindings) } ?? OrderPositions()
                try connection.withStatement(ifk.memberRows.sql(batch)) { s in
                    try s.bind(bindings)
                    try collector.collect(s, positions: positions)
                }
            }
        }
        return collector.finish()
    }

    /// The rows of an order table for one batch of owners, sorted by owner and member.
    private func orderPositions(_ order: JoinStorage, _ batch: KeyBatch, _ bindings: [SQLValue]) throws -> OrderPositions {
        var result = OrderPositions()
        try connection.withStatement(order.relatedRows.sql(batch)) { s in
            try s.bind(bindings)
            while try s.step() {
                guard !s.columnIsNull(2) else { continue }
                result.append(owner: s.int64(0), member: s.int64(1), position: s.int64(2))
            }
        }
        result.sortIfNeeded()
        return result
    }

    // MARK: Key batches

    enum KeyBatch {
        /// All keys between the bounds (inclusive); the caller keeps those it asked for.
        case range(Int64, Int64)
        /// Parameters for an `IN (…)` list of a fixed size (padded with NULL, so statements are reused).
        case list([SQLValue], size: Int)
    }

    /// Splits sorted, distinct keys into batches: one range when the keys are dense (a scan page), otherwise `IN`
    /// lists of 8, 64 or 512 parameters.
    func forEachKeyBatch(_ sorted: [Int64], _ body: (KeyBatch) throws -> Void) throws {
        guard let first = sorted.first, let last = sorted.last else { return }
        let span = last.subtractingReportingOverflow(first)
        if !span.overflow, span.partialValue < Int64(sorted.count) * 4 + 256 {
            try body(.range(first, last))
            return
        }
        var i = 0
        while i < sorted.count {
            let remaining = sorted.count - i
            let size = remaining <= 8 ? 8 : (remaining <= 64 ? 64 : 512)
            let n = min(size, remaining)
            var params: [SQLValue] = sorted[i..<(i + n)].map { .integer($0) }
            params += repeatElement(.null, count: size - n)
            try body(.list(params, size: size))
            i += n
        }
    }
}

/// Reads `(owner, related key[, position])` rows into ``RelatedKeys``, one owner's rows at a time.
///
/// A value type whose row loops are methods, so a batch's rows are read under one access to it rather than one
/// per row (a closure's captured variables are checked on every access).
private struct RelatedRowsCollector {
    let owners: [Int64]
    private var result = RelatedKeys()
    private var group = RelatedGroup()
    /// Whether a batch's rows may belong to owners not asked for (a key range), and the walk along `owners`.
    private var filtered = false
    private var next = 0

    init(owners: [Int64]) { self.owners = owners }

    mutating func begin(filtered: Bool) {
        self.filtered = filtered
        next = 0
    }

    /// Rows whose position, if any, is column `positionColumn`.
    mutating func collect(_ s: Statement, positionColumn: Int32?) throws {
        while try s.step() {
            let position: Int64? = if let c = positionColumn, !s.columnIsNull(c) { s.int64(c) } else { nil }
            add(owner: s.int64(0), key: s.int64(1), position: position)
        }
        group.flush(into: &result)
    }

    /// Rows whose positions are looked up in `positions`.
    mutating func collect(_ s: Statement, positions: OrderPositions) throws {
        var cursor = 0
        while try s.step() {
            let owner = s.int64(0), key = s.int64(1)
            add(owner: owner, key: key, position: positions.position(owner: owner, member: key, from: &cursor))
        }
        group.flush(into: &result)
    }

    private mutating func add(owner: Int64, key: Int64, position: Int64?) {
        if owner != group.owner {
            group.flush(into: &result)
            group.owner = owner
            if filtered {
                // Rows come in owner order, so whether an owner of a key range is one of `owners` is found by
                // walking the sorted owners alongside.
                while next < owners.count && owners[next] < owner { next += 1 }
                group.isWanted = next < owners.count && owners[next] == owner
            } else {
                group.isWanted = true
            }
        }
        guard group.isWanted else { return }
        group.rows.append(RelatedGroup.Row(hasPosition: position != nil, position: position ?? 0, key: key))
    }

    mutating func finish() -> RelatedKeys {
        result.finish()
        return result
    }
}

/// The positions an order table holds for one batch of owners, sorted by `(owner, member)`.
private struct OrderPositions {
    private var owners: [Int64] = []
    private var members: [Int64] = []
    private var positions: [Int64] = []

    mutating func append(owner: Int64, member: Int64, position: Int64) {
        owners.append(owner)
        members.append(member)
        positions.append(position)
    }

    /// The table's key order is `(src, dst)`, which the query's `ORDER BY src` yields; sorted here only if not.
    mutating func sortIfNeeded() {
        let n = owners.count
        guard n > 1, !(1..<n).allSatisfy({ precedes($0 - 1, $0) }) else { return }
        let order = (0..<n).sorted { precedes($0, $1) }
        owners = order.map { owners[$0] }
        members = order.map { members[$0] }
        positions = order.map { positions[$0] }
    }

    private func precedes(_ i: Int, _ j: Int) -> Bool {
        owners[i] != owners[j] ? owners[i] < owners[j] : members[i] < members[j]
    }

    /// The position of `member` in `owner`'s relationship, or `nil` when the table has none. Members asked in
    /// `(owner, member)` order are found at `cursor`, which moves past them; others by binary search.
    func position(owner: Int64, member: Int64, from cursor: inout Int) -> Int64? {
        if cursor < owners.count, owners[cursor] == owner, members[cursor] == member {
            cursor += 1
            return positions[cursor - 1]
        }
        var lo = 0, hi = owners.count
        while lo < hi {
            let mid = (lo + hi) / 2
            if owners[mid] < owner || (owners[mid] == owner && members[mid] < member) { lo = mid + 1 } else { hi = mid }
        }
        guard lo < owners.count, owners[lo] == owner, members[lo] == member else { return nil }
        cursor = lo + 1
        return positions[lo]
    }
}

/// The related rows of one owner while they are read: put in order and stored when the next owner's rows begin.
struct RelatedGroup {
    struct Row {
        /// `false` for a row without a position, which SQLite orders before every position.
        var hasPosition: Bool
        var position: Int64
        var key: Int64

        static func < (a: Row, b: Row) -> Bool {
            if a.hasPosition != b.hasPosition { return !a.hasPosition }
            if a.hasPosition, a.position != b.position { return a.position < b.position }
            return a.key < b.key
        }
    }

    var owner: Int64?
    var isWanted = true
    /// Reused from owner to owner.
    var rows: [Row] = []

    mutating func flush(into result: inout RelatedKeys) {
        defer { rows.removeAll(keepingCapacity: true) }
        guard let owner, isWanted, !rows.isEmpty else { return }
        if !zip(rows, rows.dropFirst()).allSatisfy({ !($1 < $0) }) { rows.sort(by: <) }
        result.add(owner, rows)
    }
}

/// Owners and their related keys, in ascending owner order: the queries return owners in that order, so the
/// lists are appended as they come and found by binary search (a dictionary hashed every owner twice). The keys
/// of every owner share one array (an array per owner cost an allocation and a release each).
struct RelatedKeys {
    private var owners: [Int64] = []
    /// Where each owner's keys end in `keys`.
    private var ends: [Int] = []
    private var keys: [Int64] = []
    private var inOrder = true

    mutating func add(_ owner: Int64, _ rows: [RelatedGroup.Row]) {
        if let last = owners.last, owner <= last {
            if owner == last {
                for row in rows { keys.append(row.key) }
                ends[ends.count - 1] = keys.count
                return
            }
            inOrder = false
        }
        owners.append(owner)
        for row in rows { keys.append(row.key) }
        ends.append(keys.count)
    }

    /// Puts owners in order if some batch came out of order (one owner's lists joined in arrival order).
    mutating func finish() {
        guard !inOrder else { return }
        var merged: [Int64: [Int64]] = [:]
        for (i, owner) in owners.enumerated() { merged[owner, default: []] += keys[(i == 0 ? 0 : ends[i - 1])..<ends[i]] }
        owners = merged.keys.sorted()
        keys = []
        ends = []
        for owner in owners {
            keys += merged[owner] ?? []
            ends.append(keys.count)
        }
        inOrder = true
    }

    func keys(of owner: Int64) -> ArraySlice<Int64> {
        var lo = 0, hi = owners.count
        while lo < hi {
            let mid = (lo + hi) / 2
            if owners[mid] < owner { lo = mid + 1 } else { hi = mid }
        }
        guard lo < owners.count, owners[lo] == owner else { return [] }
        return keys[(lo == 0 ? 0 : ends[lo - 1])..<ends[lo]]
    }
}
