@_spi(BackendKit) @testable import CoreDataBackend
import CSQLite
import Foundation
import LMDBBackend
@_spi(BackendKit) import StoreAPI
import StoreTestSupport
import Testing

/// Every store operation on a WAL-mode Core Data store with external data and a `-wal` never checkpointed: each
/// carries or removes every file the store owns (main, `-wal`, `-shm`, `.Name_SUPPORT`), and the source's files
/// keep their bytes (sha256 of each, before and after).
@Suite struct CoreDataExternalDataOperationsTests {
    typealias Fixture = ExternalDataFixture

    static func operations() -> StoreOperations {
        StoreOperations(registry: BackendRegistry(backends: [CoreDataStoreBackend(), LMDBStoreBackend()]))
    }

    /// A source store in `dir/src` as a crashed app leaves it; checks it has what the tests rely on.
    static func source(in dir: TemporaryDirectory) throws -> URL {
        let folder = try dir.directory("src")
        let url = folder.appendingPathComponent("App.sqlite")
        try Fixture.createWithWAL(at: url)
        let wal = try FileManager.default.attributesOfItem(atPath: url.path + "-wal")[.size] as? NSNumber
        #expect((wal?.intValue ?? 0) > 0, "the source keeps a -wal")
        #expect(Fixture.externalFiles(url).count == 1)
        #expect(try Self.photosInMainFileAlone(url) == 0, "the records are only in the -wal")
        return url
    }

    /// The photos the main file holds without its `-wal` (an immutable open reads nothing else and writes nothing).
    static func photosInMainFileAlone(_ url: URL) throws -> Int64 {
        var handle: OpaquePointer?
        defer { sqlite3_close_v2(handle) }
        guard sqlite3_open_v2("file:\(url.path)?mode=ro&immutable=1", &handle, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, nil) == SQLITE_OK,
            let db = handle
        else { throw StoreError.io(url, operation: "open", reason: "") }
        var statement: OpaquePointer?
        defer { sqlite3_finalize(statement) }
        guard sqlite3_prepare_v2(db, "SELECT count(*) FROM ZPHOTO", -1, &statement, nil) == SQLITE_OK,
            sqlite3_step(statement) == SQLITE_ROW
        else { return -1 }
        return sqlite3_column_int64(statement, 0)
    }

    /// The sha256 of every file of the store in `folder` but its `-shm`: that is SQLite's shared-memory index of
    /// the `-wal`, which every reader of a WAL database updates (its read marks) and which holds no data.
    static func hashes(_ folder: URL) -> [String: String] {
        Fixture.hashes(folder).filter { !$0.key.hasSuffix("-shm") }
    }

    static func expectWhole(_ url: URL, sourceLocation: SourceLocation = #_sourceLocation) throws {
        #expect(try Fixture.images(url) == ["big": Fixture.large, "little": Fixture.small], sourceLocation: sourceLocation)
        #expect(Fixture.externalFiles(url).count == 1, sourceLocation: sourceLocation)
        #expect(try CoreDataStoreBackend().checkIntegrity(at: url) == [], sourceLocation: sourceLocation)
    }

