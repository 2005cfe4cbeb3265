import CLMDB
import Foundation
@_spi(BackendKit) import StoreAPI

extension LMDBPersistentStore {
    /// Applies the changes in one write transaction: records, their uniqueness-index and global-ID entries, the
    /// key allocators, history and metadata are stored together or not at all. A full map is grown and the whole
    /// transaction retried, invisibly.
    ///
    /// Removals (deletes, and the old values of updates) are applied before additions, so records may swap
    /// unique values or reuse the values of deleted records within one save.
    ///
    /// - Throws: ``StoreError/uniquenessViolation(entity:attributes:values:existing:)`` when a record would share
    ///   the values of a uniqueness constraint with another; ``StoreError/objectNotFound(_:)`` for an update of a
    ///   record that is not stored; ``StoreError/readOnly(_:reason:)`` for read-only stores.
    ///
    /// The metadata the store was laid out with is compared with the stored one inside the transaction. When
    /// another process changed it, the store adopts the stored metadata; a save of records is then retried, and a
    /// save that changes metadata fails with ``StoreError/modifiedOnDisk(_:)`` rather than overwrite the other
    /// process's change.
    public func save(_ changes: StoreChanges) throws {
        try save(.changes(changes))
    }

    /// Inserts a page's records in one write transaction, as ``save(_:)`` would insert them, writing their values
    /// as the page holds them (see ``RecordPage``): the page form is this store's stored form.
    public func insert(_ page: RecordPage) throws {
        try save(.page(page))
    }

    /// Inserts the records of `count` pages in one write transaction (see
    /// ``StoreAPI/PageInsertingStore/insertPages(count:page:)``): each page is written as ``insert(_:)`` writes
    /// one, and the global-ID entries of all of them go into the index together. The map is grown up front for
    /// `count` pages the size of the first (made before the transaction, and used in it), so the transaction is
    /// rarely restarted (it asks for the pages again, from the first, when it is).
    public func insertPages(count: Int, page: (Int) throws -> RecordPage) throws {
        guard count > 0 else { return }
        try withoutActuallyEscaping(page) { page in try save(.pages(count: count, page: page)) }
    }

    private func save(_ content: SaveContent) throws {
        try run {
            guard !isReadOnly else { throw StoreError.readOnly(storeURL, reason: "the store was opened read-only") }
            if content.isEmpty { return }
            for attempt in 0..<2 {
                do {
                    try save(content, base: layout)
                    return
                } catch let stale as StaleLayout {
                    try adopt(stale)
                    if content.metadata != nil || attempt > 0 { throw StoreError.modifiedOnDisk(storeURL) }
                }
            }
        }
    }

