import CSQLite
import Foundation
@_spi(BackendKit) import StoreAPI

extension SQLiteRecordReader {
    /// Runs `sql` (whose select list is `table.selectList`, rows of exactly `entity`'s entity in ascending key
    /// order) into a page: the same records, checks and errors as ``records(_:bindings:table:)``, with no value
    /// made into a Swift object.
    func page(_ sql: String, bindings: [SQLValue], table: TableLayout, entity el: EntityLayout, capacity: Int) throws
        -> RecordPage
    {
        var page = RecordPage(entity: el.name, capacity: capacity, bytesPerRecord: 16 * el.attributeReads.count)
        // The rows' to-one keys, in record order: relationships are written after the rows (to-manys need
        // queries of their own, which must not run while the rows' statement is stepping).
        var toOne: [Int64?] = []
        try connection.withStatement(sql) { s in
            try s.bind(bindings)
            while try s.step() {
                let (pk, rowEntity, gid) = try rowHeader(s, table: table)
                guard rowEntity === el else {
                    throw StoreError.corruptStore(url, reason: "\(table.name) row \(pk) is a \(rowEntity.name), not a \(el.name)")
                }
                page.beginRecord(primaryKey: pk, globalID: gid)
                for (i, read) in el.attributeReads.enumerated() {
                    let column = try attributeColumn(read, i, el)
                    do throws(SQLiteValueCodec.Mismatch) {
                        try SQLiteValueCodec.append(s, column: column, type: read.type, to: &page)
                    } catch {
                        throw error.storeError(url: url, entity: el.name, property: el.entity.attributes[i].name, type: read.type)
                    }
                }
                page.endValues()
                for i in el.relationshipReads.indices {
                    if case .toOne(let key) = try link(s, i, el, pk) { toOne.append(key) }
                }
            }
        }
        guard !page.isEmpty else { return page }
        // One query per to-many relationship for the whole page; the page's keys ascend, as the owners must.
        var related: [RelatedKeys?] = []
        for storage in el.relationships {
            if case .foreignKey = storage {
                related.append(nil)
            } else {
                related.append(try relatedKeys(storage, owners: page.primaryKeys))
            }
        }
        var nextToOne = 0
        for pk in page.primaryKeys {
            for keys in related {
                if let keys {
                    page.appendToMany(keys.keys(of: pk))
                } else {
                    page.appendToOne(toOne[nextToOne])
                    nextToOne += 1
                }
            }
            page.endLinks()
        }
        return page
    }
}