    static func expectIdentical(_ a: URL, _ b: URL, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let diff = try Child.storectl(["diff", a.path, b.path])
        #expect(diff.status == 0 && (diff.stdout + diff.stderr).contains("identical"), "\(diff.stdout)\(diff.stderr)",
                sourceLocation: sourceLocation)
    }

    @Test func copyCarriesTheWALAndTheExternalData() throws {
        let dir = try TemporaryDirectory("coredata-extdata-copy")
        defer { dir.remove() }
        let source = try Self.source(in: dir)
        let before = Self.hashes(source.deletingLastPathComponent())
        let copy = try dir.directory("dst").appendingPathComponent("Copy.sqlite")
        try Self.operations().copyStore(from: source, to: copy)
        #expect(Self.hashes(source.deletingLastPathComponent()) == before, "the source is untouched")
        let listing = try FileManager.default.contentsOfDirectory(atPath: copy.deletingLastPathComponent().path).sorted()
        #expect(listing == [".Copy_SUPPORT", "Copy.sqlite"], "\(listing)")
        try Self.expectWhole(copy)
        // The same file, not a re-creation: Core Data's bookkeeping comes along unchanged.
        #expect(try CoreDataStoreBackend().readMetadata(at: copy).storeUUID == CoreDataStoreBackend().readMetadata(at: source).storeUUID)
        try Self.expectIdentical(source, copy)
        let storectl = try Child.storectl(["copy", source.path, dir.path("dst/Second.sqlite").path])
        #expect(storectl.status == 0, "\(storectl.stderr)")
        try Self.expectWhole(dir.path("dst/Second.sqlite"))
        #expect(Self.hashes(source.deletingLastPathComponent()) == before, "the source is untouched")
    }

    /// A file the source refers to and lacks is copied as the damage it is (a copy is faithful), and verify
    /// reports it on both.
    @Test func copyCarriesAMissingFileAsTheDamageItIs() throws {
        let dir = try TemporaryDirectory("coredata-extdata-copy-damaged")
        defer { dir.remove() }
        let source = try Self.source(in: dir)
        let name = try #require(Fixture.externalFiles(source).first)
        try FileManager.default.removeItem(at: CoreDataExternalData.folder(ofStoreAt: source).appendingPathComponent(name))
        let copy = dir.path("Copy.sqlite")
        try Self.operations().copyStore(from: source, to: copy)
        for url in [source, copy] {
            let problems = try CoreDataStoreBackend().checkIntegrity(at: url)
            #expect(problems.count == 1 && problems.first?.contains(name) == true, "\(problems)")
        }
    }

    /// The staged support folder of a copy killed before it was placed is recognised as staging and removed by
    /// the next operation on that destination.
    @Test func aKilledCopysStagedSupportFolderIsCleanedUp() throws {
        let dir = try TemporaryDirectory("coredata-extdata-leftover")
        defer { dir.remove() }
        let source = try Self.source(in: dir)
        let destination = try dir.directory("dst").appendingPathComponent("App.sqlite")
        let staged = AtomicFile.stagingURL(for: destination)
        let leftover = CoreDataStoreBackend.supportFolder(of: staged)
        #expect(leftover.lastPathComponent == staged.lastPathComponent + "-SUPPORT")
        try FileManager.default.createDirectory(at: leftover.appendingPathComponent("_EXTERNAL_DATA"), withIntermediateDirectories: true)
        try Data("half".utf8).write(to: leftover.appendingPathComponent("_EXTERNAL_DATA/X"))
        try Self.operations().copyStore(from: source, to: destination)
        let listing = try FileManager.default.contentsOfDirectory(atPath: destination.deletingLastPathComponent().path).sorted()
        #expect(listing == [".App_SUPPORT", "App.sqlite"], "\(listing)")
    }

    @Test func relocateMovesEveryFile() throws {
        let dir = try TemporaryDirectory("coredata-extdata-relocate")
        defer { dir.remove() }
        let source = try Self.source(in: dir)
        let expected = try Fixture.images(source)
        let shared = try dir.directory("shared").appendingPathComponent("App.sqlite")
        #expect(try Self.operations().relocateStore(from: source, to: shared) == .moved)
        #expect((try FileManager.default.contentsOfDirectory(atPath: source.deletingLastPathComponent().path)).isEmpty,
                "nothing of the old store is left")
        #expect(try Fixture.images(shared) == expected)
        try Self.expectWhole(shared)
        #expect(try Self.operations().relocateStore(from: source, to: shared) == .alreadyDone)
        let listing = try FileManager.default.contentsOfDirectory(atPath: shared.deletingLastPathComponent().path).sorted()
        #expect(listing == [".App_SUPPORT", "App.sqlite"], "\(listing)")
    }

    @Test func destroyRemovesEveryFileAndFolder() throws {
        let dir = try TemporaryDirectory("coredata-extdata-destroy")
        defer { dir.remove() }
        let source = try Self.source(in: dir)
        let neighbour = source.deletingLastPathComponent().appendingPathComponent("App.sqlite.txt")
        try Data("keep".utf8).write(to: neighbour)
        try Self.operations().destroyStore(at: source)
        #expect(try FileManager.default.contentsOfDirectory(atPath: source.deletingLastPathComponent().path) == ["App.sqlite.txt"])
    }

    @Test func replaceSwapsEveryFile() throws {
        let dir = try TemporaryDirectory("coredata-extdata-replace")
        defer { dir.remove() }
        let source = try Self.source(in: dir)
        let before = Self.hashes(source.deletingLastPathComponent())
        // A destination with an external file of its own, which must not survive.
        let destination = try dir.directory("dst").appendingPathComponent("App.sqlite")
        let (coordinator, context, loaded) = try Fixture.coordinator(destination)
        _ = try context.insert("Photo", ["title": .string("old"), "image": .binary(Fixture.bytes(CoreDataExternalData.threshold + 5, seed: 42))])
        try context.save()
        try coordinator.removeStore(loaded)
        let oldFiles = Fixture.externalFiles(destination)
        #expect(oldFiles.count == 1)
        try Self.operations().replaceStore(at: destination, with: source)
        #expect(Self.hashes(source.deletingLastPathComponent()) == before, "the source is untouched")
        try Self.expectWhole(destination)
        #expect(Set(Fixture.externalFiles(destination)).isDisjoint(with: oldFiles))
        let listing = try FileManager.default.contentsOfDirectory(atPath: destination.deletingLastPathComponent().path).sorted()
        #expect(listing == [".App_SUPPORT", "App.sqlite"], "\(listing)")
    }

    @Test func backupAndRestoreCarryTheExternalData() throws {
        let dir = try TemporaryDirectory("coredata-extdata-backup")
        defer { dir.remove() }
        let url = try dir.directory("app").appendingPathComponent("App.sqlite")
        let (coordinator, loaded) = try Fixture.create(at: url)
        let backup = try dir.directory("backups").appendingPathComponent("Nightly.sqlite")
        let info = try coordinator.backupStore(loaded, to: backup, label: "nightly")
        #expect(info.label == "nightly")
        #expect(try Fixture.images(backup) == ["big": Fixture.large, "little": Fixture.small])
        #expect(Fixture.externalFiles(backup).count == 1)
        let backupHashes = Self.hashes(backup.deletingLastPathComponent())

        // Change the live store, then restore: the backup's values and files come back, the new ones go.
        let context = coordinator.newContext()
        let big = try #require(try context.fetch("Photo", where: "title == %@", "big").first)
        try big.setValue(.binary(Fixture.bytes(CoreDataExternalData.threshold + 3, seed: 5)), forKey: "image")
        try context.save()
        let changed = Fixture.externalFiles(url)
        let restored = try coordinator.restoreStore(loaded, fromBackupAt: backup)
        try coordinator.removeStore(restored)
        #expect(Self.hashes(backup.deletingLastPathComponent()) == backupHashes, "the backup is untouched")
        try Self.expectWhole(url)
        #expect(Set(Fixture.externalFiles(url)).isDisjoint(with: changed))
    }

    /// A store with CloudKit tables owns the asset folders beside it (both names, as neither is verified): relocate
    /// moves them, and they arrive with the store's name where theirs has it.
    @Test func relocateMovesCloudKitAssetFolders() throws {
        let dir = try TemporaryDirectory("coredata-extdata-cloudkit")
        defer { dir.remove() }
        let old = try dir.directory("old").appendingPathComponent("App.sqlite")
        let (coordinator, loaded) = try Fixture.create(at: old)
        try coordinator.removeStore(loaded)
        try CoreDataVerifyTests.damage(old, "CREATE TABLE ANSCKRECORDMETADATA (Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER)")
        _ = try dir.directory("old/ckAssetFiles")
        _ = try dir.directory("old/App_ckAssets")
        _ = try dir.write("asset one", to: "old/ckAssetFiles/A1")
        _ = try dir.write("asset two", to: "old/App_ckAssets/B2")
        let owned = CoreDataStoreBackend().ownedFiles(ofStoreAt: old).map(\.lastPathComponent)
        #expect(Set(owned) == ["App.sqlite", ".App_SUPPORT", "ckAssetFiles", "App_ckAssets"], "\(owned)")
        let before = Self.hashes(old.deletingLastPathComponent())
        let new = try dir.directory("shared").appendingPathComponent("Shared.sqlite")
        #expect(try Self.operations().relocateStore(from: old, to: new) == .moved)
        #expect((try FileManager.default.contentsOfDirectory(atPath: old.deletingLastPathComponent().path)).isEmpty)
        let after = Self.hashes(new.deletingLastPathComponent())
        #expect(after["ckAssetFiles/A1"] == before["ckAssetFiles/A1"])
        #expect(after["Shared_ckAssets/B2"] == before["App_ckAssets/B2"])
        #expect(try Fixture.images(new) == ["big": Fixture.large, "little": Fixture.small])
        #expect(Set(CoreDataStoreBackend().ownedFiles(ofStoreAt: new).map(\.lastPathComponent))
                == ["Shared.sqlite", ".Shared_SUPPORT", "ckAssetFiles", "Shared_ckAssets"])
    }

    @Test func convertingToLMDBAndBackKeepsEveryValue() throws {
        let dir = try TemporaryDirectory("coredata-extdata-convert")
        defer { dir.remove() }
        let source = try Self.source(in: dir)
        let before = Self.hashes(source.deletingLastPathComponent())
        let lmdb = dir.path("App.lmdb")
        let back = dir.path("Back.sqlite")
        let there = try Child.storectl(["convert", source.path, lmdb.path])
        #expect(there.status == 0, "\(there.stderr)")
        let again = try Child.storectl(["convert", lmdb.path, back.path, "--type", "coredata"])
        #expect(again.status == 0, "\(again.stderr)")
        #expect(Self.hashes(source.deletingLastPathComponent()) == before, "the source is untouched")
        try Self.expectWhole(back)
        try Self.expectIdentical(source, lmdb)
        try Self.expectIdentical(source, back)
        #expect(try Fixture.imageColumns(back)["big"]?.first == CoreDataExternalData.fileMarker)
    }
}
