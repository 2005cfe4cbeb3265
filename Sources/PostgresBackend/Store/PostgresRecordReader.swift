import Foundation
@_spi(BackendKit) import StoreAPI

/// Turns rows of a hierarchy table (selected with ``PGTable/selectList``) into records, filling their to-many
/// relationships from the join tables with one query per join table for the whole set.
struct PostgresRecordReader {
    let layout: PostgresLayout
    let connection: PostgresConnection
    let url: URL

    /// Runs `sql` (whose select list is `table`'s) and returns its records in row order, with each row's version.
    func records(_ sql: String, _ parameters: [String?], table: PGTable) throws -> [(Record, Int64)] {
        let rows = try connection.execute(sql, parameters)
        var out: [(Record, Int64)] = []
        out.reserveCapacity(rows.count)
        for i in 0..<rows.count {
            guard let pk = rows.int64(i, 0), let code = rows.int64(i, 1), let gidText = rows.text(i, 2),
                  let gid = UUID(uuidString: gidText), let version = rows.int64(i, 3)
            else { throw StoreError.corruptStore(url, reason: "a row of \(table.name) lacks its key, entity, global ID or version") }
            guard code >= 1, code <= Int64(layout.schema.entities.count),
                  let el = layout.entities[layout.schema.entities[Int(code - 1)].name], el.table.name == table.name
            else { throw StoreError.corruptStore(url, reason: "row \(pk) of \(table.name) has the unknown entity code \(code)") }
            var record = el.entity.newRecord(primaryKey: pk, globalID: gid)
            for (k, column) in el.attributeColumns.enumerated() {
                let a = el.entity.attributes[k]
                guard column >= 0 else { continue }
                record.attributes[k] = try PostgresValueCodec.read(
                    rows, i, PGTable.prefix + column, type: a.type, url: url, entity: el.entity.name, property: a.name)
            }
            for (k, storage) in el.relationships.enumerated() {
                switch storage {
                case .foreignKey(let column):
                    record.relationships[k] = .toOne(rows.int64(i, PGTable.prefix + column))
                case .join, .missing:
                    record.relationships[k] = .toMany([])
                }
            }
            out.append((record, version))
        }
        try fillToMany(&out)
        return out
    }

    /// Reads every to-many relationship of `records` from its join table.
    private func fillToMany(_ records: inout [(Record, Int64)]) throws {
        // Positions of the records per join table, with the relationship's index in each record.
        var byJoin: [String: (join: PGJoinTable, members: [(record: Int, relationship: Int)])] = [:]
        for (i, (r, _)) in records.enumerated() {
            guard let el = layout.entities[r.entity] else { continue }
            for (k, storage) in el.relationships.enumerated() {
                guard case .join(let j) = storage else { continue }
                byJoin[j.name, default: (j, [])].members.append((i, k))
            }
        }
        for (_, entry) in byJoin.sorted(by: { $0.key < $1.key }) {
            let keys = entry.members.map { records[$0.record].0.primaryKey }
            let rows = try connection.execute(
                "SELECT src, dst FROM \(PostgresLayout.quote(entry.join.name)) WHERE src = ANY($1::bigint[]) ORDER BY src, ord",
                [Self.array(keys)])
            var related: [Int64: [Int64]] = [:]
            for i in 0..<rows.count {
                guard let src = rows.int64(i, 0), let dst = rows.int64(i, 1) else { continue }
                related[src, default: []].append(dst)
            }
            for m in entry.members {
                records[m.record].0.relationships[m.relationship] = .toMany(related[records[m.record].0.primaryKey] ?? [])
            }
        }
    }

    /// The records of hierarchy `root` with `keys`.
    func records(withKeys keys: [Int64], root: String) throws -> [(Record, Int64)] {
        guard let table = layout.tables[root] else { throw StoreError.unknownEntity(root) }
        guard !keys.isEmpty else { return [] }
        return try records(
            "SELECT \(table.selectList) FROM \(PostgresLayout.quote(table.name)) AS t WHERE t._pk = ANY($1::bigint[]) ORDER BY t._pk",
            [Self.array(keys)], table: table)
    }

    /// A `bigint[]` parameter's text.
    static func array(_ keys: [Int64]) -> String {
        "{" + keys.map(String.init).joined(separator: ",") + "}"
    }
}
