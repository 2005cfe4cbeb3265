import Foundation
import LMDBBackend
import StoreAPI
import StoreTestSupport
import Testing

/// Damaged, truncated and foreign files get typed errors naming the path; nothing is written and nothing crashes.
@Suite struct LMDBBadInputTests {
    /// A store with some records, closed, and the bytes of its data file.
    static func makeStore(_ dir: TemporaryDirectory, _ name: String) throws -> (URL, Data) {
        let schema = try LMDBFixture.schema()
        let url = dir.path(name)
        let store = try LMDBFixture.create(url, schema: schema)
        let rs = (1...300).map { schema.record("Tag", Int64($0), ["name": .string("tag \($0) " + String(repeating: "x", count: 100))]) }
        try store.save(StoreChanges(inserted: rs))
        try store.close()
        return (url, try Data(contentsOf: url.appendingPathComponent("data.mdb")))
    }

    /// Every way in must refuse `url` with a typed error mentioning `mention`, and leave `data` as it is.
    static func expectRefused(_ url: URL, kind: String, mention: String, data: URL, _ comment: Comment) throws {
        let backend = LMDBFixture.backend
        let before = try Data(contentsOf: data)
        let schema = try LMDBFixture.schema()
        let opened = storeError { _ = try backend.open(at: url, options: StoreOptions(), creating: LMDBFixture.metadata(schema)) }
        #expect(opened?.caseName == kind, comment)
        #expect(opened?.description.contains(mention) == true, "\(comment): \(String(describing: opened))")
        #expect(storeError { _ = try backend.readMetadata(at: url) }?.caseName == kind, comment)
        #expect(storeError { _ = try backend.checkIntegrity(at: url) } != nil, comment)
        #expect(storeError { try backend.writeMetadata(LMDBFixture.metadata(schema), at: url) } != nil, comment)
        #expect(storeError { try backend.destroyStore(at: url) } != nil, comment)
        #expect(backend.sniff(url) != .store, comment)
        #expect(try Data(contentsOf: data) == before, "\(comment): the file was not modified")
    }

    @Test func garbageAndTruncatedDataFilesAreCorrupt() throws {
        let dir = try TemporaryDirectory("lmdb-tests")
        let (url, bytes) = try Self.makeStore(dir, "store.lmdb")
        let data = url.appendingPathComponent("data.mdb")
        #expect(bytes.count > 3 * 4096)

        for (name, damaged) in [
            ("garbage", Data((0..<bytes.count).map { UInt8(truncatingIfNeeded: $0 &* 131 &+ 17) })),
            ("truncated to 5000 bytes", bytes.prefix(5000)),
            ("truncated to 100 bytes", bytes.prefix(100)),
            ("truncated to the meta pages", bytes.prefix(8192)),
            ("truncated by one page", bytes.prefix(bytes.count - 4096)),
            ("empty", Data()),
        ] {
            try damaged.write(to: data)
            try Self.expectRefused(url, kind: "corruptStore", mention: data.path, data: data, "data.mdb \(name)")
        }

        // One damaged meta page is enough to refuse the file (liblmdb would refuse it too).
        var metaDamaged = bytes
        metaDamaged[4096 + 16] ^= 0xFF
        try metaDamaged.write(to: data)
        try Self.expectRefused(url, kind: "corruptStore", mention: data.path, data: data, "meta page 1 without its magic")
        var impossible = bytes
        impossible[40] = 3
        try impossible.write(to: data)
        try Self.expectRefused(url, kind: "corruptStore", mention: data.path, data: data, "an impossible page size")

        // Put back, the store works again.
        try bytes.write(to: data)
        let store = try LMDBFixture.open(url)
        #expect(try store.count(FetchRequest(entity: "Tag")) == 300)
        try store.close()
    }

    @Test func filesThatAreNotStoresAreRefused() throws {
        let dir = try TemporaryDirectory("lmdb-tests")
        let text = dir.path("notes.mdb")
        try Data("not a database at all, just text that is long enough".utf8).write(to: text)
        try Self.expectRefused(text, kind: "wrongStoreType", mention: text.path, data: text, "a text file")
        #expect(dir.listing() == ["notes.mdb"], "no lock file or staging file was left")
    }

