import CLMDB
import Foundation
import StoreAPI

/// Walks every database of a store in one read transaction and decodes everything: records, uniqueness indexes,
/// the global-ID index, key allocators and history, checking that they agree with each other.
enum IntegrityChecker {
    /// Reports stop after this many problems (a damaged store can have millions).
    static let maxProblems = 1000

    static func check(_ url: URL) throws -> [String] {
        let inspection = LMDBStoreInspector.inspect(url)
        guard case .store(let location, _, let info) = inspection else {
            throw LMDBStoreInspector.refusal(inspection, url: url) ?? StoreError.storeNotFound(url)
        }
        try LMDBStoreInspector.checkFormat(info, location: location)
        let opened = try LMDBStoreOpener.acquire(url, options: StoreOptions(isReadOnly: true, createIfMissing: false), creating: nil)
        defer { EnvironmentRegistry.release(opened.environment) }
        let env = opened.environment
        let layout = env.layout ?? opened.layout
        do {
            return try env.read { txn in
                var walk = Walk(txn: txn, env: env, layout: layout, file: location.dataFile)
                walk.run()
                return walk.report()
            }
        } catch let f as LMDBFailure {
            throw f.storeError(url)
        }
    }

    private struct Walk {
        let txn: LMDBTransaction
        let env: LMDBEnvironment
        let layout: LMDBLayout
        let file: URL
        var problems: [String] = []
        var dropped = 0
        /// Global ID → where the records say it is.
        var globalIDs: [UUID: (root: String, primaryKey: Int64)] = [:]

        init(txn: LMDBTransaction, env: LMDBEnvironment, layout: LMDBLayout, file: URL) {
            self.txn = txn
            self.env = env
            self.layout = layout
            self.file = file
        }

        var reader: LMDBRecordReader { LMDBRecordReader(txn: txn, env: env, layout: layout, file: file) }

        mutating func note(_ problem: String) {
            if problems.count < IntegrityChecker.maxProblems { problems.append(problem) } else { dropped += 1 }
        }

        func report() -> [String] {
            dropped > 0 ? problems + ["… and \(dropped) more problems"] : problems
        }

        /// Runs one part of the walk; an engine error ends that part and is reported.
        mutating func part(_ name: String, _ body: (inout Walk) throws -> Void) {
            do { try body(&self) } catch { note("\(name): \(error)") }
        }

        mutating func run() {
            part("metadata") { w in try w.checkMetadata() }
            for root in layout.schema.rootEntities {
                part("records of \(root.name)") { w in try w.checkRecords(root: root.name) }
            }
            for index in layout.indexes {
                part("index \(index.databaseName)") { w in try w.checkIndex(index) }
            }
            part("global-ID index") { w in try w.checkGlobalIDs() }
            part("history") { w in try w.checkHistory() }
            part("database list") { w in try w.checkDatabaseList() }
        }

        mutating func checkMetadata() throws {
            let meta = try env.requireDatabase(DatabaseName.meta)
            guard let json = try txn.get(meta, key: MetaKey.metadata) else { return note("metadata: missing") }
            do {
                let stored = try StoreMetadata.decode(Data(json), url: file)
                if stored != layout.metadata { note("metadata: differs from the metadata the store was opened with") }
            } catch { note("metadata: \(error)") }
            if try txn.get(meta, key: MetaKey.entityIDs) == nil { note("metadata: the entity ID table is missing") }
        }

        mutating func checkRecords(root: String) throws {
            guard let dbi = reader.recordsDatabase(root) else { return note("records of \(root): the database is missing") }
            var highest: Int64?
            var entries: [(Int64, [UInt8])] = []
            let txn = self.txn
            try txn.withCursor(dbi) { cursor in
                try cursor.forEach(from: try cursor.move(MDB_FIRST)) { key, value in
                    guard let pk = OrderedKey.decode(key) else {
                        note("records of \(root): a key is \(key.count) bytes, not 8")
                        return true
                    }
                    highest = pk
                    entries.append((pk, Array(value)))
                    // Decode in batches so memory stays bounded for large stores.
                    if entries.count >= 4096 {
                        try checkBatch(entries, root: root)
                        entries.removeAll(keepingCapacity: true)
                    }
                    return true
                }
            }
            try checkBatch(entries, root: root)
            let keys = try env.requireDatabase(DatabaseName.keys)
            if let highest, let next = try KeyAllocator.stored(txn, keys, root: root), next <= highest {
                note("key allocator of \(root): next key \(next) is not above the largest key \(highest)")
            }
        }

