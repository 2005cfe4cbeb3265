import CSQLite
import Foundation
@_spi(BackendKit) import StoreAPI

/// Reads records from a Core Data store's tables on demand, a page at a time: the rows a query selects, then one
/// query per relationship for the whole page (`WHERE foreignKey IN (…)`, or the join table's), never one per record.
struct CoreDataRowReader {
    let plan: CoreDataReadPlan
    /// Converts stored values (Core Data's encodings, external data) to the framework's.
    let values: CoreDataRecordReader
    let connection: CoreDataConnection
    let storeUUID: UUID
    /// Whether the store has kept global identifiers to look up (``CoreDataGlobalIDTable``).
    var keepsGlobalIDs = false

    var url: URL { connection.url }

    /// The records of `table` that `condition` (SQL over the table's columns, with `bindings`) selects, in key
    /// order unless `orderBy` says otherwise; `suffix` follows the `ORDER BY` (a `LIMIT`). Only rows of the entities
    /// in `allowed` are expected: another `Z_ENT` is a corrupt store.
    func records(
        in table: CoreDataReadPlan.Table, where condition: String, _ bindings: [SQLiteValue], orderBy: String = "Z_PK",
        suffix: String = ""
    ) throws -> [Record] {
        let sql = "SELECT \(table.selectList) FROM \(CoreDataSQL.quoted(table.name)) WHERE \(condition) ORDER BY \(orderBy)\(suffix)"
        guard let pkAt = table.index["Z_PK"], let entAt = table.index["Z_ENT"] else {
            throw StoreError.corruptStore(url, reason: "table \(table.name) has no Z_PK or Z_ENT column")
        }
        var records: [Record] = []
        var plans: [CoreDataReadPlan.EntityPlan] = []
        // To-one keys held in the rows, by record position and relationship position.
        var toOne: [[Int64?]] = []
        try connection.query(sql, bindings) { s in
            guard sqlite3_column_type(s, Int32(pkAt)) == SQLITE_INTEGER else {
                throw StoreError.corruptStore(url, reason: "table \(table.name) has a row without an integer Z_PK")
            }
            let pk = sqlite3_column_int64(s, Int32(pkAt))
            let ent = SQLiteValue.column(of: s, Int32(entAt))
            guard let number = ent.int, let ep = plan.byNumber[number], ep.table.name == table.name else {
                throw StoreError.corruptStore(url, reason: "\(table.name) row Z_PK \(pk): Z_ENT \(ent) is no entity "
                    + "of the table's hierarchy in the model")
            }
            var attributes: [StoreValue] = []
            attributes.reserveCapacity(ep.attributeColumns.count)
            // By index: iterating the descriptions themselves copies each one (strings, dictionaries) per row.
            let descriptions = ep.entity.attributes
            for i in descriptions.indices {
                guard let column = ep.attributeColumns[i] else {
                    throw StoreError.corruptStore(
                        url, reason: "table \(table.name) has no column for \(ep.entity.name).\(descriptions[i].name)")
                }
                attributes.append(try values.value(
                    SQLiteValue.column(of: s, Int32(column.index)), descriptions[i], table: table.name, pk: pk))
            }
            var keys: [Int64?] = []
            for link in ep.links {
                switch link {
                case .column(let at):
                    keys.append(sqlite3_column_type(s, Int32(at)) == SQLITE_NULL ? nil : SQLiteValue.column(of: s, Int32(at)).int)
                case .broken(let reason):
                    throw StoreError.corruptStore(url, reason: reason)
                default:
                    keys.append(nil)
                }
            }
            toOne.append(keys)
            plans.append(ep)
            records.append(Record(
                entity: ep.entity.name, primaryKey: pk,
                globalID: ep.globalID.make(pk),
                attributes: attributes, relationships: []))
        }
        guard !records.isEmpty else { return records }
        if keepsGlobalIDs, let root = plans.first?.entity.rootName {
            try CoreDataGlobalIDTable.apply(connection, root: root, to: &records)
        }
        // Relationships: one lookup per distinct link for every record of the page that has it.
        var owners = [[Int64]](repeating: [], count: plan.links.count)
        for (r, ep) in zip(records, plans) {
            for (j, link) in ep.links.enumerated() {
                switch link {
                case .referencing, .join: owners[ep.linkIDs[j]].append(r.primaryKey)
                default: break
                }
            }
        }
        var related = [[Int64: [Int64]]](repeating: [:], count: plan.links.count)
        for (id, keys) in owners.enumerated() where !keys.isEmpty { related[id] = try self.related(plan.links[id], owners: keys) }
        for i in records.indices {
            let ep = plans[i]
            var relationships: [RelationshipValue] = []
            relationships.reserveCapacity(ep.links.count)
            for (j, link) in ep.links.enumerated() {
                switch link {
                case .column:
                    relationships.append(.toOne(toOne[i][j]))
                case .referencing(_, _, _, let first):
                    let keys = related[ep.linkIDs[j]][records[i].primaryKey] ?? []
                    relationships.append(first ? .toOne(keys.first) : .toMany(keys))
                case .join:
                    relationships.append(.toMany(related[ep.linkIDs[j]][records[i].primaryKey] ?? []))
                case .empty(let toMany):
                    relationships.append(toMany ? .toMany([]) : .toOne(nil))
                case .broken(let reason):
                    throw StoreError.corruptStore(url, reason: reason)
                }
            }
            records[i].relationships = relationships
        }
        return records
    }

