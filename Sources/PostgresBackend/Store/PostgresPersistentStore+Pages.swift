import Foundation
@_spi(BackendKit) import StoreAPI

extension PostgresPersistentStore: PageScanningStore {
    /// The page of a scan's records (see ``PersistentStore/scan(entity:after:limit:)``), read from the same query
    /// straight into the page form: a conversion off the server to a store that inserts pages makes no record.
    func scanPage(entity name: String, after primaryKey: Int64?, limit: Int) throws -> RecordPage {
        try withConnection { c, _ in
            let (table, code) = try scanTarget(name)
            guard limit > 0, let el = layout.entities[name] else { return RecordPage(entity: name) }
            return try c.transaction(readOnly: true) {
                try reader(c).page(Self.scanSQL(table), Self.scanParameters(code, primaryKey, limit), table: table,
                                   entity: el, capacity: limit)
            }
        }
    }
}
