@_spi(BackendKit) @testable import CoreDataBackend
import Foundation
@_spi(BackendKit) import StoreAPI
import StoreTestSupport
import Testing

/// Writing Core Data stores: creating one, saving through a context, `Z_OPT` and `Z_MAX`, failed saves, and writes
/// to a copy of a corpus store (the corpus round trips are CoreDataCorpusRoundTripTests). Corpus files are only ever
/// read: a store written to is a copy in a temporary directory.
@Suite struct CoreDataWriteTests {
    typealias Store = CoreDataCorpusTests.Store

    static func schema() throws -> Schema {
        let json = """
            { "entities": [
              { "name": "Author",
                "attributes": [ { "name": "name", "type": "string", "optional": false },
                                { "name": "born", "type": "date" }, { "name": "id", "type": "uuid" },
                                { "name": "active", "type": "boolean" }, { "name": "rating", "type": "decimal" },
                                { "name": "home", "type": "uri" }, { "name": "photo", "type": "binary" } ],
                "relationships": [ { "name": "books", "destination": "Book", "inverse": "author",
                                     "toMany": true, "ordered": true } ],
                "uniquenessConstraints": [ ["name"] ] },
              { "name": "Book",
                "attributes": [ { "name": "title", "type": "string" }, { "name": "pages", "type": "integer32" },
                                { "name": "weight", "type": "double" } ],
                "relationships": [ { "name": "author", "destination": "Author", "inverse": "books" },
                                   { "name": "tags", "destination": "Tag", "inverse": "books", "toMany": true } ] },
              { "name": "Novel", "parent": "Book",
                "attributes": [ { "name": "genre", "type": "string" } ] },
              { "name": "Tag",
                "attributes": [ { "name": "label", "type": "string" } ],
                "relationships": [ { "name": "books", "destination": "Book", "inverse": "tags", "toMany": true } ] }
            ] }
            """
        return try Schema(jsonData: Data(json.utf8))
    }

    static func coordinator(_ url: URL, schema: Schema) throws -> (StoreCoordinator, StoreContext, LoadedStore) {
        let coordinator = StoreCoordinator(schema: schema, registry: BackendRegistry(backends: [CoreDataStoreBackend()]))
        let loaded = try coordinator.addStore(StoreDescription(url: url, type: "coredata"))
        return (coordinator, coordinator.newContext(), loaded)
    }

    static func rows(_ url: URL, _ sql: String) throws -> [[ReadOnlyDatabase.Value]] {
        try ReadOnlyDatabase.open(url).rows(sql)
    }