        mutating func checkBatch(_ entries: [(Int64, [UInt8])], root: String) throws {
            for (pk, bytes) in entries {
                let record: Record
                do {
                    record = try bytes.withUnsafeBytes { try reader.decode($0, primaryKey: pk, root: root) }
                } catch {
                    note("\(error)")
                    continue
                }
                guard let entity = layout.schema.entity(named: record.entity), entity.rootName == root else {
                    note("record \(root)/p\(pk): entity \(record.entity) does not belong to \(root)")
                    continue
                }
                for (i, a) in entity.attributes.enumerated() where !record.attributes[i].fits(a.type) {
                    note("record \(record.key): \(a.name) holds a \(record.attributes[i].type?.rawValue ?? "?"), not a \(a.type.rawValue)")
                }
                if let other = globalIDs[record.globalID] {
                    note("record \(record.key): global ID \(record.globalID.uuidString) is also used by \(other.root)/p\(other.primaryKey)")
                }
                globalIDs[record.globalID] = (root, pk)
                for index in layout.indexesByEntity[entity.name] ?? [] {
                    let values = index.attributes.compactMap { entity.attributeIndex($0).map { record.attributes[$0] } }
                    guard let key = RecordCodec.indexKey(values) else { continue }
                    let indexed = try reader.indexedKey(index, key: key)
                    if indexed != record.primaryKey {
                        note("record \(record.key): index \(index.databaseName) gives \(indexed.map { "p\($0)" } ?? "nothing") for its values")
                    }
                }
            }
        }

        mutating func checkIndex(_ index: UniqueIndex) throws {
            guard let dbi = env.database(index.databaseName) else { return note("index \(index.databaseName): the database is missing") }
            guard let owner = layout.schema.entity(named: index.owner) else { return }
            var entries: [([UInt8], Int64?)] = []
            try txn.withCursor(dbi) { cursor in
                try cursor.forEach(from: try cursor.move(MDB_FIRST)) { key, value in
                    entries.append((Array(key), OrderedKey.decode(value)))
                    return true
                }
            }
            for (key, pk) in entries {
                guard let pk else {
                    note("index \(index.databaseName): an entry does not hold an 8-byte key")
                    continue
                }
                guard let record = try reader.record(pk, root: owner.rootName),
                    let entity = layout.schema.entity(named: record.entity)
                else {
                    note("index \(index.databaseName): entry for p\(pk), which does not exist")
                    continue
                }
                let values = index.attributes.compactMap { entity.attributeIndex($0).map { record.attributes[$0] } }
                if RecordCodec.indexKey(values) != key {
                    note("index \(index.databaseName): entry for \(record.key) does not match its values")
                }
            }
        }

        mutating func checkGlobalIDs() throws {
            let dbi = try env.requireDatabase(DatabaseName.globalIDs)
            var indexed = 0
            var mismatches: [String] = []
            try txn.withCursor(dbi) { cursor in
                try cursor.forEach(from: try cursor.move(MDB_FIRST)) { key, value in
                    indexed += 1
                    guard key.count == 16, let entry = GlobalIDEntry.decode(value, layout: layout) else {
                        mismatches.append("global-ID index: an entry is malformed")
                        return true
                    }
                    var t: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
                    withUnsafeMutableBytes(of: &t) { $0.copyMemory(from: key) }
                    let id = UUID(uuid: t)
                    if let seen = globalIDs[id], seen.root == entry.entity.rootName, seen.primaryKey == entry.primaryKey { return true }
                    mismatches.append("global-ID index: \(id.uuidString) points to \(entry.entity.name)/p\(entry.primaryKey), which does not carry it")
                    return true
                }
            }
            for m in mismatches { note(m) }
            if indexed != globalIDs.count {
                note("global-ID index: \(indexed) entries for \(globalIDs.count) records")
            }
        }

        mutating func checkHistory() throws {
            let dbi = try env.requireDatabase(DatabaseName.history)
            var bad: [String] = []
            try txn.withCursor(dbi) { cursor in
                try cursor.forEach(from: try cursor.move(MDB_FIRST)) { key, value in
                    let token = OrderedKey.decode(key)
                    do {
                        let t = try HistoryTransaction.decode(Data(value), url: file)
                        if t.token != token { bad.append("history: entry under token \(token.map(String.init) ?? "?") says \(t.token)") }
                    } catch {
                        bad.append("history: entry \(token.map(String.init) ?? "?") is unreadable")
                    }
                    return true
                }
            }
            for b in bad { note(b) }
        }

        /// Databases of hierarchies or constraints the schema does not have.
        mutating func checkDatabaseList() throws {
            let expected = Set(layout.databaseNames)
            var unknown: [String] = []
            // MAIN_DBI: the main database lists the named ones.
            try txn.withCursor(1) { cursor in
                try cursor.forEach(from: try cursor.move(MDB_FIRST)) { key, _ in
                    let name = String(decoding: key, as: UTF8.self)
                    if !expected.contains(name), name.hasPrefix("records:") || name.hasPrefix("unique:") { unknown.append(name) }
                    return true
                }
            }
            for name in unknown { note("database \(name) belongs to no entity of the schema") }
        }
    }
}
