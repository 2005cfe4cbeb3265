import Foundation
import StoreAPI

/// What an application does through a context — insert the whole dataset with its relationships, fetch by object
/// ID, fetch with a predicate, open a large store — on each backend, beside the engine doing the same storage work
/// directly where such a reference exists.
enum ContextSections {
    static let sample = 10_000

    // MARK: Insert

    /// Inserts the whole dataset through a context into a new store — entity by entity, linking each book to its
    /// author and tags and each review to its book through the managed objects (inverses maintained by the
    /// context), saving and resetting every 10,000 records (an atomic store saves once: each of its saves writes
    /// the whole file). Values are generated before each batch's clock starts. Reference: the engine writing
    /// exactly the stored rows (the convert section's reference write).
    static func insert(_ env: BenchEnvironment, referenceWrites: [String: Timing]) throws {
        for type in env.types {
            let atomic = (try BackendRegistry.shared.backend(for: type)) is any AtomicStoreBackend
            var first = true
            let seconds = try env.median {
                let url = env.destination("inserted.\(type)")
                defer { env.remove(url) }
                let s: Timing
                do { s = try insertAll(env.dataset, into: url, type: type, batch: atomic ? Int.max : 10_000) } catch {
                    throw ChildProcess.Failure(description: "insert through a context into a \(type) store: \(error)")
                }
                if first {
                    env.verify("insert through context (\(type))", copy: url, against: type, comparesMetadata: false)
                    first = false
                }
                return s
            }
            env.table.add(.timed("insert through context (\(type))", records: env.total, ours: seconds, reference: referenceWrites[type],
                                 referenceName: ConvertSection.writeName(type) + (atomic ? "; ours: 1 save" : "; ours: saves of 10k")))
        }
    }

    static func insertAll(_ dataset: Dataset, into url: URL, type: String, batch: Int) throws -> Timing {
        let coordinator = StoreCoordinator(schema: dataset.schema)
        let loaded = try coordinator.addStore(StoreDescription(url: url, type: type))
        defer { try? coordinator.removeStore(loaded) }
        let context = coordinator.newContext()
        var cache: [ObjectID: ManagedObject] = [:]
        // Keys come from the store's allocator (which may leave gaps), so remember each inserted record's key.
        var keys: [String: [Int64]] = [:]
        func object(_ entity: String, _ index: Int) throws -> ManagedObject {
            let id = ObjectID(storeUUID: loaded.identifier, entity: entity, primaryKey: keys[entity]?[index] ?? -1)
            if let o = cache[id] { return o }
            let o = try context.object(with: id)
            cache[id] = o
            return o
        }
        var seconds = Timing(cpu: 0, wall: 0)
        for name in Dataset.entityNames {
            let n = dataset.count(of: name)
            var start = 0
            while start < n {
                let end = batch == .max ? n : min(n, start + batch)
                let values = (start..<end).map { dataset.values(name, $0) }
                let ids = (start..<end).map { dataset.globalID(name, $0) }
                let (_, s) = try Measure.timing {
                    for i in start..<end {
                        let o = try context.insert(name, values[i - start], globalID: ids[i - start])
                        cache[o.objectID] = o
                        keys[name, default: []].append(o.objectID.primaryKey)
                        switch name {
                        case "Book":
                            try o.setObject(try object("Author", dataset.authorOf(book: i)), forKey: "author")
                            try o.setObjects(try dataset.tagsOf(book: i).map { try object("Tag", $0) }, forKey: "tags")
                        case "Review":
                            try o.setObject(try object("Book", dataset.bookOf(review: i)), forKey: "book")
                        default:
                            break
                        }
                    }
                    if batch != .max {
                        try context.save()
                        context.reset()
                        cache.removeAll(keepingCapacity: true)
                    }
                }
                seconds = seconds + s
                start = end
            }
        }
        let (_, s) = try Measure.timing { try context.save() }
        return seconds + s
    }

    // MARK: Fetch by ID

    /// Fetches a fixed sample of books one by one by object ID (`object(with:)`, each a fresh lookup), reading a
    /// value of each. Reference: a prepared `SELECT * … WHERE _pk = ?` on the same file; `mdb_get` in one read
    /// transaction per key on the same environment. The XML store is in memory once open: no engine reference.
    static func fetchByID(_ env: BenchEnvironment) throws {
        let keys = sampleKeys(env.dataset.books)
        for type in env.types {
            let url = env.source(type)
            let coordinator = StoreCoordinator(schema: env.dataset.schema)
            let loaded = try coordinator.addStore(StoreDescription(url: url, type: type, options: StoreOptions(isReadOnly: true, createIfMissing: false)))
            defer { try? coordinator.removeStore(loaded) }
            var found = 0
            let ours = try env.median {
                let context = coordinator.newContext()
                found = 0
                let (_, s) = try Measure.timing {
                    for k in keys {
                        let o = try context.object(with: ObjectID(storeUUID: loaded.identifier, entity: "Book", primaryKey: k))
                        if case .string = try o.value(forKey: "title") { found += 1 }
                    }
                }
                return s
            }
            if found != keys.count { env.fail("fetch by ID (\(type)): found \(found) of \(keys.count)") }
            var reference: Timing?
            var refName = "none: the store is in memory once open"
            switch type {
            case "sqlite":
                reference = try env.median { try Measure.timing { _ = try RefSQLite.fetch(url.path, table: "E_Book", keys: keys) }.1 }
                refName = "prepared SELECT * WHERE _pk = ?"
            case "lmdb":
                reference = try env.median { try Measure.timing { _ = try RefLMDB.fetch(url.path, database: "records:Book", keys: keys) }.1 }
                refName = "mdb_get, 1 read txn each"
            default:
                break
            }
            env.table.add(.timed("fetch by ID (\(type))", records: keys.count, ours: ours, reference: reference, referenceName: refName))
        }
    }