    @Test func createdStoreIsACoreDataStoreAndSavesReopen() throws {
        let dir = try TemporaryDirectory("coredata-write")
        defer { dir.remove() }
        let url = dir.path("Library.sqlite")
        let schema = try Self.schema()
        let born = Date(timeIntervalSinceReferenceDate: 12345.5)
        let id = UUID()
        do {
            let (coordinator, context, loaded) = try Self.coordinator(url, schema: schema)
            let author = try context.insert("Author", [
                "name": .string("Ada"), "born": .date(born), "id": .uuid(id), "active": .boolean(true),
                "rating": .decimal(Decimal(string: "4.25") ?? 0), "home": .uri(try #require(URL(string: "https://example.com/a"))),
                "photo": .binary(Data([1, 2, 3])),
            ])
            let b1 = try context.insert("Book", ["title": .string("One"), "pages": .integer32(10), "weight": .double(0.5)])
            let b2 = try context.insert("Novel", ["title": .string("Two"), "genre": .string("SF")])
            let tag = try context.insert("Tag", ["label": .string("classic")])
            try author.setObjects([b2, b1], forKey: "books")
            try tag.setObjects([b1, b2], forKey: "books")
            try context.save()
            try coordinator.removeStore(loaded)
        }
        #expect(CoreDataStoreBackend().sniff(url) == .store)
        // Core Data's encodings, read from the file itself.
        let author = try Self.rows(url, "SELECT Z_ENT, Z_OPT, ZBORN, ZID, ZACTIVE, ZHOME FROM ZAUTHOR")
        #expect(author.count == 1)
        #expect(author.first?[1].int == 1)
        #expect(author.first?[2].real == born.timeIntervalSinceReferenceDate)
        #expect(author.first?[3].bytes?.count == 16)
        #expect(author.first?[4].int == 1)
        #expect(author.first?[5].text == "https://example.com/a")
        let books = try Self.rows(url, "SELECT ZTITLE, Z_FOK_AUTHOR FROM ZBOOK ORDER BY Z_FOK_AUTHOR")
        #expect(books.map { $0[0].text } == ["Two", "One"])
        #expect(books.map { $0[1].int } == [1024, 2048])
        // Z_MAX of each root stays at or above its keys (the context allocates keys in blocks).
        for (root, table) in [("Author", "ZAUTHOR"), ("Book", "ZBOOK"), ("Tag", "ZTAG")] {
            let max = try Self.rows(url, "SELECT Z_MAX FROM Z_PRIMARYKEY WHERE Z_NAME = '\(root)'").first?.first?.int
            let highest = try Self.rows(url, "SELECT MAX(Z_PK) FROM \(table)").first?.first?.int
            #expect((max ?? 0) >= (highest ?? .max), "\(root)")
        }

        // Reopen: values, order, many-to-many; then update and delete.
        do {
            let (coordinator, context, loaded) = try Self.coordinator(url, schema: schema)
            let a = try #require(try context.fetch("Author").first)
            #expect(try a.value(forKey: "born") == .date(born))
            #expect(try a.value(forKey: "id") == .uuid(id))
            #expect(try a.value(forKey: "rating") == .decimal(Decimal(string: "4.25") ?? 0))
            #expect(try a.objects(forKey: "books").map { try $0.value(forKey: "title") } == [.string("Two"), .string("One")])
            let tag = try #require(try context.fetch("Tag").first)
            #expect(Set(try tag.objects(forKey: "books").map { try $0.value(forKey: "title") }) == [.string("One"), .string("Two")])
            try a.setValue(.string("Ada L."), forKey: "name")
            let one = try #require(try context.fetch("Book", where: "title == %@", .string("One")).first)
            try context.delete(one)
            try context.save()
            try coordinator.removeStore(loaded)
        }
        let after = try Self.rows(url, "SELECT ZNAME, Z_OPT FROM ZAUTHOR")
        #expect(after.first?[0].text == "Ada L.")
        #expect((after.first?[1].int ?? 0) >= 2)
        #expect(try Self.rows(url, "SELECT COUNT(*) FROM ZBOOK").first?.first?.int == 1)
        let reopened = try CoreDataStoreBackend().open(
            at: url, options: StoreOptions(isReadOnly: true, createIfMissing: false), creating: nil)
        defer { try? reopened.close() }
        #expect(try reopened.count(FetchRequest(entity: "Book")) == 1)
    }

    /// An ordered to-many without an inverse keeps its order in the hidden `Z_FOK_` column of the destination's
    /// table, and reads back in that order — through a context, and through the pages a conversion reads.
    @Test func orderedToManyWithoutInverseKeepsItsOrder() throws {
        let dir = try TemporaryDirectory("coredata-inverseless")
        defer { dir.remove() }
        let url = dir.path("Shelves.sqlite")
        let schema = try Schema(jsonData: Data("""
            { "entities": [
              { "name": "Shelf", "attributes": [ { "name": "label", "type": "string" } ],
                "relationships": [ { "name": "books", "destination": "Book", "toMany": true, "ordered": true } ] },
              { "name": "Book", "attributes": [ { "name": "title", "type": "string" } ] } ] }
            """.utf8))
        let titles = ["three", "one", "four", "two"]
        do {
            let (coordinator, context, loaded) = try Self.coordinator(url, schema: schema)
            // Inserted in alphabetical order, so that key order differs from the list's order.
            var books: [String: ManagedObject] = [:]
            for title in titles.sorted() { books[title] = try context.insert("Book", ["title": .string(title)]) }
            let shelf = try context.insert("Shelf", ["label": .string("x")])
            try shelf.setObjects(titles.compactMap { books[$0] }, forKey: "books")
            try context.save()
            try coordinator.removeStore(loaded)
        }
        let stored = try Self.rows(url, "SELECT ZTITLE FROM ZBOOK ORDER BY Z_FOK_2BOOKS")
        #expect(stored.map { $0[0].text } == titles.map { Optional($0) })
        do {
            let (coordinator, context, loaded) = try Self.coordinator(url, schema: schema)
            let shelf = try #require(try context.fetch("Shelf").first)
            #expect(try shelf.objects(forKey: "books").map { try $0.value(forKey: "title") } == titles.map { .string($0) })
            try coordinator.removeStore(loaded)
        }
        let store = try CoreDataStoreBackend().open(
            at: url, options: StoreOptions(isReadOnly: true, createIfMissing: false), creating: nil)
        defer { try? store.close() }
        var titleByKey: [Int64: String] = [:]
        for book in try store.fetch(FetchRequest(entity: "Book")) {
            if case .string(let title)? = book.attributes.first { titleByKey[book.primaryKey] = title }
        }
        let shelf = try #require(try store.fetch(FetchRequest(entity: "Shelf")).first)
        let members = try #require(shelf.relationships.first).keys
        #expect(members.map { titleByKey[$0] } == titles.map { Optional($0) })
        let page = try #require(store as? any PageScanningStore).scanPage(entity: "Shelf", after: nil, limit: 10)
        #expect(page.count == 1)
        let pageMembers = page.withEncodedRecord(at: 0) { _, links in
            var reader = RecordPage.LinkReader(links)
            return reader.next()
        }
        #expect(pageMembers == .toMany(members))
    }

    @Test func failedSaveLeavesTheStoreAsItWas() throws {
        let dir = try TemporaryDirectory("coredata-write-fail")
        defer { dir.remove() }
        let url = dir.path("Library.sqlite")
        let schema = try Self.schema()
        let backend = CoreDataStoreBackend()
        let store = try backend.open(
            at: url, options: StoreOptions(), creating: StoreMetadata(storeType: "coredata", storeUUID: UUID(), schema: schema))
        defer { try? store.close() }
        let entity = try schema.requireEntity("Author")
        func author(_ pk: Int64, _ name: String) throws -> Record {
            Record(entity: "Author", primaryKey: pk, globalID: UUID(),
                   attributes: entity.attributes.map { $0.name == "name" ? .string(name) : .null },
                   relationships: entity.relationships.map { $0.isToMany ? .toMany([]) : .toOne(nil) })
        }
        let first = try store.allocatePrimaryKeys(root: "Author", count: 2)
        #expect(first == 1)
        #expect(try Self.rows(url, "SELECT Z_MAX FROM Z_PRIMARYKEY WHERE Z_NAME = 'Author'").first?.first?.int == 2)
        try store.save(StoreChanges(inserted: [try author(1, "A")]))
        let before = try Data(contentsOf: url)
        // Z_AUTHOR_UNIQUE_name refuses a second "A": nothing of the save stays.
        #expect(throws: StoreError.self) {
            try store.save(StoreChanges(inserted: [try author(2, "B"), try author(5, "A")]))
        }
        #expect(try store.count(FetchRequest(entity: "Author")) == 1)
        #expect(try Self.rows(url, "SELECT COUNT(*) FROM ZAUTHOR").first?.first?.int == 1)
        #expect(try Self.rows(url, "SELECT Z_MAX FROM Z_PRIMARYKEY WHERE Z_NAME = 'Author'").first?.first?.int == 2)
        _ = before
        // A key above Z_MAX moves it; an update adds one to Z_OPT.
        try store.save(StoreChanges(inserted: [try author(9, "C")]))
        #expect(try Self.rows(url, "SELECT Z_MAX FROM Z_PRIMARYKEY WHERE Z_NAME = 'Author'").first?.first?.int == 9)
        #expect(try store.allocatePrimaryKeys(root: "Author", count: 1) == 10)
        try store.save(StoreChanges(updated: [try author(1, "A2")]))
        try store.save(StoreChanges(updated: [try author(1, "A3")]))
        #expect(try Self.rows(url, "SELECT Z_OPT FROM ZAUTHOR WHERE Z_PK = 1").first?.first?.int == 3)
        #expect(try Self.rows(url, "SELECT Z_OPT FROM ZAUTHOR WHERE Z_PK = 9").first?.first?.int == 1)
    }

