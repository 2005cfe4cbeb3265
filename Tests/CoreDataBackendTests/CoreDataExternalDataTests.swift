@_spi(BackendKit) @testable import CoreDataBackend
import Foundation
@_spi(BackendKit) import StoreAPI
import StoreTestSupport
import Testing

/// External binary data written and read through the public API: the column format, the files in
/// `.Name_SUPPORT/_EXTERNAL_DATA`, which files a save keeps, writes and removes, and a missing file's error.
@Suite struct CoreDataExternalDataTests {
    typealias Fixture = ExternalDataFixture

    @Test func largeValuesGoToFilesAndSmallOnesStayInline() throws {
        let dir = try TemporaryDirectory("coredata-extdata")
        defer { dir.remove() }
        let url = dir.path("Photos.sqlite")
        let (coordinator, loaded) = try Fixture.create(at: url)
        try coordinator.removeStore(loaded)

        let files = Fixture.externalFiles(url)
        #expect(files.count == 1)
        let name = try #require(files.first)
        #expect(UUID(uuidString: name) != nil && name == name.uppercased(), "\(name)")
        #expect(FileManager.default.fileExists(atPath: dir.path(".Photos_SUPPORT/_EXTERNAL_DATA/\(name)").path))
        let columns = try Fixture.imageColumns(url)
        #expect(columns["big"] == [2] + Array(name.utf8) + [0])
        #expect(columns["little"] == [1] + Array(Fixture.small))
        #expect(try Data(contentsOf: dir.path(".Photos_SUPPORT/_EXTERNAL_DATA/\(name)")) == Fixture.large)
        // The attribute without external storage keeps its bytes as they are, large or small.
        let thumbs = try ReadOnlyDatabase.open(url).rows("SELECT ZTHUMB FROM ZPHOTO WHERE ZTITLE = 'big'")
        #expect(thumbs.first?.first?.bytes == Array(Fixture.small))

        let images = try Fixture.images(url)
        #expect(images["big"] == Fixture.large)
        #expect(images["little"] == Fixture.small)
        #expect(try CoreDataStoreBackend().checkIntegrity(at: url) == [])
    }

    @Test func savesKeepUnchangedFilesReplaceChangedOnesAndRemoveDeletedOnes() throws {
        let dir = try TemporaryDirectory("coredata-extdata-saves")
        defer { dir.remove() }
        let url = dir.path("Photos.sqlite")
        let (coordinator, loaded) = try Fixture.create(at: url)
        let first = Fixture.externalFiles(url)
        #expect(first.count == 1)
        let context = coordinator.newContext()
        let photos = try context.fetch("Photo", where: "title == %@", "big")
        let big = try #require(photos.first)
        let little = try #require(try context.fetch("Photo", where: "title == %@", "little").first)

        // A save that does not touch the image keeps its file.
        try little.setValue(.string("small one"), forKey: "title")
        try context.save()
        #expect(Fixture.externalFiles(url) == first)

        // A new large value: a new file, the old one removed after the commit.
        let other = Fixture.bytes(CoreDataExternalData.threshold + 1, seed: 99)
        try big.setValue(.binary(other), forKey: "image")
        try context.save()
        let second = Fixture.externalFiles(url)
        #expect(second.count == 1 && second != first)

        // Growing the small one past the threshold moves it to a file; shrinking the large one brings it inline.
        try little.setValue(.binary(Fixture.large), forKey: "image")
        try big.setValue(.binary(Fixture.small), forKey: "image")
        try context.save()
        let third = Fixture.externalFiles(url)
        #expect(third.count == 1 && !third.contains(second[0]))
        #expect(try Fixture.imageColumns(url)["big"] == [1] + Array(Fixture.small))

        // Deleting the record removes its file.
        try context.delete(little)
        try context.save()
        #expect(Fixture.externalFiles(url) == [])
        try coordinator.removeStore(loaded)
        #expect(try Fixture.images(url) == ["big": Fixture.small])
    }

    @Test func aFailedSaveLeavesNoNewFileAndKeepsTheOldOne() throws {
        let dir = try TemporaryDirectory("coredata-extdata-failed")
        defer { dir.remove() }
        let url = dir.path("Photos.sqlite")
        let (coordinator, loaded) = try Fixture.create(at: url)
        let before = Fixture.externalFiles(url)
        let context = coordinator.newContext()
        let big = try #require(try context.fetch("Photo", where: "title == %@", "big").first)
        try big.setValue(.binary(Fixture.bytes(CoreDataExternalData.threshold + 10, seed: 1)), forKey: "image")
        // Another connection holds the write lock past the writer's busy timeout: the save fails before commit.
        let blocker = try CoreDataWritableDatabase(url)
        try blocker.execute("BEGIN IMMEDIATE")
        #expect(throws: (any Error).self) { try context.save() }
        try blocker.execute("ROLLBACK")
        blocker.close()
        #expect(Fixture.externalFiles(url) == before)
        try coordinator.removeStore(loaded)
        #expect(try Fixture.images(url)["big"] == Fixture.large)
    }

    @Test func aMissingExternalFileIsAnErrorNamingIt() throws {
        let dir = try TemporaryDirectory("coredata-extdata-missing")
        defer { dir.remove() }
        let url = dir.path("Photos.sqlite")
        let (coordinator, loaded) = try Fixture.create(at: url)
        try coordinator.removeStore(loaded)
        let name = try #require(Fixture.externalFiles(url).first)
        let file = CoreDataExternalData.folder(ofStoreAt: url).appendingPathComponent(name)
        try FileManager.default.removeItem(at: file)
        do {
            _ = try Fixture.images(url)
            Issue.record("read a store whose external data file is missing")
        } catch StoreError.corruptStore(let at, let reason) {
            #expect(at == url)
            #expect(reason.contains(file.path) && reason.contains("missing") && reason.contains("Z_PK"), "\(reason)")
        }
        let problems = try CoreDataStoreBackend().checkIntegrity(at: url)
        #expect(problems.count == 1 && problems.first?.contains(file.path) == true, "\(problems)")
        let export = try Child.storectl(["export", url.path, "--output", dir.path("out.ndjson").path])
        #expect(export.status != 0 && export.stderr.contains(name), "\(export.stderr)")
        #expect(!export.killedBySignal)
    }

    @Test func columnContentsAreDecodedOrRefused() {
        typealias X = CoreDataExternalData
        #expect(X.content(of: []) == .empty)
        #expect(X.content(of: [1, 9, 9]) == .inline)
        #expect(X.content(of: X.fileColumn("ABC")) == .file("ABC"))
        for bad: [UInt8] in [[2], [2, 0], [2, 65], [2, 0x2E, 0x2E, 0], [2, 0x61, 0x2F, 0x62, 0], [2, 0xFF, 0xFE, 0], [3, 1]] {
            guard case .invalid = X.content(of: bad) else {
                Issue.record("accepted \(bad)")
                continue
            }
        }
    }
}
