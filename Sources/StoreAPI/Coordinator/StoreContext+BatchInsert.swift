import Foundation

extension StoreContext {
    /// Inserts many records of one entity straight into their store, in one atomic save, without making managed
    /// objects — the counterpart of Core Data's `NSBatchInsertRequest`, for imports.
    ///
    /// ```swift
    /// let ids = try context.insertBatch("Book", rows)   // rows: [[String: StoreValue]], one per book
    /// ```
    ///
    /// Each row is checked as ``insert(_:_:globalID:into:)`` and ``save()`` check an inserted object: unknown
    /// names, values that do not convert to their attribute's type, missing required values and uniqueness
    /// conflicts (within the batch and with stored records) throw, and then nothing is written. Relationships
    /// cannot be set this way (a required one makes the batch fail): link the records afterwards through objects.
    ///
    /// The batch goes to the store at once, whatever else the context holds: its own unsaved changes stay unsaved,
    /// and a later ``save()`` of them is checked against the batch's records like against any stored record. With
    /// history tracking on, the batch is one history transaction.
    ///
    /// For large imports, ``insertBatch(_:count:globalIDs:into:row:)`` takes the rows from a closure instead, so
    /// they never all exist at once.
    ///
    /// - Parameters:
    ///   - entity: The (concrete) entity of every row.
    ///   - rows: The attribute values of each record; attributes a row leaves out take their defaults.
    ///   - globalIDs: The records' global identifiers, one per row; new random ones when `nil`.
    ///   - store: The store to insert into; by default the first loaded store whose configuration holds `entity`.
    /// - Returns: The new records' object IDs, in the order of `rows`.
    @discardableResult
    public func insertBatch(
        _ entity: String, _ rows: [[String: StoreValue]], globalIDs: [UUID]? = nil, into store: LoadedStore? = nil
    ) throws -> [ObjectID] {
        let (e, target) = try resolveInsert(entity, into: store)
        if let globalIDs, globalIDs.count != rows.count {
            throw StoreError.invalidArgument("insertBatch: \(globalIDs.count) global IDs for \(rows.count) rows")
        }
        guard !rows.isEmpty else { return [] }
        if let pageStore = pageTarget(e, target) {
            return try insertPages(e, count: rows.count, globalIDs: globalIDs, target: target, into: pageStore) { i, row in
                for (name, value) in rows[i] { try row.set(name, value) }
            }
        }
        // One reservation for the whole batch: its keys are consecutive.
        let first = try target.store.allocatePrimaryKeys(root: e.rootName, count: rows.count)
        var records: [Record] = []
        records.reserveCapacity(rows.count)
        for (i, row) in rows.enumerated() {
            let record = Record(entity: e.name, primaryKey: first + Int64(i), globalID: globalIDs?[i] ?? nextGlobalID(),
                                attributes: try e.attributeValues(row), relationships: e.blankRelationships)
            try validate(record, of: e, id: ObjectID(storeUUID: target.identifier, entity: e.name, primaryKey: record.primaryKey))
            records.append(record)
        }
        return try saveBatch(records, of: e, to: target)
    }

    /// Inserts `count` records of one entity straight into their store, in one atomic save, taking each record's
    /// values from `row` — the counterpart of Core Data's `NSBatchInsertRequest(entityName:dictionaryHandler:)`.
    ///
    /// ```swift
    /// try context.insertBatch("Book", count: titles.count) { i, row in
    ///     try row.set("title", .string(titles[i]))
    ///     try row.set("year", .integer32(years[i]))
    /// }
    /// ```
    ///
    /// Rows are checked, and refused, exactly as ``insertBatch(_:_:globalIDs:into:)`` checks them; an error
    /// `row` throws ends the batch with that error, and then nothing is written either. Nothing of a row is kept
    /// after it is stored: an import of millions of records never holds them all, neither as values nor (in
    /// stores that take pages of records, such as SQLite and LMDB, without history tracking or uniqueness
    /// constraints on the entity) as records.
    ///
    /// `row` is called for each index in `0..<count`, in order. A store may ask for rows again from the first (an
    /// LMDB store whose map is grown under the batch's transaction restarts it), so `row` must set the same values
    /// for the same index every time, and must not use the context or its stores.
    ///
    /// - Parameters:
    ///   - entity: The (concrete) entity of every row.
    ///   - count: The number of records.
    ///   - globalIDs: The records' global identifiers, one per row; new random ones when `nil`.
    ///   - store: The store to insert into; by default the first loaded store whose configuration holds `entity`.
    ///   - row: Sets the values of record `index` (attributes it leaves out take their defaults).
    /// - Returns: The new records' object IDs, in row order.
    @discardableResult
    public func insertBatch(
        _ entity: String, count: Int, globalIDs: [UUID]? = nil, into store: LoadedStore? = nil,
        row: (_ index: Int, _ row: inout BatchInsertRow) throws -> Void
    ) throws -> [ObjectID] {
        let (e, target) = try resolveInsert(entity, into: store)
        guard count >= 0 else { throw StoreError.invalidArgument("insertBatch: a count of \(count) rows") }
        if let globalIDs, globalIDs.count != count {
            throw StoreError.invalidArgument("insertBatch: \(globalIDs.count) global IDs for \(count) rows")
        }
        guard count > 0 else { return [] }
        if let pageStore = pageTarget(e, target) {
            return try insertPages(e, count: count, globalIDs: globalIDs, target: target, into: pageStore, row)
        }
        // The record path (uniqueness checks, history, stores without pages): the rows as records, checked as
        // they are made.
        let first = try target.store.allocatePrimaryKeys(root: e.rootName, count: count)
        var builder = BatchInsertRow(entity: e)
        var records: [Record] = []
        records.reserveCapacity(count)
        var start = 0
        while start < count {
            let end = min(count, start + Self.batchPageRows)
            var page = RecordPage(entity: e.name, capacity: end - start)
            for i in start..<end {
                try fill(&builder, row: i, key: first + Int64(i), globalID: globalIDs?[i] ?? nextGlobalID(), page: &page,
                         store: target.identifier, row)
            }
            records += try page.records(in: schema)
            start = end
        }
        return try saveBatch(records, of: e, to: target)
    }

