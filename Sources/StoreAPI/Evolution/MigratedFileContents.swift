import Foundation

/// An atomic store file as the new schema sees it, for the backend to write: each pass the writer makes re-reads the
/// source file, streaming, and maps its records, so an atomic store is upgraded without loading it whole.
struct MigratedFileContents: AtomicStoreContents, @unchecked Sendable {
    // @unchecked: the progress closure is called only on the writing thread, synchronously, as in a transfer.

    /// The file does not list records in the order a writer is promised (grouped by entity in schema order, each
    /// group in key order); the caller then tries the next, slower way.
    struct OutOfOrder: Error {}

    /// How records are read from the file.
    enum Passes {
        /// One pass over the file, which must already list records in the new schema's order: the usual case, since
        /// the writer wrote them in the old schema's order and an upgrade rarely reorders entities.
        case one
        /// One pass per entity: any grouping, keys still ascending within an entity.
        case perEntity
    }

    let backend: any AtomicStoreBackend
    let url: URL
    let mapper: MigrationRecordMapper
    let metadata: StoreMetadata
    let passes: Passes
    let batchSize: Int
    let progress: ProgressHandler?

    func forEachRecord(_ body: (Record) throws -> Void) throws {
        var done = 0
        func counted(_ record: Record) throws {
            try body(record)
            done += 1
            if done % batchSize == 0 { try StoreTransfer.report(to: progress, done, nil, record.entity) }
        }
        try forEachSourceRecord(
            { record, step in try counted(try mapper.migrate(record, with: step)) },
            inserted: { try counted($0) })
    }

    /// Keys alone: the records are mapped once, in ``forEachRecord(_:)`` (inserted records excepted: their keys
    /// come from running the custom step).
    func forEachPrimaryKey(_ body: (_ entity: String, _ primaryKey: Int64) throws -> Void) throws {
        if let insertions = mapper.insertions, !insertions.isEmpty {
            return try forEachSourceRecord(
                { record, step in try body(step.destination.name, record.primaryKey) },
                inserted: { try body($0.entity, $0.primaryKey) })
        }
        // Without inserted records, keys alone: the backend may skip decoding values.
        try inSchemaOrder(keys) { key, step in try body(step.destination.name, key) }
    }

    func forEachHistoryTransaction(_ body: (HistoryTransaction) throws -> Void) throws {
        try backend.readHistory(at: url) { try body(mapper.map($0)) }
    }

    /// Every source record the new schema keeps, with its entity's mapping, and every record the custom step
    /// inserts (already made), in the new schema's order.
    private func forEachSourceRecord(_ body: (Record, MigrationRecordMapper.EntityStep) throws -> Void,
                                     inserted: (Record) throws -> Void) throws {
        if let insertions = mapper.insertions, !insertions.isEmpty {
            return try forEachRecordInserting(insertions, body, inserted: inserted)
        }
        try inSchemaOrder(records, body)
    }

    /// How a pass reads the file: it calls its argument with each record's entity and key, and what the caller needs
    /// of the record.
    private typealias FileRead<Item> = ((_ entity: String, _ primaryKey: Int64, _ item: Item) throws -> Void) throws -> Void

    /// Whole records.
    private var records: FileRead<Record> {
        { deliver in
            try backend.readStore(at: url) { element in
                if case .record(let r) = element { try deliver(r.entity, r.primaryKey, r) }
            }
        }
    }

    /// Keys alone, which the backend may read without decoding values.
    private var keys: FileRead<Int64> {
        { deliver in try backend.readPrimaryKeys(at: url) { entity, key in try deliver(entity, key, key) } }
    }

    /// What `read` delivers of every record the new schema keeps, with its entity's mapping, in the new schema's
    /// order: in one pass (``Passes/one``) or one per entity.
    private func inSchemaOrder<Item>(_ read: FileRead<Item>, _ body: (Item, MigrationRecordMapper.EntityStep) throws -> Void) throws {
        let order = mapper.destination.entities.filter { !$0.isAbstract }.compactMap { mapper.steps[$0.name] }
        switch passes {
        case .one:
            let position = Dictionary(order.enumerated().map { ($0.element.source.name, $0.offset) }, uniquingKeysWith: { a, _ in a })
            var last: (group: Int, key: Int64)?
            // `read` and `body` are both the caller's closures; neither calls back into the other.
            try withoutActuallyEscaping(body) { body in
                try read { entity, key, item in
                    guard let group = position[entity] else { return }
                    if let last, group < last.group || (group == last.group && key <= last.key) { throw OutOfOrder() }
                    last = (group, key)
                    try body(item, order[group])
                }
            }
        case .perEntity:
            for step in order { try onePass(read, of: step, body) }
        }
    }

    /// One pass over the file for the records of `step`'s source entity, which must come in key order.
    private func onePass<Item>(_ read: FileRead<Item>, of step: MigrationRecordMapper.EntityStep,
                               _ body: (Item, MigrationRecordMapper.EntityStep) throws -> Void) throws {
        var last: Int64?
        try withoutActuallyEscaping(body) { body in
            try read { entity, key, item in
                guard entity == step.source.name else { return }
                if let last, key <= last { throw OutOfOrder() }
                last = key
                try body(item, step)
            }
        }
    }

    /// One pass over the file per entity for the records it keeps, then one per block of inserted records of that
    /// entity: inserted records have keys above every kept one, in the order of their creators.
    private func forEachRecordInserting(_ insertions: MigrationInsertions, _ body: (Record, MigrationRecordMapper.EntityStep) throws -> Void,
                                        inserted: (Record) throws -> Void) throws {
        for entity in mapper.destination.entities where !entity.isAbstract {
            if let step = mapper.steps[entity.name] { try onePass(records, of: step, body) }
            for block in insertions.blocksByRoot[entity.rootName] ?? [] {
                guard let step = mapper.destinationNames[block.sourceEntity].flatMap({ mapper.steps[$0] }) else { continue }
                try backend.readStore(at: url) { element in
                    guard case .record(let r) = element, r.entity == block.sourceEntity else { return }
                    for record in try mapper.migrateInserting(r, with: step).inserted where record.entity == entity.name {
                        try inserted(record)
                    }
                }
            }
        }
    }
}
