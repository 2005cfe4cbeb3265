import Foundation

/// Writes a store's records as NDJSON, the interchange format: one JSON object per line.
///
/// ```json
/// {"entity":"Book","id":"0F6E…","attributes":{"title":"Dune","pages":412,"published":"1965-08-01T00:00:00Z","cover":"iVBO…"},"relationships":{"author":"9A1C…","tags":["77B2…","D0E4…"]}}
/// ```
///
/// Every stored attribute is written, `null` included, in the JSON form of ``StoreValue/jsonObject`` (exact ISO 8601
/// dates, base64 binary, decimals as strings, bit-exact doubles); every stored relationship is written as the global
/// ID of its target (to-one, or `null`) or an array of them (to-many: in order for ordered relationships, sorted for
/// unordered ones, so two stores holding the same records export the same bytes). Both sides of a relationship appear,
/// so ``NDJSONImporter`` rebuilds the store's records exactly — global IDs, values, relationships and their order.
/// Primary keys, metadata and history are not part of the format.
///
/// The store is read entity by entity in pages (``PersistentStore/scan(entity:after:limit:)``) and related keys are
/// resolved to global IDs once per page, so memory stays bounded however large the store is.
public struct NDJSONExporter {
    /// Records per page.
    public var batchSize: Int
    /// Entities to export (an abstract or parent entity stands for its whole hierarchy); `nil` for all.
    public var entities: [String]?
    /// Called after every page with the records written so far; throw to stop.
    public var progress: ProgressHandler?

    /// Creates an exporter.
    public init(batchSize: Int = 5_000, entities: [String]? = nil, progress: ProgressHandler? = nil) {
        self.batchSize = max(1, batchSize)
        self.entities = entities
        self.progress = progress
    }

    /// Writes every record of `store` to `handle` (a file, a pipe, standard output).
    ///
    /// - Returns: the number of records written.
    @discardableResult
    public func export(_ store: any PersistentStore, to handle: FileHandle) throws -> Int {
        try export(store) { chunk in
            do { try handle.write(contentsOf: chunk) } catch {
                throw StoreError.io(nil, operation: "writing the export", reason: error.localizedDescription)
            }
        }
    }

    /// Writes every record of `store` to a new file at `url`, atomically: the file appears complete or not at all.
    ///
    /// - Returns: the number of records written.
    @discardableResult
    public func export(_ store: any PersistentStore, toFileAt url: URL) throws -> Int {
        var written = 0
        try AtomicFile.write(to: url) { staging in
            guard FileManager.default.createFile(atPath: staging.path, contents: nil),
                  let handle = FileHandle(forWritingAtPath: staging.path)
            else { throw StoreError.io(staging, operation: "creating the export file", reason: "cannot create the file") }
            defer { try? handle.close() }
            written = try export(store, to: handle)
        }
        return written
    }

    /// Produces the NDJSON text of every record of `store` in chunks of about a megabyte, handing each to `write`.
    ///
    /// - Returns: the number of records written.
    @discardableResult
    public func export(_ store: any PersistentStore, chunks write: (Data) throws -> Void) throws -> Int {
        let schema = store.metadata.schema
        let selected = try selectedEntities(in: schema, store: store)
        let total = progress == nil ? nil : try selected.reduce(0) {
            $0 + (try store.count(FetchRequest(entity: $1.name, includesSubentities: false)))
        }
        let resolver = GlobalIDResolver(store: store, schema: schema)
        var buffer = JSONTextBuffer()
        let flushSize = 1 << 20
        var done = 0
        for entity in selected {
            let roots = resolver.destinationRoots(of: entity)
            try KeyedPages.forEach(
                size: batchSize, next: { try store.scan(entity: entity.name, after: $0, limit: batchSize) },
                count: \.count, lastKey: { $0.last?.primaryKey }
            ) { page in
                try resolver.prepare(page: page, entity: entity)
                for record in page {
                    try Self.appendLine(record, entity: entity, roots: roots, resolver: resolver, to: &buffer)
                    if buffer.count >= flushSize {
                        try write(Data(buffer.bytes))
                        buffer.removeAll()
                    }
                }
                done += page.count
                try StoreTransfer.report(to: progress, done, total, entity.name)
            }
        }
        if buffer.count > 0 { try write(Data(buffer.bytes)) }
        return done
    }

    /// The concrete entities to export, in schema order.
    private func selectedEntities(in schema: Schema, store: any PersistentStore) throws -> [Entity] {
        let inStore = try schema.entities(inConfiguration: store.metadata.configuration).filter { !$0.isAbstract }
        guard let entities else { return inStore }
        var wanted: Set<String> = []
        for name in entities {
            let e = try schema.requireEntity(name)
            wanted.formUnion(e.hierarchyNames)
        }
        return inStore.filter { wanted.contains($0.name) }
    }

    static func appendLine(_ record: Record, entity: Entity, roots: [String], resolver: GlobalIDResolver,
                           to out: inout JSONTextBuffer) throws {
        guard record.attributes.count == entity.attributes.count, record.relationships.count == entity.relationships.count else {
            throw StoreError.corruptStore(resolver.store.url ?? URL(fileURLWithPath: "/"),
                reason: "record \(record.key) does not match the layout of entity '\(entity.name)'")
        }
        out.raw("{\"entity\":")
        out.string(entity.name)
        out.raw(",\"id\":")
        out.uuid(record.globalID)
        out.raw(",\"attributes\":{")
        for (i, attribute) in entity.attributes.enumerated() {
            if i > 0 { out.raw(0x2C) }
            out.string(attribute.name)
            out.raw(0x3A)
            out.value(record.attributes[i])
        }
        out.raw("},\"relationships\":{")
        for (i, relationship) in entity.relationships.enumerated() {
            if i > 0 { out.raw(0x2C) }
            out.string(relationship.name)
            out.raw(0x3A)
            switch record.relationships[i] {
            case .toOne(nil):
                out.raw("null")
            case .toOne(let key?):
                out.uuid(try target(key, root: roots[i], of: record, relationship: relationship, resolver: resolver))
            case .toMany(let keys):
                var ids = try keys.map { try target($0, root: roots[i], of: record, relationship: relationship, resolver: resolver) }
                // An unordered relationship's order means nothing and differs between backends; sorting it makes
                // exports of the same logical store byte-identical whatever its type.
                if !relationship.isOrdered { ids.sort(by: Self.precedes) }
                out.raw(0x5B)
                for (j, id) in ids.enumerated() {
                    if j > 0 { out.raw(0x2C) }
                    out.uuid(id)
                }
                out.raw(0x5D)
            }
        }
        out.raw("}}\n")
    }

    /// UUID order by bytes (the order of their canonical strings).
    static func precedes(_ a: UUID, _ b: UUID) -> Bool {
        withUnsafeBytes(of: a.uuid) { x in
            withUnsafeBytes(of: b.uuid) { y in x.lexicographicallyPrecedes(y) }
        }
    }

    private static func target(_ key: Int64, root: String, of record: Record, relationship: RelationshipDescription,
                               resolver: GlobalIDResolver) throws -> UUID {
        guard let id = resolver.globalID(root: root, key: key) else {
            throw StoreError.corruptStore(resolver.store.url ?? URL(fileURLWithPath: "/"),
                reason: "\(record.key).\(relationship.name) refers to \(root)/p\(key), which does not exist")
        }
        return id
    }
}
