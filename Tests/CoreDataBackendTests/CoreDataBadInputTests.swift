@_spi(BackendKit) @testable import CoreDataBackend
import Foundation
@_spi(BackendKit) import StoreAPI
import StoreTestSupport
import Testing

/// Bad input through the backend's public API and the storectl binary: a metadata plist that is not one, a model
/// cache with an unknown attribute type code, a truncated `-wal` (with and without its `-shm`). Each is a
/// `StoreError` naming the file, never a crash or a hang. (A missing external-data file:
/// ``CoreDataExternalDataTests``.)
@Suite struct CoreDataBadInputTests {
    typealias Fixture = ExternalDataFixture

    static func store(_ dir: TemporaryDirectory) throws -> URL {
        let url = dir.path("Photos.sqlite")
        let (coordinator, loaded) = try Fixture.create(at: url)
        try coordinator.removeStore(loaded)
        return url
    }

    /// `body` throws a `StoreError` whose text names `url` and contains `fragment`.
    static func expectError(_ url: URL, _ fragment: String, sourceLocation: SourceLocation = #_sourceLocation,
                            _ body: () throws -> Void) {
        do {
            try body()
            Issue.record("no error", sourceLocation: sourceLocation)
        } catch let error as StoreError {
            #expect("\(error)".contains(url.path) && "\(error)".contains(fragment), "\(error)", sourceLocation: sourceLocation)
        } catch {
            Issue.record("not a StoreError: \(error)", sourceLocation: sourceLocation)
        }
    }

    static func storectlFails(_ arguments: [String], naming fragments: [String],
                              sourceLocation: SourceLocation = #_sourceLocation) throws {
        let run = try Child.storectl(arguments)
        #expect(!run.killedBySignal && run.status != 0, "\(arguments)", sourceLocation: sourceLocation)
        for f in fragments {
            #expect(run.stderr.contains(f), "'\(f)' in \(run.stderr)", sourceLocation: sourceLocation)
        }
    }

    @Test func aMetadataPlistThatIsNotOneNamesTheFile() throws {
        let dir = try TemporaryDirectory("coredata-bad-plist")
        defer { dir.remove() }
        let url = try Self.store(dir)
        try CoreDataStoreFileTests.execute(url, "UPDATE Z_METADATA SET Z_PLIST = ?", blob: Array("<plist>not binary</plist>".utf8))
        let backend = CoreDataStoreBackend()
        Self.expectError(url, "Z_METADATA") { _ = try backend.readMetadata(at: url) }
        Self.expectError(url, "Z_METADATA") {
            _ = try backend.open(at: url, options: StoreOptions(isReadOnly: true, createIfMissing: false), creating: nil)
        }
        try Self.storectlFails(["info", url.path], naming: [url.lastPathComponent, "Z_METADATA"])
    }

    @Test func anUnknownAttributeTypeCodeNamesTheFile() throws {
        let dir = try TemporaryDirectory("coredata-bad-typecode")
        defer { dir.remove() }
        let url = try Self.store(dir)
        let cache = try RawDeflate.deflate(ModelCacheTests.model(typeCode: 4242))
        try CoreDataStoreFileTests.execute(url, "DELETE FROM Z_MODELCACHE", blob: [])
        try CoreDataStoreFileTests.execute(url, "INSERT INTO Z_MODELCACHE (Z_CONTENT) VALUES (?)", blob: cache)
        let backend = CoreDataStoreBackend()
        Self.expectError(url, "unknown attribute type code 4242") { _ = try backend.readMetadata(at: url) }
        Self.expectError(url, "unknown attribute type code 4242") {
            _ = try backend.open(at: url, options: StoreOptions(), creating: nil)
        }
        try Self.storectlFails(["export", url.path, "--output", dir.path("out.ndjson").path],
                               naming: [url.lastPathComponent, "4242"])
        #expect(!FileManager.default.fileExists(atPath: dir.path("out.ndjson").path))
    }

