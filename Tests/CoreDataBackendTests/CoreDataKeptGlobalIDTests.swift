@_spi(BackendKit) @testable import CoreDataBackend
import Foundation
import LMDBBackend
@_spi(BackendKit) import StoreAPI
import StoreTestSupport
import Testing

/// Global identifiers a Core Data store keeps beside its records (`STOREKIT_GLOBALID`): records saved with
/// identifiers of their own read back with them through every read path, the table appears only when a save needs
/// it, its rows go with their records, a native LMDB store converted to coredata and back keeps every identifier,
/// and verify reports an identifier held twice.
@Suite struct CoreDataKeptGlobalIDTests {
    static let table = CoreDataGlobalIDTable.name

    static func tables(_ url: URL) throws -> Set<String> { try ReadOnlyDatabase.open(url).tableNames() }

    static func keptRows(_ url: URL) throws -> [Int64: [UInt8]] {
        var out: [Int64: [UInt8]] = [:]
        for r in try ReadOnlyDatabase.open(url).rows("SELECT PK, GLOBALID FROM \(table)") {
            if let pk = r[0].int, let b = r[1].bytes { out[pk] = b }
        }
        return out
    }

    static func bytes(_ id: UUID) -> [UInt8] { withUnsafeBytes(of: id.uuid) { Array($0) } }

    /// A record of `entity` with a title-like string as its first attribute.
    static func book(_ schema: Schema, _ entity: String, _ pk: Int64, _ id: UUID, _ title: String) throws -> Record {
        var r = try schema.requireEntity(entity).newRecord(primaryKey: pk, globalID: id)
        let e = try schema.requireEntity(entity)
        if let i = e.attributes.firstIndex(where: { $0.name == "title" }) { r.attributes[i] = .string(title) }
        return r
    }

    @Test func savedIdentifiersReadBackThroughEveryPath() throws {
        let dir = try TemporaryDirectory("coredata-gid")
        defer { dir.remove() }
        let url = dir.path("Library.sqlite")
        let schema = try CoreDataWriteTests.schema()
        let backend = CoreDataStoreBackend()
        let metadata = StoreMetadata(storeType: "coredata", storeUUID: UUID(), schema: schema)
        let derived = { (pk: Int64) in CoreDataGlobalID.make(store: metadata.storeUUID, root: "Book", primaryKey: pk) }
        let own = [UUID(), UUID()]
        do {
            let store = try backend.open(at: url, options: StoreOptions(), creating: metadata)
            // Records with derived identifiers need no table.
            try store.save(StoreChanges(inserted: [try Self.book(schema, "Book", 1, derived(1), "derived")]))
            #expect(try !Self.tables(url).contains(Self.table))
            try store.save(StoreChanges(inserted: [
                try Self.book(schema, "Book", 2, own[0], "own"), try Self.book(schema, "Novel", 3, own[1], "novel"),
            ]))
            #expect(try Self.tables(url).contains(Self.table))
            try store.close()
        }
        #expect(try Self.keptRows(url) == [2: Self.bytes(own[0]), 3: Self.bytes(own[1])])
        let expected: [Int64: UUID] = [1: derived(1), 2: own[0], 3: own[1]]
        for readOnly in [true, false] {
            let store = try backend.open(at: url, options: StoreOptions(isReadOnly: readOnly), creating: nil)
            defer { try? store.close() }
            let fetched = try store.fetch(FetchRequest(entity: "Book"))
            #expect(Dictionary(uniqueKeysWithValues: fetched.map { ($0.primaryKey, $0.globalID) }) == expected)
            let byKey = try store.records(withKeys: [3, 2, 1], root: "Book")
            #expect(Dictionary(uniqueKeysWithValues: byKey.map { ($0.primaryKey, $0.globalID) }) == expected)
            #expect(try store.scan(entity: "Book", after: nil, limit: 10).map(\.globalID) == [derived(1), own[0]])
            #expect(try store.scan(entity: "Book", after: 1, limit: 1).map(\.globalID) == [own[0]])
            let pages = try #require(store as? any PageScanningStore)
            #expect(try pages.scanPage(entity: "Book", after: nil, limit: 10).globalIDs == [derived(1), own[0]])
            #expect(try pages.scanPage(entity: "Novel", after: nil, limit: 10).globalIDs == [own[1]])
            #expect(try pages.scanPage(entity: "Book", after: 1, limit: 1).globalIDs == [own[0]])
        }
        // A deleted record's row goes with it; a key inserted again with the derived identifier has no row.
        do {
            let store = try backend.open(at: url, options: StoreOptions(), creating: nil)
            try store.save(StoreChanges(deleted: [RecordKey(entity: "Book", primaryKey: 2)]))
            #expect(try Self.keptRows(url).keys.sorted() == [3])
            try store.save(StoreChanges(deleted: [RecordKey(entity: "Novel", primaryKey: 3)]))
            try store.save(StoreChanges(inserted: [try Self.book(schema, "Novel", 3, derived(3), "again")]))
            #expect(try Self.keptRows(url).isEmpty)
            #expect(try store.records(withKeys: [3], root: "Book").map(\.globalID) == [derived(3)])
            try store.close()
        }
    }

