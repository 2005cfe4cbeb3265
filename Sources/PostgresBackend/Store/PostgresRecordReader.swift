import Foundation
@_spi(BackendKit) import StoreAPI

/// Turns rows of a hierarchy table (selected with ``PGTable/selectList``) into records, filling their to-many
/// relationships from the join tables with one query per join table for the whole set.
struct PostgresRecordReader {
    let layout: PostgresLayout
    let connection: PostgresConnection
    let url: URL

    /// Runs `sql` (whose select list is `table`'s) and returns its records in row order, with each row's version.
    /// The rows come in binary form (see ``PostgresBinaryCodec``).
    func records(_ sql: String, _ parameters: [String?], table: PGTable) throws -> [(Record, Int64)] {
        let rows = try connection.executeBinary(sql, parameters)
        try PostgresBinaryCodec.check(rows, table: table, url: url)
        // What reading a row of each entity this table holds needs, by entity code, worked out once per read.
        let schemaEntities = layout.schema.entities
        let byCode: [RowReading?] = schemaEntities.indices.map { i in
            layout.entities[schemaEntities[i].name].flatMap { $0.table.name == table.name ? RowReading($0) : nil }
        }
        var out: [(Record, Int64)] = []
        out.reserveCapacity(rows.count)
        for i in 0..<rows.count {
            guard let pk = rows.binary(i, 0, { PostgresBinaryCodec.integer($0, as: Int64.self) }) ?? nil,
                  let code = rows.binary(i, 1, { PostgresBinaryCodec.integer($0, as: Int32.self) }) ?? nil,
                  let gid = rows.binary(i, 2, { PostgresBinaryCodec.uuid($0) }) ?? nil,
                  let version = rows.binary(i, 3, { PostgresBinaryCodec.integer($0, as: Int64.self) }) ?? nil
            else { throw StoreError.corruptStore(url, reason: "a row of \(table.name) lacks its key, entity, global ID or version") }
            guard code >= 1, Int(code) <= byCode.count, let reading = byCode[Int(code) - 1] else {
                throw StoreError.corruptStore(url, reason: "row \(pk) of \(table.name) has the unknown entity code \(code)")
            }
            var record = reading.entity.newRecord(primaryKey: pk, globalID: gid)
            for k in reading.types.indices {
                let column = reading.columns[k]
                guard column >= 0 else { continue }
                guard let value = PostgresBinaryCodec.value(rows, i, PGTable.prefix + column, type: reading.types[k]) else {
                    let a = reading.entity.attributes[k]
                    throw StoreError.corruptStore(
                        url, reason: "'\(reading.entity.name).\(a.name)' (\(a.type.rawValue)) holds bytes that are not one")
                }
                record.attributes[k] = value
            }
            for (k, storage) in reading.relationships.enumerated() {
                switch storage {
                case .foreignKey(let column):
                    record.relationships[k] = .toOne(
                        rows.binary(i, PGTable.prefix + column, { PostgresBinaryCodec.integer($0, as: Int64.self) }) ?? nil)
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
            let related = try relatedKeys(entry.join, owners: entry.members.map { records[$0.record].0.primaryKey })
            for m in entry.members {
                records[m.record].0.relationships[m.relationship] = .toMany(related[records[m.record].0.primaryKey] ?? [])
            }
        }
    }

    /// The keys each of `owners` links to through `join`, in the relationship's order.
    func relatedKeys(_ join: PGJoinTable, owners: [Int64]) throws -> [Int64: [Int64]] {
        let rows = try connection.executeBinary(
            "SELECT src, dst FROM \(PostgresLayout.quote(join.name)) WHERE src = ANY($1::bigint[]) ORDER BY src, ord",
            [Self.array(owners)])
        var related: [Int64: [Int64]] = [:]
        for i in 0..<rows.count {
            guard let src = rows.binary(i, 0, { PostgresBinaryCodec.integer($0, as: Int64.self) }) ?? nil,
                  let dst = rows.binary(i, 1, { PostgresBinaryCodec.integer($0, as: Int64.self) }) ?? nil
            else { throw StoreError.corruptStore(url, reason: "a row of \(join.name) lacks its keys") }
            related[src, default: []].append(dst)
        }
        return related
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

/// One entity's row layout as a record read walks it, held by reference so that no row copies it.
private final class RowReading {
    let entity: Entity
    let columns: [Int]
    let types: [AttributeType]
    let relationships: [PGRelationship]

    init(_ el: PGEntity) {
        entity = el.entity
        columns = el.attributeColumns
        types = el.entity.attributes.map(\.type)
        relationships = el.relationships
    }
}
