import Foundation

/// A read-only view of a source store as the destination schema sees it: the transfer engine copies from it as
/// from any store, and each page it scans is mapped record by record, so an upgrade streams in bounded memory.
final class MigratingStoreView: PersistentStore {
    let base: any PersistentStore
    let mapper: MigrationRecordMapper
    let metadata: StoreMetadata

    init(base: any PersistentStore, mapper: MigrationRecordMapper) {
        self.base = base
        self.mapper = mapper
        self.metadata = mapper.metadata(from: base.metadata)
    }

    var url: URL? { base.url }

    func fetch(_ request: FetchRequest) throws -> [Record] {
        throw StoreError.unsupported("fetching from a store while it is being upgraded")
    }

    /// Counts for progress: an entity's records are its source entity's.
    func count(_ request: FetchRequest) throws -> Int {
        guard let step = mapper.steps[request.entity] else { return 0 }
        return try base.count(FetchRequest(entity: step.source.name, includesSubentities: false))
    }

    func records(withKeys keys: [Int64], root: String) throws -> [Record] {
        throw StoreError.unsupported("reading records by key from a store while it is being upgraded")
    }

    func scan(entity: String, after primaryKey: Int64?, limit: Int) throws -> [Record] {
        guard let step = mapper.steps[entity] else { return [] }
        return try base.scan(entity: step.source.name, after: primaryKey, limit: limit).map { try mapper.migrate($0, with: step) }
    }

    func scanKeys(entity: String, after primaryKey: Int64?, limit: Int) throws -> [Int64] {
        guard let step = mapper.steps[entity] else { return [] }
        return try base.scanKeys(entity: step.source.name, after: primaryKey, limit: limit)
    }

    func save(_ changes: StoreChanges) throws {
        throw StoreError.readOnly(base.url ?? URL(fileURLWithPath: "/"), reason: "the store is the source of an upgrade")
    }

    func allocatePrimaryKeys(root: String, count: Int) throws -> Int64 {
        throw StoreError.readOnly(base.url ?? URL(fileURLWithPath: "/"), reason: "the store is the source of an upgrade")
    }

    func history(after token: Int64?) throws -> [HistoryTransaction] {
        try base.history(after: token).map { mapper.map($0) }
    }

    /// The caller closes the store it wrapped.
    func close() throws {}
}