    @Test func readOnlyOpenRefusesWritesAndCloudKitStoresStayReadOnly() throws {
        let dir = try TemporaryDirectory("coredata-write-ro")
        defer { dir.remove() }
        let url = dir.path("Library.sqlite")
        let backend = CoreDataStoreBackend()
        let metadata = StoreMetadata(storeType: "coredata", storeUUID: UUID(), schema: try Self.schema())
        try backend.open(at: url, options: StoreOptions(), creating: metadata).close()
        let readOnly = try backend.open(at: url, options: StoreOptions(isReadOnly: true), creating: nil)
        #expect(throws: StoreError.self) { try readOnly.save(StoreChanges()) }
        try readOnly.close()
        // A CloudKit mirroring table makes a writable open fail unless the option insists.
        let db = try CoreDataWritableDatabase(url)
        try db.execute("CREATE TABLE ANSCKRECORDMETADATA (Z_PK INTEGER PRIMARY KEY)")
        db.close()
        #expect { try backend.open(at: url, options: StoreOptions(), creating: nil) } throws: { error in
            guard case StoreError.readOnly(_, let reason) = error else { return false }
            return reason.contains(CoreDataStoreBackend.allowCloudKitWritesOption)
        }
        try backend.open(
            at: url, options: StoreOptions(backend: [CoreDataStoreBackend.allowCloudKitWritesOption: "true"]),
            creating: nil
        ).close()
    }

    // MARK: Corpus round trip

    static func schemaSQL(_ url: URL) throws -> [String] {
        try rows(url, "SELECT sql FROM sqlite_master WHERE sql IS NOT NULL ORDER BY name").compactMap { $0.first?.text }
    }

    /// The schema SQL of the store's model: every statement except those of the persistent-history tables, which a
    /// store created by a conversion does not have (its saves record no history).
    static func modelSchemaSQL(_ url: URL) throws -> [String] {
        try rows(url, "SELECT sql, tbl_name FROM sqlite_master WHERE sql IS NOT NULL ORDER BY name").compactMap {
            guard $0.count == 2, let sql = $0[0].text, let table = $0[1].text, !CoreDataLayout.isHistoryTable(table) else {
                return nil
            }
            return sql
        }
    }

    /// A copy of a corpus store opened writable: an update and a delete through the backend, read back.
    @Test(arguments: CoreDataStoreBackendTests.stores().filter(CoreDataStoreBackendTests.hasModelCache).prefix(3))
    func existingStoreCopyIsWritable(_ store: Store) throws {
        let dir = try TemporaryDirectory("coredata-write-copy")
        defer { dir.remove() }
        let copy = dir.path(store.name)
        for suffix in ["", "-wal", "-shm"] where FileManager.default.fileExists(atPath: store.url.path + suffix) {
            try FileManager.default.copyItem(atPath: store.url.path + suffix, toPath: copy.path + suffix)
        }
        let backend = CoreDataStoreBackend()
        let store1 = try backend.open(at: copy, options: StoreOptions(), creating: nil)
        let all = try CoreDataStoreBackendTests.allRecords(store1)
        guard let (entity, records) = all.first(where: { !$0.value.isEmpty }), let victim = records.last else {
            try store1.close()
            return
        }
        let total = all.values.reduce(0) { $0 + $1.count }
        try store1.save(StoreChanges(updated: records.dropLast().suffix(1).map { $0 }))
        try store1.save(StoreChanges(deleted: [victim.key]))
        try store1.close()
        let store2 = try CoreDataStoreBackendTests.open(copy)
        defer { try? store2.close() }
        let reread = try CoreDataStoreBackendTests.allRecords(store2)
        #expect(reread.values.reduce(0) { $0 + $1.count } == total - 1, "\(store.name)")
        #expect(reread[entity]?.contains { $0.primaryKey == victim.primaryKey } == false)
    }
}