    /// A fixed, shuffled sample of book keys spread over the whole store.
    static func sampleKeys(_ books: Int) -> [Int64] {
        let n = min(sample, books)
        let step = max(1, books / n)
        return (0..<n).map { Int64($0 * step + 1) }.shuffledDeterministically()
    }

    // MARK: Predicate fetch

    static let predicate = "pages >= 100 AND pages < 120 AND inPrint == YES"
    static let predicateSQL = "SELECT * FROM \"E_Book\" WHERE \"pages\" >= 100 AND \"pages\" < 120 AND \"inPrint\" = 1"

    /// The books the predicate matches, computed from the generator.
    static func expectedMatches(_ dataset: Dataset) -> Int {
        (0..<dataset.books).reduce(0) { n, i in
            let pages = Dataset.pages(i)
            return n + (pages >= 100 && pages < 120 && Dataset.inPrint(i) ? 1 : 0)
        }
    }

    /// A selective predicate (about 1 % of books) on unindexed attributes, through a context. Reference: the same
    /// filter as SQL on the same file; a cursor walk over the books' database (the least an unindexed filter must
    /// read) for LMDB; none for the in-memory XML store.
    static func predicateFetch(_ env: BenchEnvironment, expected: Int) throws {
        let request = FetchRequest(entity: "Book", predicate: try FetchPredicate(predicate))
        for type in env.types {
            let url = env.source(type)
            let coordinator = StoreCoordinator(schema: env.dataset.schema)
            let loaded = try coordinator.addStore(StoreDescription(url: url, type: type, options: StoreOptions(isReadOnly: true, createIfMissing: false)))
            defer { try? coordinator.removeStore(loaded) }
            var matches = 0
            let ours = try env.median {
                let context = coordinator.newContext()
                let (objects, s) = try Measure.timing { try context.fetch(request) }
                matches = objects.count
                return s
            }
            if matches != expected { env.fail("predicate fetch (\(type)): \(matches) books, expected \(expected)") }
            var reference: Timing?
            var refName = "none: evaluated in memory"
            switch type {
            case "sqlite":
                var rows = 0
                reference = try env.median { try Measure.timing { rows = try RefSQLite.query(url.path, predicateSQL) }.1 }
                if rows != expected { env.fail("predicate reference SQL: \(rows) rows, expected \(expected)") }
                refName = "the same filter as SQL (full scan)"
            case "lmdb":
                reference = try env.median { try Measure.timing { _ = try RefLMDB.walk(url.path, database: "records:Book") }.1 }
                refName = "mdb_cursor walk of the books, no decoding"
            default:
                break
            }
            env.table.add(.timed("predicate fetch (\(type)), \(matches) hits", records: env.dataset.books, ours: ours,
                                 reference: reference, referenceName: refName))
        }
    }

    // MARK: Open

    /// Opening a large store and fetching its first book, in a fresh process (with its peak RSS). Reference:
    /// `sqlite3_open` + one prepared SELECT; `mdb_env_open` + one `mdb_get`; for the atomic XML store, which
    /// must read the whole file to open, an `xmlTextReader` pass over it.
    static func open(_ env: BenchEnvironment) throws {
        for type in env.types {
            let path = env.source(type).path
            var rss: [Double] = []
            var anon: [Double] = []
            let ours = try env.median {
                let o = try ChildProcess.worker(["open", type, path])
                if o.result["found"] != "1" { env.fail("open (\(type)): first book not found") }
                rss.append(Double(o.peakRSS))
                anon.append(Double(o.peakAnon))
                return o.reportedTiming
            }
            let reference = try env.median {
                let o = try ChildProcess.worker(["ref-open", type, path])
                return o.reportedTiming
            }
            let refName = switch type {
            case "sqlite": "sqlite3_open + SELECT by _pk"
            case "lmdb": "mdb_env_open + mdb_get"
            default: "xmlTextReader pass (an atomic store reads it all)"
            }
            env.table.add(.timed("open + first fetch (\(type))", records: env.total, ours: ours, reference: reference,
                                 referenceName: refName, peakRSS: Int(Measure.median(rss)), peakAnon: Int(Measure.median(anon))))
        }
    }
}
