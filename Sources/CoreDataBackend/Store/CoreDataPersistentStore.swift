import Foundation
@_spi(BackendKit) import StoreAPI

/// An open Core Data store, read-only: the records are read once, when the store opens, into an in-memory snapshot
/// (the store cannot change under a read-only reader that never checkpoints, and following relationships needs the
/// inverse side's foreign keys from other tables anyway); fetches, counts and scans are answered from it with the
/// framework's predicate evaluator.
///
/// Saves and key allocation throw ``StoreError/readOnly(_:reason:)``. Core Data's persistent history
/// (`ATRANSACTION`, `ACHANGE`) is read with the records (see `CoreDataRecordReader.readHistory()`).
final class CoreDataPersistentStore: PersistentStore {
    private let fileURL: URL
    private let snapshot: MemoryStore
    /// Each entity's records in increasing key order, so a scan page is a binary search and a slice rather than a
    /// pass over the whole table (the transfer engine pages through every entity).
    private let byEntity: [String: [Record]]

    init(url: URL, metadata: StoreMetadata, records: [Record], history: [HistoryTransaction]) throws {
        fileURL = url
        snapshot = MemoryStore(url: url, metadata: metadata)
        try snapshot.save(StoreChanges(inserted: records, history: history))
        byEntity = Dictionary(grouping: records, by: \.entity).mapValues { $0.sorted { $0.primaryKey < $1.primaryKey } }
    }

    var url: URL? { fileURL }

    var metadata: StoreMetadata { snapshot.metadata }

    func fetch(_ request: FetchRequest) throws -> [Record] { try snapshot.fetch(request) }

    func count(_ request: FetchRequest) throws -> Int { try snapshot.count(request) }

    func records(withKeys keys: [Int64], root: String) throws -> [Record] {
        try snapshot.records(withKeys: keys, root: root)
    }

    func scan(entity: String, after primaryKey: Int64?, limit: Int) throws -> [Record] {
        _ = try snapshot.records(withKeys: [], root: entity)  // a closed store says so
        _ = try snapshot.metadata.schema.requireEntity(entity)
        let list = byEntity[entity] ?? []
        var low = 0, high = list.count
        if let primaryKey {
            while low < high {
                let mid = (low + high) / 2
                if list[mid].primaryKey <= primaryKey { low = mid + 1 } else { high = mid }
            }
        }
        return Array(list[low..<min(list.count, low + max(0, limit))])
    }

    func save(_ changes: StoreChanges) throws {
        throw StoreError.readOnly(fileURL, reason: CoreDataStoreBackend.readOnlyReason)
    }

    func allocatePrimaryKeys(root: String, count: Int) throws -> Int64 {
        throw StoreError.readOnly(fileURL, reason: CoreDataStoreBackend.readOnlyReason)
    }

    func history(after token: Int64?) throws -> [HistoryTransaction] { try snapshot.history(after: token) }

    func close() throws { try snapshot.close() }
}