    /// A `-wal` cut short at several places (inside its header, inside its first frame, halfway, one byte short),
    /// with and without its `-shm`: SQLite would silently read an older (here: empty) store, so reads, copies and
    /// `storectl` refuse it naming the `-wal`; verify reports it; reading never changes it. Cut exactly between two
    /// frames it is whole as far as anyone can tell, and reads its whole transactions.
    @Test(arguments: [true, false])
    func aTruncatedWALIsAnErrorNamingIt(keepShm: Bool) throws {
        let dir = try TemporaryDirectory("coredata-bad-wal")
        defer { dir.remove() }
        let pristine = try dir.directory("pristine").appendingPathComponent("Photos.sqlite")
        try Fixture.createWithWAL(at: pristine)
        let walData = try Data(contentsOf: URL(fileURLWithPath: pristine.path + "-wal"))
        let frame = 24 + 4096
        #expect((walData.count - 32) % frame == 0 && walData.count > 32 + 2 * frame, "a whole WAL of several frames")
        let backend = CoreDataStoreBackend()
        for cut in [20, 32 + 24 + 100, walData.count / 2, walData.count - 1, 32 + frame] {
            let folder = try dir.directory("cut-\(cut)")
            let url = folder.appendingPathComponent("Photos.sqlite")
            try FileManager.default.copyItem(at: pristine, to: url)
            try FileManager.default.copyItem(at: CoreDataStoreBackend.supportFolder(of: pristine),
                                             to: CoreDataStoreBackend.supportFolder(of: url))
            try walData.prefix(cut).write(to: URL(fileURLWithPath: url.path + "-wal"))
            if keepShm { try FileManager.default.copyItem(atPath: pristine.path + "-shm", toPath: url.path + "-shm") }
            let walHash = CoreDataCorpusTests.sha256(url.path + "-wal")
            let info = try Child.storectl(["info", url.path])
            #expect(!info.killedBySignal, "cut \(cut): storectl info crashed")
            if (cut - 32) % frame == 0 {
                // Whatever survived is whole: an image is all of its bytes or absent.
                for (title, data) in try Fixture.images(url) {
                    #expect([Fixture.large, Fixture.small].contains(data), "cut \(cut): \(title) is torn")
                }
                #expect(info.status == 0, "cut \(cut): \(info.stderr)")
            } else {
                Self.expectError(url, "-wal was cut short") { _ = try Fixture.images(url) }
                Self.expectError(url, "-wal was cut short") { _ = try backend.readMetadata(at: url) }
                Self.expectError(url, "-wal was cut short") { try backend.copyStore(from: url, to: dir.path("copy-\(cut).sqlite")) }
                #expect(!FileManager.default.fileExists(atPath: dir.path("copy-\(cut).sqlite").path))
                let problems = try backend.checkIntegrity(at: url)
                #expect(problems.count == 1 && problems.first?.contains(url.path + "-wal") == true, "cut \(cut): \(problems)")
                #expect(info.status != 0 && info.stderr.contains("Photos.sqlite-wal"), "cut \(cut): \(info.stderr)")
            }
            #expect(CoreDataCorpusTests.sha256(url.path + "-wal") == walHash, "cut \(cut): the -wal changed")
        }
    }

    /// What is not a Core Data store is refused as one by the reading entry points, with the type it is, whether
    /// or not a `-wal` is beside it (the reading path that skips a separate sniff must refuse what the sniff
    /// refuses), and the file is left as it was.
    @Test(arguments: [false, true])
    func whatIsNotACoreDataStoreIsRefusedAsOne(emptyWAL: Bool) throws {
        let dir = try TemporaryDirectory("coredata-not-a-store")
        defer { dir.remove() }
        let plain = dir.path("plain.sqlite")
        try CoreDataStoreFileTests.execute(plain, "CREATE TABLE ZTHING (Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER)", blob: [])
        let text = dir.path("notes.sqlite")
        try Data("not a database".utf8).write(to: text)
        let folder = try dir.directory("folder.sqlite")
        let backend = CoreDataStoreBackend()
        let readOnly = StoreOptions(isReadOnly: true, createIfMissing: false)
        for (url, found) in [(plain, "not a Core Data store"), (text, "not a SQLite database"), (folder, "a directory")] {
            if emptyWAL, url != folder { _ = FileManager.default.createFile(atPath: url.path + "-wal", contents: Data()) }
            let before = url == folder ? "" : CoreDataCorpusTests.sha256(url.path)
            for (what, read) in [
                ("readMetadata", { _ = try backend.readMetadata(at: url) }),
                ("open", { _ = try backend.open(at: url, options: readOnly, creating: nil) }),
            ] as [(String, () throws -> Void)] {
                do {
                    try read()
                    Issue.record("\(what) \(url.lastPathComponent): no error")
                } catch StoreError.wrongStoreType(let at, let expected, let foundText) {
                    #expect(at == url && expected == "coredata", "\(what) \(url.lastPathComponent)")
                    #expect(foundText.contains(found), "\(what) \(url.lastPathComponent): \(foundText)")
                } catch {
                    Issue.record("\(what) \(url.lastPathComponent): \(error)")
                }
            }
            if url != folder { #expect(CoreDataCorpusTests.sha256(url.path) == before, "\(url.lastPathComponent) changed") }
        }
    }

    /// A store closed with an empty `-wal` (and its `-shm`) beside it, as SQLite leaves one, reads whole read-only,
    /// and none of its files change.
    @Test func aStoreWithAnEmptyWALReadsWholeAndUnchanged() throws {
        let dir = try TemporaryDirectory("coredata-empty-wal")
        defer { dir.remove() }
        let url = try Self.store(dir)
        let expected = try Fixture.images(url)
        #expect(!expected.isEmpty)
        _ = FileManager.default.createFile(atPath: url.path + "-wal", contents: Data())
        let files = [url.path, url.path + "-wal"]
        let hashes = files.map(CoreDataCorpusTests.sha256)
        let backend = CoreDataStoreBackend()
        #expect(try backend.readMetadata(at: url).storeType == "coredata")
        #expect(try Fixture.images(url) == expected)
        #expect(files.map(CoreDataCorpusTests.sha256) == hashes)
        #expect(!FileManager.default.fileExists(atPath: url.path + "-shm"), "reading created a -shm")
    }
}
