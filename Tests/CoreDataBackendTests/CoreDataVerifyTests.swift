@_spi(BackendKit) @testable import CoreDataBackend
import CSQLite
import Foundation
@_spi(BackendKit) import StoreAPI
import StoreTestSupport
import Testing

/// `verify` on Core Data stores: copies of a created store damaged with raw SQL, one way each, are reported with
/// the table, column and key at fault; the corpus stores verify clean without a byte of them changing.
@Suite struct CoreDataVerifyTests {
    typealias Fixture = ExternalDataFixture

    /// Runs `sql` on a plain read-write connection, as a tool or a bug outside the framework would.
    static func damage(_ url: URL, _ sql: String) throws {
        var handle: OpaquePointer?
        guard sqlite3_open(url.path, &handle) == SQLITE_OK, let db = handle else {
            sqlite3_close(handle)
            throw StoreError.io(url, operation: "open", reason: "")
        }
        defer { sqlite3_close(db) }
        guard sqlite3_exec(db, sql, nil, nil, nil) == SQLITE_OK else {
            throw StoreError.io(url, operation: sql, reason: String(cString: sqlite3_errmsg(db)))
        }
    }

    static func columns(_ url: URL, _ table: String) throws -> [String] {
        try ReadOnlyDatabase.open(url).rows("PRAGMA table_info(\(table))").compactMap { $0[1].text }
    }

    /// A closed store made by the fixture, in its own folder of `dir`.
    static func store(_ dir: TemporaryDirectory, _ name: String) throws -> URL {
        let url = try dir.directory(name).appendingPathComponent("Photos.sqlite")
        let (coordinator, loaded) = try Fixture.create(at: url)
        try coordinator.removeStore(loaded)
        return url
    }

