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
        if !constraints(of: e).isEmpty {
            try checkUniqueness(records.map { UniquenessCandidate(entity: e, record: $0, store: target) }, excluding: [],
                                unsavedChangesCount: false)
        }
        var changes = StoreChanges(inserted: records)
        if target.storeDescription.options.historyTracking {
            let inserts = records.map {
                HistoryChange(kind: .insert, entity: e.name, primaryKey: $0.primaryKey, globalID: $0.globalID)
            }
            changes.history = [HistoryTransaction(token: HistoryTransaction.assignToken, timestamp: Date(), author: author,
                                                  changes: inserts)]
        }
        records = []
        let ids = changes.inserted.map { ObjectID(storeUUID: target.identifier, entity: e.name, primaryKey: $0.primaryKey) }
        try target.store.save(changes)
        return ids
    }
}
