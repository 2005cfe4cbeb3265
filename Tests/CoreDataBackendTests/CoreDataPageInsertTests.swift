@_spi(BackendKit) @testable import CoreDataBackend
import Foundation
@_spi(BackendKit) import StoreAPI
import StoreTestSupport
import Testing

/// A bulk load inserting pages binds their values straight from the page's bytes; it must leave exactly the tables a
/// bulk load saving the same records leaves.
@Suite struct CoreDataPageInsertTests {
    /// The same records, loaded entity by entity in chunks, as records into one store and as pages into another
    /// with the same store UUID: every table the model and the framework write holds the same rows, value for
    /// value and of the same storage class.
    @Test func pagesAndRecordsLoadTheSameTables() throws {
        let dir = try TemporaryDirectory("coredata-page-insert")
        defer { dir.remove() }
        let schema = try CoreDataIncrementalTests.schema.get()
        let storeUUID = UUID()
        let records = try Self.records(storeUUID: storeUUID)
        let byRecords = dir.path("Records.sqlite"), byPages = dir.path("Pages.sqlite")
        for (url, asPages) in [(byRecords, false), (byPages, true)] {
            let store = try CoreDataStoreBackend().open(
                at: url, options: StoreOptions(),
                creating: StoreMetadata(storeType: "coredata", storeUUID: storeUUID, schema: schema))
            defer { try? store.close() }
            let bulk = try #require(store as? any BulkLoadingStore)
            let sink = try #require(store as? any PageInsertingStore)
            #expect(try bulk.beginBulkLoad())
            for e in schema.entities where !e.isAbstract {
                let all = records.filter { $0.entity == e.name }.sorted { $0.primaryKey < $1.primaryKey }
                for start in stride(from: 0, to: all.count, by: 37) {
                    let chunk = Array(all[start..<min(all.count, start + 37)])
                    if asPages {
                        var page = RecordPage(entity: e.name)
                        for r in chunk { page.append(r) }
                        try sink.insert(page)
                    } else {
                        try store.save(StoreChanges(inserted: chunk))
                    }
                }
            }
            try bulk.finishBulkLoad()
        }
        let tables = try CoreDataWriteTests.rows(byRecords, "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
            .compactMap { $0.first?.text }
            .filter { $0 != "Z_METADATA" && $0 != "Z_MODELCACHE" && !$0.hasPrefix("sqlite_") }
        #expect(tables.contains("STOREKIT_GLOBALID"), "some records keep a global ID that is not the derived one")
        for table in tables {
            let want = try Self.dump(byRecords, table)
            let got = try Self.dump(byPages, table)
            #expect(!want.isEmpty || table == "Z_PRIMARYKEY", "\(table) has rows")
            #expect(got == want, "\(table)")
        }
        // And they read back as the records.
        let store = try CoreDataStoreBackend().open(at: byPages, options: StoreOptions(isReadOnly: true), creating: nil)
        defer { try? store.close() }
        for e in schema.entities where !e.isAbstract {
            let got = try store.scan(entity: e.name, after: nil, limit: .max)
            let want = records.filter { $0.entity == e.name }.sorted { $0.primaryKey < $1.primaryKey }
            #expect(got.map(\.globalID) == want.map(\.globalID), "\(e.name)")
            #expect(got.map(\.attributes) == want.map(\.attributes), "\(e.name)")
        }
    }

    /// Pages whose rows are inserted as they are read (no link into their own table) leave the tables records leave,
    /// with the entity columns of to-ones into a hierarchy, ordered positions held by key, in a map and spilled to the
    /// temporary table, and both sides of a many-to-many, whether owners come before their members or after them;
    /// in pages smaller than a multi-row insert and in pages of several (full ones, and the rest one by one), with
    /// join rows in full statements of pairs and in a padded last one.
    @Test(arguments: [["Person", "Author", "Tag", "Book", "Review"], ["Review", "Book", "Tag", "Author", "Person"]], [11, 150])
    func independentRowsLoadLikeRecords(order: [String], pageSize: Int) throws {
        let dir = try TemporaryDirectory("coredata-page-rows")
        defer { dir.remove() }
        let schema = try Self.librarySchema()
        let storeUUID = UUID()
        let records = try Self.libraryRecords(schema, storeUUID: storeUUID, books: 300)
        let byRecords = dir.path("Records.sqlite"), byPages = dir.path("Pages.sqlite")
        for (url, asPages) in [(byRecords, false), (byPages, true)] {
            let store = try CoreDataStoreBackend().open(
                at: url, options: StoreOptions(),
                creating: StoreMetadata(storeType: "coredata", storeUUID: storeUUID, schema: schema))
            defer { try? store.close() }
            let bulk = try #require(store as? any BulkLoadingStore)
            let sink = try #require(store as? any PageInsertingStore)
            // Waiting positions in all three places: by key for reviews 1-45, then 7 in the map, the rest in the
            // temporary table. The records' load finishes the general way (every entity column filled by a
            // statement, the join table read back to be checked), the pages' only where its rows need it.
            let coreData = try #require(store as? CoreDataStore)
            if asPages {
                coreData.pendingPositionKeyLimit = 45
                coreData.pendingPositionLimit = 7
            } else {
                coreData.finishesBulkLoadInFull = true
            }
            #expect(try bulk.beginBulkLoad())
            for name in order {
                let all = records.filter { $0.entity == name }.sorted { $0.primaryKey < $1.primaryKey }
                for start in stride(from: 0, to: all.count, by: pageSize) {
                    let chunk = Array(all[start..<min(all.count, start + pageSize)])
                    if asPages {
                        var page = RecordPage(entity: name)
                        for r in chunk { page.append(r) }
                        try sink.insert(page)
                    } else {
                        try store.save(StoreChanges(inserted: chunk))
                    }
                }
            }
            try bulk.finishBulkLoad()
        }
        let tables = try CoreDataWriteTests.rows(byRecords, "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
            .compactMap { $0.first?.text }
            .filter { $0 != "Z_METADATA" && $0 != "Z_MODELCACHE" && !$0.hasPrefix("sqlite_") }
        #expect(tables.contains("STOREKIT_GLOBALID"))
        for table in tables {
            let want = try Self.dump(byRecords, table)
            #expect(!want.isEmpty, "\(table) has rows")
            #expect(try Self.dump(byPages, table) == want, "\(table)")
        }
        // The book's entity column of its author (`Z<n>_AUTHOR`), set wherever the author is.
        let entityColumn = try #require(try CoreDataWriteTests.rows(byPages, "PRAGMA table_info(ZBOOK)")
            .compactMap { $0.count > 1 ? $0[1].text : nil }.first { $0.hasSuffix("_AUTHOR") && $0 != "ZAUTHOR" })
        let unset = try CoreDataWriteTests.rows(
            byPages, "SELECT (SELECT count(*) FROM ZBOOK WHERE ZAUTHOR IS NOT NULL AND \(entityColumn) IS NULL), "
                + "(SELECT count(*) FROM ZREVIEW WHERE ZBOOK IS NOT NULL AND Z_FOK_BOOK IS NULL)")
        #expect(unset.first?.map(\.int) == [0, 0], "every entity column and position is set")
        let store = try CoreDataStoreBackend().open(at: byPages, options: StoreOptions(isReadOnly: true), creating: nil)
        defer { try? store.close() }
        for name in order {
            let got = try store.scan(entity: name, after: nil, limit: .max)
            let want = records.filter { $0.entity == name }.sorted { $0.primaryKey < $1.primaryKey }
            #expect(got == want, "\(name)")
        }
    }

    /// People (every other one an `Author`, sharing the `ZPERSON` table), the books they wrote (a to-one with an
    /// entity column), each book's ordered reviews and its tags (a many-to-many).
    static func librarySchema() throws -> Schema {
        let json = """
            { "entities": [
              { "name": "Person", "attributes": [ { "name": "name", "type": "string" } ],
                "relationships": [ { "name": "books", "destination": "Book", "inverse": "author", "toMany": true } ] },
              { "name": "Author", "parent": "Person", "attributes": [ { "name": "followers", "type": "integer64" } ] },
              { "name": "Book", "attributes": [ { "name": "title", "type": "string" } ],
                "relationships": [ { "name": "author", "destination": "Person", "inverse": "books" },
                                   { "name": "reviews", "destination": "Review", "inverse": "book", "toMany": true,
                                     "ordered": true },
                                   { "name": "tags", "destination": "Tag", "inverse": "books", "toMany": true } ] },
              { "name": "Review", "attributes": [ { "name": "stars", "type": "integer16" } ],
                "relationships": [ { "name": "book", "destination": "Book", "inverse": "reviews" } ] },
              { "name": "Tag", "attributes": [ { "name": "label", "type": "string" } ],
                "relationships": [ { "name": "books", "destination": "Book", "inverse": "tags", "toMany": true } ] }
            ] }
            """
        return try Schema(jsonData: Data(json.utf8))
    }

    /// A third as many people as `books` (every 7th book without an author), one and a half times as many reviews
    /// listed by their books in descending key order, 5 tags; a third of the records keep a global ID that is not
    /// the derived one.
    static func libraryRecords(_ schema: Schema, storeUUID: UUID, books: Int = 60) throws -> [Record] {
        let (people, reviews, tags) = (books / 3, books * 3 / 2, 5)
        func author(_ b: Int) -> Int64? { b % 7 == 0 ? nil : Int64(b % people + 1) }
        func tagsOf(_ b: Int) -> [Int64] { [Int64(b % tags + 1), Int64((b + 2) % tags + 1)].sorted() }
        func record(_ name: String, _ key: Int) throws -> Record {
            let e = try schema.requireEntity(name)
            let gid = key % 3 == 0 ? UUID() : CoreDataGlobalID.make(store: storeUUID, root: e.rootName, primaryKey: Int64(key))
            return e.newRecord(primaryKey: Int64(key), globalID: gid)
        }
        var out: [Record] = []
        for p in 0..<people {
            let e = try schema.requireEntity(p % 2 == 0 ? "Author" : "Person")
            var r = try record(e.name, p + 1)
            try CoreDataIncrementalTests.set(&r, e, "name", .string("Person \(p)"))
            if e.name == "Author" { try CoreDataIncrementalTests.set(&r, e, "followers", .integer64(Int64(p * 1000))) }
            try CoreDataIncrementalTests.link(&r, e, "books", .toMany((0..<books).filter { author($0) == Int64(p + 1) }.map { Int64($0 + 1) }))
            out.append(r)
        }
        let book = try schema.requireEntity("Book")
        for b in 0..<books {
            var r = try record("Book", b + 1)
            try CoreDataIncrementalTests.set(&r, book, "title", .string("Book \(b)"))
            try CoreDataIncrementalTests.link(&r, book, "author", .toOne(author(b)))
            try CoreDataIncrementalTests.link(&r, book, "reviews", .toMany(stride(from: b, to: reviews, by: books).reversed().map { Int64($0 + 1) }))
            try CoreDataIncrementalTests.link(&r, book, "tags", .toMany(tagsOf(b)))
            out.append(r)
        }
        let review = try schema.requireEntity("Review")
        for v in 0..<reviews {
            var r = try record("Review", v + 1)
            try CoreDataIncrementalTests.set(&r, review, "stars", .integer16(Int16(v % 5)))
            try CoreDataIncrementalTests.link(&r, review, "book", .toOne(Int64(v % books + 1)))
            out.append(r)
        }
        let tag = try schema.requireEntity("Tag")
        for t in 0..<tags {
            var r = try record("Tag", t + 1)
            try CoreDataIncrementalTests.set(&r, tag, "label", .string("tag \(t)"))
            try CoreDataIncrementalTests.link(&r, tag, "books", .toMany((0..<books).filter { tagsOf($0).contains(Int64(t + 1)) }.map { Int64($0 + 1) }))
            out.append(r)
        }
        return out
    }

    /// A page whose value does not fit its attribute is refused in a bulk load, and nothing of it is written.
    @Test func aMisfitPageInABulkLoadWritesNothing() throws {
        let dir = try TemporaryDirectory("coredata-page-misfit")
        defer { dir.remove() }
        let schema = try CoreDataIncrementalTests.schema.get()
        let url = dir.path("Misfit.sqlite")
        let store = try CoreDataStoreBackend().open(
            at: url, options: StoreOptions(), creating: StoreMetadata(storeType: "coredata", storeUUID: UUID(), schema: schema))
        defer { try? store.close() }
        let bulk = try #require(store as? any BulkLoadingStore)
        let sink = try #require(store as? any PageInsertingStore)
        #expect(try bulk.beginBulkLoad())
        let book = try schema.requireEntity("Book")
        var good = try CoreDataIncrementalTests.book(schema, 0, author: nil, tags: [])
        good.primaryKey = 1
        var bad = try CoreDataIncrementalTests.book(schema, 2, author: nil, tags: [])
        try CoreDataIncrementalTests.set(&bad, book, "pages", .string("many"))
        var page = RecordPage(entity: "Book")
        page.append(good)
        page.append(bad)
        let error = #expect(throws: StoreError.self) { try sink.insert(page) }
        #expect(String(describing: error).contains("pages"), "\(String(describing: error))")
        try bulk.finishBulkLoad()
        #expect(try store.count(FetchRequest(entity: "Book")) == 0)
    }

    /// Authors with every attribute type set (and unset), books and novels with to-ones, ordered lists and a
    /// many-to-many; every third record keeps the global ID derived from its key, the rest a random one.
    static func records(storeUUID: UUID) throws -> [Record] {
        let schema = try CoreDataIncrementalTests.schema.get()
        let author = try schema.requireEntity("Author")
        var out = try CoreDataIncrementalTests.records(books: 200)
        for i in out.indices {
            let root = try schema.requireEntity(out[i].entity).rootName
            if out[i].primaryKey % 3 == 0 {
                out[i].globalID = CoreDataGlobalID.make(store: storeUUID, root: root, primaryKey: out[i].primaryKey)
            }
            guard out[i].entity == "Author" else { continue }
            let k = out[i].primaryKey
            guard k % 4 != 0 else { continue }
            try CoreDataIncrementalTests.set(&out[i], author, "id", .uuid(UUID()))
            try CoreDataIncrementalTests.set(&out[i], author, "rating", .decimal(Decimal(string: "\(k).25") ?? 0))
            try CoreDataIncrementalTests.set(&out[i], author, "home",
                                             .uri(try #require(URL(string: k % 2 == 0 ? "https://example.com/a/\(k)" : "file:///a%20b/\(k)?q=ü"))))
            try CoreDataIncrementalTests.set(&out[i], author, "photo", .binary(k == 1 ? Data() : Data([0, 1, UInt8(k % 256)])))
            try CoreDataIncrementalTests.set(&out[i], author, "name", .string(k == 2 ? "" : "Autör \(k) ✓"))
        }
        return out
    }

    /// Every row of `table`, each column quoted by SQLite (so a value's storage class counts), in a fixed order.
    static func dump(_ url: URL, _ table: String) throws -> [String] {
        let columns = try CoreDataWriteTests.rows(url, "PRAGMA table_info(\(CoreDataSQL.quoted(table)))").compactMap { $0.count > 1 ? $0[1].text : nil }
        guard !columns.isEmpty else { return [] }
        let select = columns.map { "quote(\(CoreDataSQL.quoted($0)))" }.joined(separator: " || '|' || ")
        return try CoreDataWriteTests.rows(url, "SELECT \(select) FROM \(CoreDataSQL.quoted(table)) ORDER BY 1")
            .compactMap { $0.first?.text }
    }
}

/// A page reads a REAL decimal column as the record path does: the decimal the double's shortest text spells, in
/// its canonical text — the fast path for plain text gives exactly what parsing and writing it again gives.
@Suite struct CoreDataDecimalColumnTextTests {
    @Test func plainTextMatchesTheGeneralPath() {
        var rng = SystemRandomNumberGenerator()
        var values: [Double] = [0, -0.0, 1, -1, 5, 10, 100, 0.5, 0.1, 0.001, 19.99, -19.99, 1234.5, 1e15, 1e16, 1e17,
                                123_456_789_012.0, 9_007_199_254_740_992, 1e-4, 1e-5, 0.000123, 1.5e300, -2.5e-300,
                                .leastNonzeroMagnitude, .greatestFiniteMagnitude, .pi, 1.0 / 3.0]
        for _ in 0..<5_000 {
            let cents = Double(Int64.random(in: -10_000_000...10_000_000, using: &rng)) / 100
            let scale = Double(sign: .plus, exponent: Int.random(in: -60...60, using: &rng), significand: 1)
            values += [cents, Double.random(in: -1...1, using: &rng) * scale, Double(Int32.random(in: .min ... .max, using: &rng))]
        }
        for d in values {
            let general = DecimalText.decimal(from: "\(d)").map(DecimalText.string(for:))
            #expect(CoreDataRowReader.decimalText(of: d) == general, "\(d)")
        }
        #expect(CoreDataRowReader.decimalText(of: .nan) == nil)
        #expect(CoreDataRowReader.decimalText(of: .infinity) == nil)
        #expect(CoreDataRowReader.plainDecimalText("1e-05") == nil)
        #expect(CoreDataRowReader.plainDecimalText("100.0") == "100")
        #expect(CoreDataRowReader.plainDecimalText("-0.0") == "0")
        #expect(CoreDataRowReader.plainDecimalText("0.250") == "0.25")
    }

    /// A page's decimal text becomes the REAL its canonical text spells: text read as it stands must give exactly
    /// what the general path (parse, canonical text, double) gives, and the general path must agree that it was
    /// canonical.
    @Test func canonicalPlainTextIsWrittenAsItStands() {
        var rng = SystemRandomNumberGenerator()
        var texts = ["0", "-0", "0.0", "-0.0", "00", "01", "1", "-1", "10", "100", "0.5", ".5", "5.", "0.50", "1.10",
                     "-19.99", "19.990", "0.000123", "1e5", "1E-3", "+1", "1.2.3", "12a", "", "-", "--1", "0.", "-.5",
                     "1234567890123456789", "12345678901234567890", "0.1234567890123456789", "1000000000000000000000",
                     "9007199254740993", "123456789.987654321", "0.0000000000000000000000000000001", "NaN", " 1"]
        for _ in 0..<5_000 {
            let cents = Int64.random(in: -10_000_000...10_000_000, using: &rng)
            let whole = cents / 100, fraction = abs(cents % 100)
            texts.append("\(cents < 0 && whole == 0 ? "-" : "")\(whole).\(fraction < 10 ? "0" : "")\(fraction)")
            texts.append(String(Int64.random(in: .min ... .max, using: &rng)))
            texts.append("\(Double.random(in: -1...1, using: &rng) * Double(sign: .plus, exponent: Int.random(in: -40...40, using: &rng), significand: 1))")
            texts.append(DecimalText.string(for: Decimal(Double.random(in: -1e6...1e6, using: &rng))))
        }
        var plain = 0
        for text in texts {
            var t = text
            t.withUTF8 { utf8 in
                let bytes = UnsafeRawBufferPointer(utf8)
                let general = DecimalText.decimal(utf8: bytes).flatMap { d, isCanonical in
                    Double(isCanonical ? text : DecimalText.string(for: d))
                }
                let fast = CoreDataDecimalReal.real(utf8: bytes)
                #expect(fast?.bitPattern == general?.bitPattern, "\(text)")
                if CoreDataDecimalReal.isCanonicalPlain(bytes) {
                    plain += 1
                    #expect(DecimalText.decimal(utf8: bytes)?.isCanonical == true, "\(text)")
                }
            }
        }
        // Most generated texts take the plain path; the odd forms above do not.
        #expect(plain > texts.count / 2)
        for odd in ["-0", "0.0", "00", "01", ".5", "5.", "0.50", "1e5", "+1", "12345678901234567890", "NaN", " 1", ""] {
            var t = odd
            #expect(!t.withUTF8 { CoreDataDecimalReal.isCanonicalPlain(UnsafeRawBufferPointer($0)) }, "\(odd)")
        }
    }
}