    private func save(_ content: SaveContent, base: LMDBLayout) throws {
        var target = base
        if let metadata = content.metadata {
            target = try LMDBLayout(metadata: metadata, existingIDs: base.entityIDs)
            // Database handles are opened outside the save's transaction (liblmdb allows one transaction at a
            // time to open handles); creating empty databases early is harmless if the save fails.
            try env.openDatabases(target.databaseNames, create: true, timeout: writeTimeout)
        }
        // Records are checked against their entities while they are encoded (see LMDBSaveWriter.put): a record that
        // does not fit fails the save before its transaction commits, so nothing of it is stored.
        let layout = target
        var content = content
        let estimate: Int?
        if case .pages(let count, let page) = content {
            // Room for `count` pages the size of the first. The first page, made for that, is the first attempt's
            // page 0 as well (a batch's pages cost about as much to make as to store).
            var first: RecordPage? = try page(0)
            estimate = first.flatMap { SaveSizeEstimate.bytes(for: $0, layout: layout) }.map {
                $0.multipliedReportingOverflow(by: count).overflow ? .max : $0 * count
            }
            content = .pages(count: count) { i in
                if i == 0, let made = first {
                    first = nil
                    return made
                }
                return try page(i)
            }
        } else {
            estimate = content.estimatedBytes(layout)
        }
        if let estimate { try env.reserveMapSpace(estimate) }
        // A bulk load's global-ID entries pile up over saves and go into the index in large sorted runs. Taken
        // out of the store for the save (so appending copies nothing) and put back, as it was, if the save fails.
        var pending = bulkGlobalIDs.withLock { state -> GlobalIDBatch? in
            defer { if state != nil { state = GlobalIDBatch() } }
            return state
        }
        // The entries kept before this save's own: a retried transaction, or a failed save, goes back to them.
        var pendingBefore = pending?.count ?? 0
        do {
            // An update or delete must find the index complete, so what is pending is written first. A run this
            // save's entries would take past its size is set aside (the run's buffer then never grows).
            if pending != nil, content.updatesOrDeletes {
                try flushGlobalIDs(&pending, layout)
                pendingBefore = 0
            } else if let count = pending?.count, count + content.insertedCount > Self.bulkGlobalIDRun {
                try spillGlobalIDs(&pending, layout)
                pendingBefore = 0
            }
            try env.write(timeout: writeTimeout) { txn in
                pending?.truncate(to: pendingBefore)  // a retried transaction starts over
                var writer = try LMDBSaveWriter(txn: txn, env: env, base: base, layout: layout, storeURL: storeURL, file: dataFile)
                writer.defersGlobalIDs = pending != nil
                switch content {
                case .changes(let changes): try writer.apply(changes)
                case .page(let page): try writer.insert(page)
                case .pages(let count, let page): try writer.insertPages(count: count, page: page)
                }
                if writer.defersGlobalIDs { pending?.append(contentsOf: writer.globalIDBatch) }
            }
        } catch {
            if var restored = pending {
                restored.truncate(to: pendingBefore)
                bulkGlobalIDs.withLock { $0 = restored }
            }
            throw error
        }
        if let pending { bulkGlobalIDs.withLock { $0 = pending } }
        // Bulk saves (an import, a conversion) touch pages of the map as they go; keep them from piling up.
        env.releaseResidentPages(after: estimate ?? 0)
        if content.metadata != nil { env.setLayout(target) }
    }

    /// Lays the store out against metadata another process stored.
    private func adopt(_ stale: StaleLayout) throws {
        let metadata = try StoreMetadata.decode(Data(stale.metadataJSON), url: storeURL)
        let ids = try stale.entityIDsJSON.withUnsafeBytes { try LMDBLayout.decodeEntityIDs($0, url: dataFile) }
        let fresh = try LMDBLayout(metadata: metadata, storedJSON: stale.metadataJSON, existingIDs: ids)
        try env.openDatabases(fresh.databaseNames, create: !env.isReadOnly, timeout: writeTimeout)
        env.setLayout(fresh)
    }
}

/// What one save writes: changes, a page of inserted records, or the pages a producer makes on demand.
private enum SaveContent {
    case changes(StoreChanges)
    case page(RecordPage)
    /// Pages `0..<count`, made by `page` when asked (again, if the transaction restarts).
    case pages(count: Int, page: (Int) throws -> RecordPage)

    var isEmpty: Bool {
        switch self {
        case .changes(let c): c.isEmpty
        case .page(let p): p.isEmpty
        case .pages(let count, _): count == 0
        }
    }

    var metadata: StoreMetadata? {
        if case .changes(let c) = self { c.metadata } else { nil }
    }

    var updatesOrDeletes: Bool {
        if case .changes(let c) = self { !c.updated.isEmpty || !c.deleted.isEmpty } else { false }
    }

    /// The records inserted, as far as known before the pages are made (a bulk load sets pending global-ID
    /// entries aside by it; pages made on demand add theirs to what is pending).
    var insertedCount: Int {
        switch self {
        case .changes(let c): c.inserted.count
        case .page(let p): p.count
        case .pages: 0
        }
    }

    /// Room the save needs in the map (pages made on demand are estimated by the save, from their first).
    func estimatedBytes(_ layout: LMDBLayout) -> Int? {
        switch self {
        case .changes(let c): SaveSizeEstimate.bytes(for: c, layout: layout)
        case .page(let p): SaveSizeEstimate.bytes(for: p, layout: layout)
        case .pages: nil
        }
    }
}

/// Thrown inside a save's transaction when the stored metadata is not the one the store was laid out with.
struct StaleLayout: Error {
    let metadataJSON: [UInt8]
    let entityIDsJSON: [UInt8]
}