    /// A stale row (Core Data deleted the record and knows nothing of the table) is ignored by reads and replaced by
    /// a save that inserts its identifier again.
    @Test func staleRowsAreIgnoredAndReplaced() throws {
        let dir = try TemporaryDirectory("coredata-gid-stale")
        defer { dir.remove() }
        let url = dir.path("Library.sqlite")
        let schema = try CoreDataWriteTests.schema()
        let backend = CoreDataStoreBackend()
        let id = UUID()
        do {
            let store = try backend.open(
                at: url, options: StoreOptions(), creating: StoreMetadata(storeType: "coredata", storeUUID: UUID(), schema: schema))
            try store.save(StoreChanges(inserted: [try Self.book(schema, "Book", 1, id, "one")]))
            try store.close()
        }
        try CoreDataVerifyTests.damage(url, "DELETE FROM ZBOOK")
        #expect(try CoreDataStoreBackend().checkIntegrity(at: url) == [])
        let store = try backend.open(at: url, options: StoreOptions(), creating: nil)
        defer { try? store.close() }
        #expect(try store.fetch(FetchRequest(entity: "Book")).isEmpty)
        try store.save(StoreChanges(inserted: [try Self.book(schema, "Book", 2, id, "two")]))
        #expect(try Self.keptRows(url) == [2: Self.bytes(id)])
        #expect(try store.fetch(FetchRequest(entity: "Book")).map(\.globalID) == [id])
    }

    /// A native LMDB store (random identifiers) converted to coredata and back: `storectl diff` finds them identical.
    @Test func lmdbToCoreDataToLMDBKeepsEveryIdentifier() throws {
        let dir = try TemporaryDirectory("coredata-gid-lmdb")
        defer { dir.remove() }
        let source = dir.path("a.lmdb"), middle = dir.path("b.sqlite"), back = dir.path("c.lmdb")
        let schema = try CoreDataWriteTests.schema()
        var ids: Set<UUID> = []
        do {
            let coordinator = StoreCoordinator(schema: schema, registry: BackendRegistry(backends: [LMDBStoreBackend()]))
            let loaded = try coordinator.addStore(StoreDescription(url: source, type: "lmdb"))
            let context = coordinator.newContext()
            let author = try context.insert("Author", ["name": .string("Ada")])
            var books: [ManagedObject] = []
            for i in 0..<40 {
                books.append(try context.insert(i % 3 == 0 ? "Novel" : "Book", ["title": .string("b\(i)")]))
            }
            let tag = try context.insert("Tag", ["label": .string("t")])
            try author.setObjects(books, forKey: "books")
            try tag.setObjects(Array(books.prefix(7)), forKey: "books")
            try context.save()
            ids = Set(([author, tag] + books).map(\.globalID))
            try coordinator.removeStore(loaded)
        }
        let there = try Child.storectl(["convert", source.path, middle.path, "--type", "coredata"])
        #expect(there.status == 0, "\(there.stderr)")
        // Every record has a row: none of the random identifiers is a derived one.
        let kept = try ReadOnlyDatabase.open(middle).rows("SELECT count(DISTINCT GLOBALID), count(*) FROM \(Self.table)")
        #expect(kept.first?.map(\.int) == [Int64(ids.count), Int64(ids.count)])
        #expect(try CoreDataStoreBackend().checkIntegrity(at: middle) == [])
        let diffMiddle = try Child.storectl(["diff", source.path, middle.path])
        #expect(diffMiddle.status == 0 && (diffMiddle.stdout + diffMiddle.stderr).contains("identical"),
                "\(diffMiddle.stdout)\(diffMiddle.stderr)")
        let again = try Child.storectl(["convert", middle.path, back.path, "--type", "lmdb"])
        #expect(again.status == 0, "\(again.stderr)")
        let diff = try Child.storectl(["diff", source.path, back.path])
        #expect(diff.status == 0 && (diff.stdout + diff.stderr).contains("identical"), "\(diff.stdout)\(diff.stderr)")
    }

    @Test func verifyReportsAnIdentifierHeldTwice() throws {
        let dir = try TemporaryDirectory("coredata-gid-verify")
        defer { dir.remove() }
        let url = dir.path("Library.sqlite")
        let schema = try CoreDataWriteTests.schema()
        do {
            let store = try CoreDataStoreBackend().open(
                at: url, options: StoreOptions(), creating: StoreMetadata(storeType: "coredata", storeUUID: UUID(), schema: schema))
            try store.save(StoreChanges(inserted: [
                try Self.book(schema, "Book", 1, UUID(), "one"), try Self.book(schema, "Book", 2, UUID(), "two"),
            ]))
            try store.close()
        }
        #expect(try CoreDataStoreBackend().checkIntegrity(at: url) == [])
        try CoreDataVerifyTests.damage(url, "DROP INDEX STOREKIT_GLOBALID_ID; "
            + "UPDATE STOREKIT_GLOBALID SET GLOBALID = (SELECT GLOBALID FROM STOREKIT_GLOBALID WHERE PK = 1)")
        let problems = try CoreDataStoreBackend().checkIntegrity(at: url)
        #expect(problems.count == 2, "\(problems)")
        #expect(problems.allSatisfy { $0.contains("STOREKIT_GLOBALID") && $0.contains("held by another row") }, "\(problems)")
        #expect(problems.contains { $0.contains("Z_PK 2") }, "\(problems)")
    }
}