    /// The related keys of each owner, in relationship order.
    func related(_ link: CoreDataReadPlan.Link, owners: [Int64]) throws -> [Int64: [Int64]] {
        var groups: [Int64: [Int64]] = [:]
        for chunk in CoreDataSQL.chunks(owners) {
            guard let sql = Self.relatedSQL(link, keys: chunk.count) else { return [:] }
            try connection.query(sql, chunk) { s in
                guard sqlite3_column_type(s, 0) == SQLITE_INTEGER, sqlite3_column_type(s, 1) == SQLITE_INTEGER else { return }
                groups[sqlite3_column_int64(s, 0), default: []].append(sqlite3_column_int64(s, 1))
            }
        }
        return groups
    }

    /// The query of `link`'s (owner, related key) pairs for `keys` owner keys, ordered by owner and then as the
    /// relationship orders them; `nil` for a link without rows to read.
    /// With `keys` 0, the owners are those from the first to the second bound key.
    static func relatedSQL(_ link: CoreDataReadPlan.Link, keys: Int) -> String? {
        let q = CoreDataSQL.quoted
        func owners(_ column: String) -> String {
            keys == 0 ? "\(q(column)) BETWEEN ? AND ?" : "\(q(column)) IN (\(CoreDataSQL.placeholders(keys)))"
        }
        switch link {
        case .referencing(let table, let fk, let order, _):
            let ordering = order.map { "ifnull(\(q($0)), 0), " } ?? ""
            return "SELECT \(q(fk)), Z_PK FROM \(q(table)) WHERE \(owners(fk)) ORDER BY \(q(fk)), \(ordering)Z_PK"
        case .join(let table, let source, let target, let order):
            let ordering = order.map { "\(q($0)), " } ?? ""
            return "SELECT \(q(source)), \(q(target)) FROM \(q(table)) WHERE \(owners(source)) "
                + "ORDER BY \(q(source)), \(ordering)\(q(target))"
        default:
            return nil
        }
    }

    // MARK: Entry points

    /// Up to `limit` records of exactly `entity` after `primaryKey`, in key order.
    func scan(_ ep: CoreDataReadPlan.EntityPlan, after primaryKey: Int64?, limit: Int) throws -> [Record] {
        guard limit > 0 else { return [] }
        return try records(in: ep.table, where: "Z_ENT = ? AND Z_PK > ?",
                           [.integer(ep.number), .integer(primaryKey ?? .min)], suffix: " LIMIT \(limit)")
    }

    /// The keys ``scan(_:after:limit:)`` would return.
    func scanKeys(_ ep: CoreDataReadPlan.EntityPlan, after primaryKey: Int64?, limit: Int) throws -> [Int64] {
        guard limit > 0 else { return [] }
        var keys: [Int64] = []
        try connection.query(
            "SELECT Z_PK FROM \(CoreDataSQL.quoted(ep.table.name)) WHERE Z_ENT = ? AND Z_PK > ? ORDER BY Z_PK LIMIT \(limit)",
            [.integer(ep.number), .integer(primaryKey ?? .min)]
        ) { s in keys.append(sqlite3_column_int64(s, 0)) }
        return keys
    }

    /// The records of `table` with the given keys.
    func records(in table: CoreDataReadPlan.Table, keys: [Int64]) throws -> [Record] {
        var out: [Record] = []
        for chunk in CoreDataSQL.chunks(Array(Set(keys)).sorted()) {
            out += try records(in: table, where: "Z_PK IN (\(CoreDataSQL.placeholders(chunk.count)))", chunk)
        }
        return out
    }
}