    @Test func aNewerFormatVersionIsRefusedClearly() throws {
        let dir = try TemporaryDirectory("lmdb-tests")
        let (url, _) = try Self.makeStore(dir, "future.lmdb")
        try RawLMDB.write(url) { txn, open in
            try RawLMDB.put(txn, try open("storeapi.meta"), Array("formatVersion".utf8), Array("2".utf8))
        }
        let data = url.appendingPathComponent("data.mdb")
        let before = try Data(contentsOf: data)
        let error = storeError { _ = try LMDBFixture.open(url) }
        #expect(error?.caseName == "unsupported")
        #expect(error?.description.contains(url.path) == true && error?.description.contains("version 2") == true)
        #expect(storeError { _ = try LMDBFixture.backend.readMetadata(at: url) }?.caseName == "unsupported")
        #expect(storeError { try LMDBFixture.backend.copyStore(from: url, to: dir.path("copy.lmdb")) }?.caseName == "unsupported")
        #expect(try Data(contentsOf: data) == before)
    }

    @Test func damagedRecordsAreReportedNotCrashedOn() throws {
        let dir = try TemporaryDirectory("lmdb-tests")
        let (url, _) = try Self.makeStore(dir, "records.lmdb")
        #expect(try LMDBFixture.backend.checkIntegrity(at: url).isEmpty)
        try RawLMDB.write(url) { txn, open in
            let records = try open("records:Tag")
            try RawLMDB.put(txn, records, RawLMDB.key(5), [1, 99, 0, 0])
            try RawLMDB.put(txn, records, RawLMDB.key(7), [])
            try RawLMDB.put(txn, try open("unique:Tag:name"), [7, 3, 0x61, 0x62, 0x63], RawLMDB.key(12_345))
        }
        let problems = try LMDBFixture.backend.checkIntegrity(at: url)
        #expect(problems.contains { $0.contains("Tag/p5") }, "\(problems)")
        #expect(problems.contains { $0.contains("Tag/p7") }, "\(problems)")
        #expect(problems.contains { $0.contains("p12345") }, "\(problems)")
        let store = try LMDBFixture.open(url)
        defer { try? store.close() }
        let error = storeError { _ = try store.fetch(FetchRequest(entity: "Tag")) }
        #expect(error?.caseName == "corruptStore" && error?.description.contains("data.mdb") == true)
        // Undamaged records are still readable one by one.
        #expect(try store.records(withKeys: [1, 2], root: "Tag").count == 2)
    }

    @Test func readOnlyDescriptionsNeverWrite() throws {
        let dir = try TemporaryDirectory("lmdb-tests")
        let (url, _) = try Self.makeStore(dir, "ro.lmdb")
        let data = url.appendingPathComponent("data.mdb")
        let before = try Data(contentsOf: data)
        let schema = try LMDBFixture.schema()
        let store = try LMDBFixture.open(url, options: StoreOptions(isReadOnly: true))
        #expect(try store.count(FetchRequest(entity: "Tag")) == 300)
        #expect(storeError { try store.save(StoreChanges(inserted: [schema.record("Tag", 999)])) }?.caseName == "readOnly")
        #expect(storeError { _ = try store.allocatePrimaryKeys(root: "Tag", count: 1) }?.caseName == "readOnly")
        try store.close()
        #expect(try Data(contentsOf: data) == before)
        #expect(storeError { _ = try LMDBFixture.open(dir.path("absent.lmdb"), options: StoreOptions(isReadOnly: true), creating: LMDBFixture.metadata(schema)) }?.caseName == "readOnly")
        #expect(!FileManager.default.fileExists(atPath: dir.path("absent.lmdb").path))
    }

    @Test(.enabled(if: !LMDBFixture.isRoot, "permissions do not bind root"))
    func aReadOnlyLocationOpensReadOnlyAndRefusesWrites() throws {
        let dir = try TemporaryDirectory("lmdb-tests")
        let (url, _) = try Self.makeStore(dir, "locked.lmdb")
        try FileManager.default.removeItem(at: url.appendingPathComponent("lock.mdb"))
        #expect(chmod(url.appendingPathComponent("data.mdb").path, 0o444) == 0)
        #expect(chmod(url.path, 0o555) == 0)
        let writable = storeError { _ = try LMDBFixture.open(url) }
        #expect(writable?.caseName == "readOnly" && writable?.description.contains(url.path) == true)
        let store = try LMDBFixture.open(url, options: StoreOptions(isReadOnly: true))
        #expect(try store.count(FetchRequest(entity: "Tag")) == 300)
        try store.close()
        #expect(try FileManager.default.contentsOfDirectory(atPath: url.path) == ["data.mdb"], "no lock file was created")
        #expect(chmod(dir.url.path, 0o555) == 0)
        let schema = try LMDBFixture.schema()
        #expect(storeError { _ = try LMDBFixture.create(dir.path("new.lmdb"), schema: schema) }?.caseName == "readOnly")
        #expect(chmod(dir.url.path, 0o755) == 0)
    }
}
