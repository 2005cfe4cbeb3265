import CSQLite
import Foundation
import StoreAPI

/// Turns rows of entity tables into ``Record``s, both sides of every relationship included.
///
/// Rows are decoded from the select list ``TableLayout/selectList``; to-many values are then filled with
/// one query per relationship per batch of records (a key-range query when the batch's keys are dense, as a scan
/// page's are; `IN` lists otherwise), never one query per record.
struct RecordReader {
    let layout: StoreLayout
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
        guard s.type(0) == SQLITE_INTEGER, s.type(1) == SQLITE_INTEGER else {
            throw StoreError.corruptStore(url, reason: "\(table.name) has a row without an integer key or entity code")
        }
        let pk = s.int64(0)
        let code = s.int64(1)
        guard let el = layout.entitiesByCode[code], el.root == table.root else {
            throw StoreError.corruptStore(url, reason: "\(table.name) row \(pk) has the unknown entity code \(code)")
        }
        guard s.type(2) == SQLITE_BLOB, let gid = ValueCoding.uuid(s, 2) else {
            throw StoreError.corruptStore(url, reason: "\(table.name) row \(pk) has no 16-byte global ID")
        }
        let entity = el.entity
        var attributes: [StoreValue] = []
        attributes.reserveCapacity(entity.attributes.count)
        for (i, a) in entity.attributes.enumerated() {
            let col = el.attributeColumns[i]
            guard col >= 0 else {
                throw StoreError.corruptStore(url, reason: "no column for \(entity.name).\(a.name)")
            }
            do {
                attributes.append(try ValueCoding.read(s, column: Int32(3 + col), type: a.type))
            } catch {
                throw error.storeError(url: url, entity: entity.name, property: a.name, type: a.type)
            }
        }
        var relationships: [RelationshipValue] = []
        relationships.reserveCapacity(el.relationships.count)
        for (i, storage) in el.relationships.enumerated() {
            switch storage {
            case .foreignKey(let col):
                let c = Int32(3 + col)
                switch s.type(c) {
                case SQLITE_NULL: relationships.append(.toOne(nil))
                case SQLITE_INTEGER: relationships.append(.toOne(s.int64(c)))
                default:
                    throw StoreError.corruptStore(
                        url, reason: "\(entity.name).\(entity.relationships[i].name) of row \(pk) is not a key")
                }
            case .inverseForeignKey, .joinTable:
                relationships.append(.toMany([]))
            }
        }
        return Record(entity: el.name, primaryKey: pk, globalID: gid, attributes: attributes, relationships: relationships)
    }

    // MARK: To-many relationships

    /// Fills every to-many relationship of `records`: one query per relationship per batch.
    func fillToMany(_ records: inout [Record]) throws {
        guard !records.isEmpty else { return }
        // Relationship storages are hashed once per entity, not once per record: a page of a scan is usually one
        // entity, so the slots of the previous record's entity are reused.
        var groups: [(storage: RelationshipStorage, members: [(record: Int, relationship: Int)])] = []
        var slotsEntity: String?
        var slots: [(relationship: Int, group: Int)] = []
        for (ri, r) in records.enumerated() {
            if r.entity != slotsEntity {
                slotsEntity = r.entity
                slots.removeAll(keepingCapacity: true)
                guard let el = layout.entities[r.entity] else { continue }
                for (k, storage) in el.relationships.enumerated() {
                    if case .foreignKey = storage { continue }
                    // A linear search: a page holds few relationships, and hashing a storage hashed its names.
                    let g: Int
                    if let existing = groups.firstIndex(where: { $0.storage == storage }) {
                        g = existing
                    } else {
                        g = groups.count
                        groups.append((storage, []))
                    }
                    slots.append((k, g))
                }
            }
            for slot in slots { groups[slot.group].members.append((ri, slot.relationship)) }
        }
        for (storage, members) in groups {
            // A scan page's records come in key order: their keys are then the sorted owners as they are.
            var owners = members.map { records[$0.record].primaryKey }
            if !zip(owners, owners.dropFirst()).allSatisfy({ $0 < $1 }) { owners = Array(Set(owners)).sorted() }
            let related = try relatedKeys(storage, owners: owners)
            for m in members {
                records[m.record].relationships[m.relationship] = .toMany(related.keys(of: records[m.record].primaryKey))
            }
        }
    }

    /// Owner key → related keys (in order for ordered relationships, by key otherwise).
    ///
    /// The query orders by owner only, which the owner column's index (or the join table's key) yields without a
    /// sort; each owner's few rows are then put in order here — by position, rows without one first, then by key,
    /// as `ORDER BY position, key` would. Letting SQLite sort the whole batch by all three cost about as much as
    /// reading the rows.
    private func relatedKeys(_ storage: RelationshipStorage, owners: [Int64]) throws -> RelatedKeys {
        let query: KeyedQuery
        switch storage {
        case .foreignKey:
            return RelatedKeys()
        case .inverseForeignKey(let ifk):
            query = ifk.relatedRows
        case .joinTable(let js):
            query = js.relatedRows
        }
        var result = RelatedKeys()
        var group = RelatedGroup()
        func collect(_ sql: String, _ bindings: [SQLValue], filtered: Bool) throws {
            // Rows come in owner order, so whether an owner of a key range is one of `owners` is found by walking
            // the sorted owners alongside.
            var next = 0
            try connection.withStatement(sql) { s in
                try s.bind(bindings)
                let hasPosition = sqlite3_column_count(s.handle) > 2
                while try s.step() {
                    let owner = s.int64(0)
                    if owner != group.owner {
                        group.flush(into: &result)
                        group.owner = owner
                        if filtered {
                            while next < owners.count && owners[next] < owner { next += 1 }
                            group.isWanted = next < owners.count && owners[next] == owner
                        } else {
                            group.isWanted = true
                        }
                    }
                    guard group.isWanted else { continue }
                    group.rows.append(RelatedGroup.Row(
                        hasPosition: hasPosition && !s.columnIsNull(2), position: hasPosition ? s.int64(2) : 0, key: s.int64(1)))
                }
                group.flush(into: &result)
            }
        }
        try forEachKeyBatch(owners) { batch in
            switch batch {
            case .range(let lo, let hi):
                try collect(query.sql(batch), [.integer(lo), .integer(hi)], filtered: true)
            case .list(let params, _):
                try collect(query.sql(batch), params, filtered: false)
            }
        }
        result.finish()
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

/// The related rows of one owner while they are read: put in order and stored when the next owner's rows begin.
private struct RelatedGroup {
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
        result.add(owner, rows.map(\.key))
    }
}

