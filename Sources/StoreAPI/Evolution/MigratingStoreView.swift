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
        var page: [Record] = []
        if let step = mapper.steps[entity] {
            page = try base.scan(entity: step.source.name, after: primaryKey, limit: limit).map { try mapper.migrate($0, with: step) }
        }
        // Records custom steps inserted have keys above every record the store had.
        if page.count < limit, let blocks = insertionBlocks(of: entity) {
            try appendInserted(entity, from: blocks, after: page.last?.primaryKey ?? primaryKey, to: &page, limit: limit)
        }
        return page
    }

    func scanKeys(entity: String, after primaryKey: Int64?, limit: Int) throws -> [Int64] {
        if insertionBlocks(of: entity) != nil { return try scan(entity: entity, after: primaryKey, limit: limit).map(\.primaryKey) }
        guard let step = mapper.steps[entity] else { return [] }
        return try base.scanKeys(entity: step.source.name, after: primaryKey, limit: limit)
    }

    /// The key blocks records of `entity` may be inserted into, if any.
    private func insertionBlocks(of entity: String) -> [MigrationInsertions.Block]? {
        guard let insertions = mapper.insertions, let e = mapper.destination.entity(named: entity),
              let blocks = insertions.blocksByRoot[e.rootName], !blocks.isEmpty else { return nil }
        return blocks
    }

    /// Appends the inserted records of `entity` with keys above `after`, in key order, until the page holds `limit`:
    /// each block's source records are read from the slot that holds the next key, their steps run again.
    private func appendInserted(_ entity: String, from blocks: [MigrationInsertions.Block], after: Int64?, to page: inout [Record],
                                limit: Int) throws {
        for block in blocks where block.last > (after ?? block.base) {
            guard let step = mapper.destinationNames[block.sourceEntity].flatMap({ mapper.steps[$0] }) else { continue }
            let from = max(after ?? block.base, block.base)
            var sourceAfter: Int64? = from == block.base ? nil : block.sourceKey(holding: from + 1) - 1
            while page.count < limit {
                let sources = try base.scan(entity: block.sourceEntity, after: sourceAfter, limit: limit)
                for source in sources {
                    for r in try mapper.migrateInserting(source, with: step).inserted where r.entity == entity && r.primaryKey > from {
                        page.append(r)
                    }
                }
                guard let last = sources.last, sources.count == limit else { break }
                sourceAfter = last.primaryKey
            }
            if page.count >= limit { break }
        }
        if page.count > limit { page.removeSubrange(limit...) }
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