    /// The batch's records, checked for uniqueness, in one save (one history transaction with tracking on).
    private func saveBatch(_ records: [Record], of e: Entity, to target: LoadedStore) throws -> [ObjectID] {
        if !constraints(of: e).isEmpty {
            try checkUniqueness(records.map { UniquenessCandidate(entity: e, record: $0, store: target) }, excluding: [],
                                unsavedChangesCount: false)
        }
        var changes = StoreChanges(inserted: records)
        if target.storeDescription.options.historyTracking {
            let inserts = records.map {
                HistoryChange(kind: .insert, entity: e.name, primaryKey: $0.primaryKey, globalID: $0.globalID)
            }
            changes.history = [.saved(at: Date(), author: author, contextName: self.name, changes: inserts)]
        }
        let ids = records.map { ObjectID(storeUUID: target.identifier, entity: e.name, primaryKey: $0.primaryKey) }
        try target.store.save(changes)
        announceBatch(ids, in: target)
        return ids
    }

    /// Rows per page when a batch goes to its store as pages.
    static let batchPageRows = 4096

    /// The store to send a batch of `e` to as pages: one that takes pages, when the batch needs nothing the record
    /// path does (uniqueness checks against the batch's records, a history transaction listing them).
    private func pageTarget(_ e: Entity, _ target: LoadedStore) -> (any PageInsertingStore)? {
        guard constraints(of: e).isEmpty, !target.storeDescription.options.historyTracking else { return nil }
        return target.store as? any PageInsertingStore
    }

    /// Inserts a batch through a store that takes pages: each page is built from its rows when the store asks for
    /// it, inside the store's one transaction, so only one page of the batch exists at a time — no record, value
    /// array or to-many array per row (see ``PageRowEncoder``).
    private func insertPages(
        _ e: Entity, count: Int, globalIDs: [UUID]?, target: LoadedStore, into pageStore: any PageInsertingStore,
        _ row: (Int, inout BatchInsertRow) throws -> Void
    ) throws -> [ObjectID] {
        // One reservation for the whole batch: its keys are consecutive.
        let first = try target.store.allocatePrimaryKeys(root: e.rootName, count: count)
        // Made once: a page asked for again must be the same page.
        let ids = globalIDs ?? (0..<count).map { _ in nextGlobalID() }
        let pageRows = Self.batchPageRows
        var builder = BatchInsertRow(entity: e)
        var bytesPerRecord = 64
        try pageStore.insertPages(count: (count + pageRows - 1) / pageRows) { p in
            let start = p * pageRows
            let end = min(count, start + pageRows)
            var page = RecordPage(entity: e.name, capacity: end - start, bytesPerRecord: bytesPerRecord)
            for i in start..<end {
                try fill(&builder, row: i, key: first + Int64(i), globalID: ids[i], page: &page, store: target.identifier, row)
            }
            bytesPerRecord = max(bytesPerRecord, page.encodedByteCount / max(1, page.count) + 8)
            return page
        }
        let objectIDs = (0..<count).map { ObjectID(storeUUID: target.identifier, entity: e.name, primaryKey: first + Int64($0)) }
        announceBatch(objectIDs, in: target)
        return objectIDs
    }

    /// Tells the coordinator's observers about a batch that committed.
    private func announceBatch(_ ids: [ObjectID], in target: LoadedStore) {
        guard coordinator.isObservingChanges else { return }
        coordinator.post(SavedChanges(store: target.identifier, origin: .context(contextID), inserted: ids, updated: [],
                                      deleted: [], schema: schema))
    }

    /// Row `index` into `page`: its values from `row`, checked, as a record with `key` and `globalID`.
    private func fill(
        _ builder: inout BatchInsertRow, row index: Int, key: Int64, globalID: UUID, page: inout RecordPage, store: UUID,
        _ row: (Int, inout BatchInsertRow) throws -> Void
    ) throws {
        let entity = builder.encoder.entity.name
        builder.encoder.beginRow()
        try row(index, &builder)
        try builder.encoder.finishRow(primaryKey: key, globalID: globalID, to: &page) {
            ObjectID(storeUUID: store, entity: entity, primaryKey: key)
        }
    }
}

/// The values of one record of a batch, set by name in
/// ``StoreContext/insertBatch(_:count:globalIDs:into:row:)``'s closure.
///
/// Each value is checked and converted to its attribute's type as it is set, and stored in the page form at once:
/// the row holds no `StoreValue`s. A row can only be used inside the closure it is passed to.
public struct BatchInsertRow: ~Copyable {
    var encoder: PageRowEncoder

    init(entity: Entity) { encoder = PageRowEncoder(entity: entity) }

    /// Sets attribute `name` to `value`, converted to the attribute's type as ``StoreContext/insert(_:_:globalID:into:)``
    /// converts values. Setting an attribute again replaces its value; attributes never set keep their defaults.
    ///
    /// - Throws: ``StoreError/unknownProperty(entity:property:)`` when the entity has no attribute `name`;
    ///   ``StoreError/typeMismatch(entity:property:expected:got:)`` when `value` does not convert.
    public mutating func set(_ name: String, _ value: StoreValue) throws {
        try encoder.set(name, value)
    }
}
