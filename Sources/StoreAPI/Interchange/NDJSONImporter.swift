import Foundation

/// Reads an NDJSON interchange file (see ``NDJSONExporter`` for the format) into a store, all or nothing.
///
/// The whole file is checked before anything is written, and every problem is reported with its line number as an
/// ``InterchangeError``: malformed JSON, unknown or abstract entities, unknown attribute or relationship keys, values
/// of the wrong type, bad or duplicate ids, an id the store already has, references to ids that are neither in the
/// file nor in the store or that name a record of the wrong entity, a to-one given an array, required attributes
/// without a value or default, required relationships left empty, min/max counts, and uniqueness constraints (within
/// the file and against the store). Only then are primary keys allocated and every record written in **one**
/// ``PersistentStore/save(_:)``, so a bad line anywhere leaves the store exactly as it was.
///
/// Relationships may be given from either side or both: the importer fills in the inverse of every relationship a
/// line names (appending, in line order, to an ordered to-many the line of the target left out), and refuses a file
/// whose two sides contradict each other. Records already in the store gain the inverse links of new records
/// (a tag's `books` when a new book names the tag), but importing never re-points a link a stored record already
/// has: the importer adds records, it does not modify existing ones.
///
/// A line without `"id"` gets a new global ID. Lines may come in any order (a book may precede its author).
public struct NDJSONImporter {
    /// What an import wrote.
    public struct Summary: Sendable, Hashable {
        /// New records.
        public var inserted: Int
        /// Stored records that gained inverse links to new records.
        public var updated: Int
        /// New records per entity.
        public var insertedByEntity: [String: Int]

        /// Creates a summary.
        public init(inserted: Int, updated: Int, insertedByEntity: [String: Int]) {
            self.inserted = inserted
            self.updated = updated
            self.insertedByEntity = insertedByEntity
        }
    }

    /// The most problems one failed import reports (the rest are counted).
    public var maxProblems: Int
    /// When set, the import is recorded as one history transaction with this author (for stores that track
    /// history; the store's description decides that, so the caller does).
    public var historyAuthor: String?
    /// Called while reading (``TransferProgress/recordsDone`` counts lines read, the total is unknown) and once
    /// before writing; throw to cancel (nothing is written).
    public var progress: ProgressHandler?

    /// Creates an importer.
    public init(maxProblems: Int = 100, historyAuthor: String? = nil, progress: ProgressHandler? = nil) {
        self.maxProblems = maxProblems
        self.historyAuthor = historyAuthor
        self.progress = progress
    }

    /// Imports the file at `url`.
    @discardableResult
    public func importRecords(fromFileAt url: URL, into store: any PersistentStore) throws -> Summary {
        let handle: FileHandle
        do { handle = try FileHandle(forReadingFrom: url) } catch {
            var isDirectory: ObjCBool = false
            let exists = FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory)
            throw InterchangeError(file: url.path, line: 0, message: !exists ? "no such file"
                : isDirectory.boolValue ? "is a directory, not an NDJSON file" : "cannot open: \(error.localizedDescription)")
        }
        defer { try? handle.close() }
        return try importRecords(from: handle, named: url.path, into: store)
    }

    /// Imports from an open handle (a file or a pipe such as standard input), read in a single pass.
    /// `name` names the input in errors.
    @discardableResult
    public func importRecords(from handle: FileHandle, named name: String, into store: any PersistentStore) throws -> Summary {
        var reader = LineReader(handle: handle, name: name)
        return try run(&reader, name: name, into: store)
    }

    /// Imports NDJSON text held in memory.
    @discardableResult
    public func importRecords(from data: Data, named name: String = "<data>", into store: any PersistentStore) throws -> Summary {
        var reader = LineReader(data: data)
        return try run(&reader, name: name, into: store)
    }

    private func run(_ reader: inout LineReader, name: String, into store: any PersistentStore) throws -> Summary {
        let metadata = store.metadata
        let schema = metadata.schema
        let members = try schema.entities(inConfiguration: metadata.configuration)
        let parser = NDJSONLineParser(schema: schema, allowed: Set(members.map(\.name)), configuration: metadata.configuration)
        var problems = ProblemList(file: name, limit: maxProblems)

        // 1. Read and check every line on its own.
        var records: [ParsedRecord] = []
        var lineOfID: [UUID: Int] = [:]
        while let bytes = try reader.nextLine() {
            let line = reader.lineNumber
            if bytes.allSatisfy({ $0 == 0x20 || $0 == 0x09 }) { continue }
            guard let record = parser.parse(bytes, line: line, problems: &problems) else { continue }
            // Look up before inserting: a third use of an id must still name the first line, not an index that was
            // never appended.
            if let first = lineOfID[record.globalID] {
                problems.add(line: line, "id \(record.globalID.uuidString) is used twice (first on line \(records[first].line))")
                continue
            }
            lineOfID[record.globalID] = records.count
            records.append(record)
            if line % 50_000 == 0 { try report(line, nil) }
        }
        try problems.throwIfAny()
        try report(records.count, records.count)

        // 2. Check the records against each other and against the store, then work out every relationship.
        var plan = ImportPlan(schema: schema, records: records, indexOfID: lineOfID, file: name, maxProblems: maxProblems)
        try plan.resolve(against: store)

        // 3. Write: allocate keys and save once.
        var changes = try plan.changes(allocatingKeysIn: store)
        if let historyAuthor {
            var history = changes.inserted.map {
                HistoryChange(kind: .insert, entity: $0.entity, primaryKey: $0.primaryKey, globalID: $0.globalID)
            }
            history += plan.updatedKeys(changes.updated).map {
                HistoryChange(kind: .update, entity: $0.record.entity, primaryKey: $0.record.primaryKey,
                              globalID: $0.record.globalID, changedKeys: $0.keys)
            }
            if !history.isEmpty {
                changes.history = [.saved(at: Date(), author: historyAuthor, contextName: nil, changes: history)]
            }
        }
        if !changes.isEmpty { try store.save(changes) }
        var byEntity: [String: Int] = [:]
        for r in changes.inserted { byEntity[r.entity, default: 0] += 1 }
        return Summary(inserted: changes.inserted.count, updated: changes.updated.count, insertedByEntity: byEntity)
    }

    private func report(_ done: Int, _ total: Int?) throws {
        try StoreTransfer.report(to: progress, done, total, nil)
    }
}