/// Owners and their related keys, in ascending owner order: the queries return owners in that order, so the
/// lists are appended as they come and found by binary search (a dictionary hashed every owner twice).
private struct RelatedKeys {
    private var owners: [Int64] = []
    private var lists: [[Int64]] = []
    private var inOrder = true

    mutating func add(_ owner: Int64, _ keys: [Int64]) {
        if let last = owners.last, owner <= last {
            if owner == last {
                lists[lists.count - 1] += keys
                return
            }
            inOrder = false
        }
        owners.append(owner)
        lists.append(keys)
    }

    /// Puts owners in order if some batch came out of order (one owner's lists joined in arrival order).
    mutating func finish() {
        guard !inOrder else { return }
        var merged: [Int64: [Int64]] = [:]
        for (owner, keys) in zip(owners, lists) { merged[owner, default: []] += keys }
        owners = merged.keys.sorted()
        lists = owners.map { merged[$0] ?? [] }
        inOrder = true
    }

    func keys(of owner: Int64) -> [Int64] {
        var lo = 0, hi = owners.count
        while lo < hi {
            let mid = (lo + hi) / 2
            if owners[mid] < owner { lo = mid + 1 } else { hi = mid }
        }
        return lo < owners.count && owners[lo] == owner ? lists[lo] : []
    }
}
