import Foundation
@_spi(BackendKit) import StoreAPI

extension PostgresRecordReader {
    /// Runs `sql` (whose select list is `table`'s, rows of exactly `entity`'s entity in ascending key order) into a
    /// page: the same records, checks and errors as ``records(_:_:table:)``, with no value made into a Swift object —
    /// the binary result's bytes go into the page as they are.
    func page(_ sql: String, _ parameters: [String?], table: PGTable, entity el: PGEntity, capacity: Int) throws -> RecordPage {
        let rows = try connection.executeBinary(sql, parameters)
        try PostgresBinaryCodec.check(rows, table: table, url: url)
        var page = RecordPage(entity: el.entity.name, capacity: min(capacity, rows.count),
                              bytesPerRecord: 16 * el.attributeColumns.count)
        let attributes = el.entity.attributes
        for i in 0..<rows.count {
            guard let pk = rows.binary(i, 0, { PostgresBinaryCodec.integer($0, as: Int64.self) }) ?? nil,
                  let code = rows.binary(i, 1, { PostgresBinaryCodec.integer($0, as: Int32.self) }) ?? nil,
                  let gid = rows.binary(i, 2, { PostgresBinaryCodec.uuid($0) }) ?? nil,
                  rows.binary(i, 3, { PostgresBinaryCodec.integer($0, as: Int64.self) }) != nil
            else { throw StoreError.corruptStore(url, reason: "a row of \(table.name) lacks its key, entity, global ID or version") }
            guard Int64(code) == el.code else {
                throw StoreError.corruptStore(url, reason: "row \(pk) of \(table.name) has entity code \(code), not \(el.entity.name)'s")
            }
            page.beginRecord(primaryKey: pk, globalID: gid)
            for (k, column) in el.attributeColumns.enumerated() {
                guard column >= 0 else {
                    // An attribute without a column (a layout that does not match its schema) reads as a record
                    // read leaves it: at its default.
                    page.append(attributes[k].defaultValue ?? .null)
                    continue
                }
                let type = attributes[k].type
                let fits = rows.binary(i, PGTable.prefix + column) { PostgresBinaryCodec.append($0, type: type, to: &page) }
                switch fits {
                case nil: page.appendNull()
                case true?: break
                case false?:
                    throw StoreError.corruptStore(
                        url, reason: "'\(el.entity.name).\(attributes[k].name)' (\(type.rawValue)) holds bytes that are not one")
                }
            }
            page.endValues()
        }
        guard !page.isEmpty else { return page }
        // One query per join table for the whole page, as a record read fills its to-manys.
        var related: [[Int64: [Int64]]?] = []
        for storage in el.relationships {
            if case .join(let j) = storage {
                related.append(try relatedKeys(j, owners: page.primaryKeys))
            } else {
                related.append(nil)
            }
        }
        for (i, pk) in page.primaryKeys.enumerated() {
            for (k, storage) in el.relationships.enumerated() {
                switch storage {
                case .foreignKey(let column):
                    page.appendToOne(rows.binary(i, PGTable.prefix + column, { PostgresBinaryCodec.integer($0, as: Int64.self) }) ?? nil)
                case .join:
                    page.appendToMany(related[k]?[pk] ?? [])
                case .missing:
                    page.appendToMany([])
                }
            }
            page.endLinks()
        }
        return page
    }
}