    /// The one problem `sql` causes, checked to contain every fragment.
    static func expectProblem(_ dir: TemporaryDirectory, _ name: String, _ sql: (URL) throws -> String,
                              _ fragments: [String], sourceLocation: SourceLocation = #_sourceLocation) throws {
        let url = try store(dir, name)
        #expect(try CoreDataStoreBackend().checkIntegrity(at: url) == [], sourceLocation: sourceLocation)
        try damage(url, try sql(url))
        let problems = try CoreDataStoreBackend().checkIntegrity(at: url)
        #expect(problems.count == 1, "\(name): \(problems)", sourceLocation: sourceLocation)
        for fragment in fragments {
            #expect(problems.first?.contains(fragment) == true, "\(name): '\(fragment)' in \(problems)",
                    sourceLocation: sourceLocation)
        }
    }

    @Test func eachDamageIsReportedWithTableColumnAndKey() throws {
        let dir = try TemporaryDirectory("coredata-verify")
        defer { dir.remove() }
        // Entities by case-insensitive name: Album 1 (SharedAlbum 2 right after it), Photo 3, Tag 4.
        try Self.expectProblem(dir, "zmax", { _ in "UPDATE Z_PRIMARYKEY SET Z_MAX = 1 WHERE Z_ENT = 3" },
                               ["ZPHOTO", "Z_PK 2", "Z_MAX 1", "Photo (Z_ENT 3)"])
        try Self.expectProblem(dir, "zent", { _ in "UPDATE ZPHOTO SET Z_ENT = 99 WHERE ZTITLE = 'little'" },
                               ["ZPHOTO.Z_ENT", "Z_ENT 99", "row Z_PK"])
        try Self.expectProblem(dir, "zent-other-hierarchy", { _ in "UPDATE ZTAG SET Z_ENT = 1" },
                               ["ZTAG.Z_ENT", "Z_ENT 1", "Tag hierarchy"])
        try Self.expectProblem(dir, "fk", { _ in "UPDATE ZPHOTO SET ZALBUM = 77 WHERE ZTITLE = 'big'" },
                               ["ZPHOTO.ZALBUM", "Photo.album", "Z_PK 77", "not in ZALBUM"])
        try Self.expectProblem(dir, "fk-entity", { url in
            let column = try #require(try Self.columns(url, "ZPHOTO").first { $0.hasSuffix("_ALBUM") })
            return "UPDATE ZPHOTO SET \(column) = 1 WHERE ZTITLE = 'big'"
        }, ["ZPHOTO.Z1_ALBUM", "says Z_ENT 1", "is Z_ENT 2"])
        try Self.expectProblem(dir, "join", { url in
            let join = try #require(try ReadOnlyDatabase.open(url).tableNames().first {
                $0.hasPrefix("Z_") && !["Z_PRIMARYKEY", "Z_METADATA", "Z_MODELCACHE"].contains($0)
            })
            let first = try #require(try Self.columns(url, join).first)
            return "UPDATE \(join) SET \(first) = 500 WHERE rowid IN (SELECT rowid FROM \(join) LIMIT 1)"
        }, ["500", "points to a Z_PK that is not in"])
        try Self.expectProblem(dir, "marker", { _ in "UPDATE ZPHOTO SET ZIMAGE = x'0309' WHERE ZTITLE = 'little'" },
                               ["ZPHOTO.ZIMAGE", "Photo.image", "unknown external storage marker 3"])
        try Self.expectProblem(dir, "reference", { _ in "UPDATE ZPHOTO SET ZIMAGE = x'024E4F4E4500' WHERE ZTITLE = 'little'" },
                               ["ZPHOTO.ZIMAGE", "_EXTERNAL_DATA/NONE", "is missing"])
    }

    @Test func storectlVerifyReportsADanglingKey() throws {
        let dir = try TemporaryDirectory("coredata-verify-storectl")
        defer { dir.remove() }
        let url = try Self.store(dir, "a")
        let clean = try Child.storectl(["verify", url.path])
        #expect(clean.status == 0, "\(clean.stdout)\(clean.stderr)")
        try Self.damage(url, "UPDATE Z_PRIMARYKEY SET Z_MAX = 0")
        let damaged = try Child.storectl(["verify", url.path])
        #expect(damaged.status == 1, "\(damaged.stdout)\(damaged.stderr)")
        #expect(damaged.stdout.contains("Z_PRIMARYKEY.Z_MAX 0"), "\(damaged.stdout)\(damaged.stderr)")
    }

    /// Damage that stops the records from reading (an unknown `Z_ENT`) still gets every problem listed, not only
    /// the first error of the read.
    @Test func storectlVerifyListsEveryProblemWhenRecordsCannotBeRead() throws {
        let dir = try TemporaryDirectory("coredata-verify-unreadable")
        defer { dir.remove() }
        let url = try Self.store(dir, "a")
        try Self.damage(url, "UPDATE ZPHOTO SET Z_ENT = 99 WHERE ZTITLE = 'little'; UPDATE ZPHOTO SET ZALBUM = 77 WHERE ZTITLE = 'big'")
        let run = try Child.storectl(["verify", url.path])
        #expect(run.status == 1, "\(run.stdout)\(run.stderr)")
        for fragment in ["ZPHOTO.Z_ENT", "ZPHOTO.ZALBUM", "records: cannot be read"] {
            #expect(run.stdout.contains(fragment), "'\(fragment)' in \(run.stdout)\(run.stderr)")
        }
    }

    @Test func aDamagedFileIsAnErrorOrAProblemNeverACrash() throws {
        let dir = try TemporaryDirectory("coredata-verify-bytes")
        defer { dir.remove() }
        let url = try Self.store(dir, "a")
        let size = try #require(try FileManager.default.attributesOfItem(atPath: url.path)[.size] as? NSNumber).intValue
        #expect(size > 3 * 4096)
        let handle = try FileHandle(forUpdating: url)
        // Page 3 onward: the schema in page 1 still reads, the tables behind it do not.
        try handle.seek(toOffset: 2 * 4096)
        handle.write(Data(repeating: 0xA5, count: size - 2 * 4096))
        try handle.close()
        do {
            let problems = try CoreDataStoreBackend().checkIntegrity(at: url)
            #expect(!problems.isEmpty)
        } catch let error as StoreError {
            #expect("\(error)".contains(url.path), "\(error)")
        }
    }

    static func corpusStores() -> [CoreDataCorpusTests.Store] { CoreDataCorpusTests.stores() }

    /// Each corpus store, copied with its sidecars into a temporary folder, verifies clean, and verifying changes
    /// none of its files.
    @Test(arguments: corpusStores())
    func corpusStoresVerifyClean(_ store: CoreDataCorpusTests.Store) throws {
        let dir = try TemporaryDirectory("coredata-verify-corpus")
        defer { dir.remove() }
        let copy = dir.path(store.name)
        for suffix in ["", "-wal", "-shm"] where FileManager.default.fileExists(atPath: store.url.path + suffix) {
            try FileManager.default.copyItem(atPath: store.url.path + suffix, toPath: copy.path + suffix)
        }
        let data = [copy.path, copy.path + "-wal"]
        let before = data.map(CoreDataCorpusTests.sha256)
        let problems = try CoreDataStoreBackend().checkIntegrity(at: copy)
        #expect(problems == [], "\(store.name): \(problems)")
        #expect(data.map(CoreDataCorpusTests.sha256) == before)
    }
}
