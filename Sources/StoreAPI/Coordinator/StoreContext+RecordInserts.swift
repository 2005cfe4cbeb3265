import Foundation

extension StoreContext {
    /// Records that the next ``save()`` inserts along with the context's other changes, without managed objects.
    struct RecordInserts {
        let store: LoadedStore
        let entity: Entity
        var records: [Record]
    }

    /// Inserts records of one entity that the next ``save()`` writes together with the context's other changes —
    /// in the same store transaction, and the same history transaction — without making a managed object for each
    /// (BackendKit SPI: for layers that apply many records in one save, such as sync).
    ///
    /// Each record is checked now as an inserted object is checked by ``save()``: its values are converted to
    /// their attributes' types as ``insert(_:attributeValues:globalID:into:)`` converts them, and required values
    /// must be there. Nothing in the context can link to these records before they are saved (they have no
    /// objects), so the entity must be one no relationship is required on; and since the save checks uniqueness
    /// constraints on objects, an entity with one is refused. ``rollback()`` and ``reset()`` drop them with the
    /// other unsaved changes.
    ///
    /// - Parameters:
    ///   - entity: The (concrete) entity of every record.
    ///   - rows: Each record's attribute values in the order of ``Entity/attributes`` (`nil`: the default).
    ///   - globalIDs: The records' global identifiers, one per row.
    ///   - store: The store to insert into.
    /// - Throws: ``StoreError/invalidArgument(_:)`` for an entity with a uniqueness constraint or a count of
    ///   global IDs other than the rows'; the errors of ``insert(_:attributeValues:globalID:into:)`` and the
    ///   validation errors of ``save()`` otherwise. Nothing is staged then.
    @_spi(BackendKit) public func insertWithoutObjects(
        _ entity: String, attributeValues rows: [[StoreValue?]], globalIDs: [UUID], into store: LoadedStore
    ) throws {
        try insertWithoutObjects(entity, count: rows.count, globalIDs: globalIDs, into: store) { e, i in
            try e.attributeValues(ordered: rows[i])
        }
    }

    /// Inserts records of one entity without managed objects, as ``insertWithoutObjects(_:attributeValues:globalIDs:into:)``
    /// does, from rows that hold every attribute's value (BackendKit SPI).
    ///
    /// A row starts as ``Entity/newRecordAttributeValues`` with the values the caller has put in place; a row whose
    /// values all have their attributes' types is stored as it is, without another array made for it.
    ///
    /// - Parameters:
    ///   - entity: The (concrete) entity of every record.
    ///   - rows: Each record's attribute values, one per attribute in the order of ``Entity/attributes``.
    ///   - globalIDs: The records' global identifiers, one per row.
    ///   - store: The store to insert into.
    /// - Throws: What ``insertWithoutObjects(_:attributeValues:globalIDs:into:)`` throws.
    @_spi(BackendKit) public func insertWithoutObjects(
        _ entity: String, completeAttributeValues rows: [[StoreValue]], globalIDs: [UUID], into store: LoadedStore
    ) throws {
        try insertWithoutObjects(entity, count: rows.count, globalIDs: globalIDs, into: store) { e, i in
            try e.attributeValues(complete: rows[i])
        }
    }

    private func insertWithoutObjects(
        _ entity: String, count: Int, globalIDs: [UUID], into store: LoadedStore,
        attributes: (Entity, Int) throws -> [StoreValue]
    ) throws {
        let (e, target) = try resolveInsert(entity, into: store)
        guard globalIDs.count == count else {
            throw StoreError.invalidArgument("insertWithoutObjects: \(globalIDs.count) global IDs for \(count) rows")
        }
        guard constraints(of: e).isEmpty else {
            throw StoreError.invalidArgument("insertWithoutObjects: \(entity) has a uniqueness constraint, which a save "
                + "checks on objects only")
        }
        guard count > 0 else { return }
        // One reservation for all of them: their keys are consecutive.
        let first = try target.store.allocatePrimaryKeys(root: e.rootName, count: count)
        var records: [Record] = []
        records.reserveCapacity(count)
        for i in 0..<count {
            let record = Record(entity: e.name, primaryKey: first + Int64(i), globalID: globalIDs[i],
                                attributes: try attributes(e, i), relationships: e.blankRelationships)
            try validate(record, of: e, id: ObjectID(storeUUID: target.identifier, entity: e.name, primaryKey: record.primaryKey))
            records.append(record)
        }
        recordInserts.append(RecordInserts(store: target, entity: e, records: records))
    }
}
