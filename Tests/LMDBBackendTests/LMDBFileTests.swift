import Foundation
@testable import LMDBBackend
@_spi(BackendKit) import StoreAPI
import StoreTestSupport
import Testing

/// Sniffing, owned files, destroy, the file form and copies.
@Suite struct LMDBFileTests {
    @Test func sniffTellsMissingGarbageForeignAndOwnApart() throws {
        let dir = try TemporaryDirectory("lmdb-tests")
        let backend = LMDBFixture.backend
        let schema = try LMDBFixture.schema()
        #expect(backend.sniff(dir.path("missing.lmdb")) == .none)
        #expect(backend.sniff(dir.url) == .none, "an empty directory")

        let garbageDir = dir.path("garbage.lmdb")
        try FileManager.default.createDirectory(at: garbageDir, withIntermediateDirectories: false)
        try Data((0..<10_000).map { UInt8(truncatingIfNeeded: $0 &* 7) }).write(to: garbageDir.appendingPathComponent("data.mdb"))
        #expect(backend.sniff(garbageDir) == .none)
        let text = dir.path("notes.mdb")
        try Data("hello".utf8).write(to: text)
        #expect(backend.sniff(text) == .none)

        // A valid LMDB environment written by someone else.
        let foreign = dir.path("foreign")
        try FileManager.default.createDirectory(at: foreign, withIntermediateDirectories: false)
        try RawLMDB.write(foreign) { txn, open in
            try RawLMDB.put(txn, try open(nil), Array("hello".utf8), Array("world".utf8))
            _ = try open("storeapi.other")
        }
        #expect(backend.sniff(foreign) == .foreign("LMDB environment, but not a store"))
        #expect(storeError { _ = try backend.readMetadata(at: foreign) }?.caseName == "unrecognizedStore")
        #expect(storeError { _ = try backend.open(at: foreign, options: StoreOptions(), creating: LMDBFixture.metadata(schema)) }?.caseName == "unrecognizedStore")
        #expect(storeError { try backend.destroyStore(at: foreign) }?.caseName == "unrecognizedStore")
        #expect(FileManager.default.fileExists(atPath: foreign.appendingPathComponent("data.mdb").path))

        let ours = dir.path("ours.lmdb")
        try LMDBFixture.create(ours, schema: schema).close()
        #expect(backend.sniff(ours) == .store)
        let file = dir.path("ours.mdb")
        try LMDBFixture.create(file, schema: schema).close()
        #expect(backend.sniff(file) == .store, "the file form (.mdb) is detected by what exists")
    }

    @Test func theCorpusEnvironmentIsForeignAndStaysUntouched() throws {
        guard let corpus = LMDBFixture.corpus("lmdb/minad__lmdb") else {
            Issue.record("../shared/corpus/lmdb/minad__lmdb is absent; skipping the corpus check")
            return
        }
        let backend = LMDBFixture.backend
        let before = try FileManager.default.contentsOfDirectory(atPath: corpus.path).sorted()
        let bytes = try Data(contentsOf: corpus.appendingPathComponent("data.mdb"))
        #expect(backend.sniff(corpus) == .foreign("LMDB environment, but not a store"))
        #expect(backend.sniff(corpus.appendingPathComponent("data.mdb")) == .foreign("LMDB environment, but not a store"))
        #expect(storeError { _ = try backend.readMetadata(at: corpus) }?.caseName == "unrecognizedStore")
        let opened = storeError { _ = try backend.open(at: corpus, options: StoreOptions(isReadOnly: true), creating: nil) }
        #expect(opened?.caseName == "unrecognizedStore")
        #expect(opened?.description.contains(corpus.path) == true, "the error names the path")
        #expect(storeError { try backend.destroyStore(at: corpus) } != nil)
        #expect(try FileManager.default.contentsOfDirectory(atPath: corpus.path).sorted() == before, "no lock file appeared")
        #expect(try Data(contentsOf: corpus.appendingPathComponent("data.mdb")) == bytes)
    }

    @Test func destroyRemovesExactlyTheStoreAndLeavesTheDirectoryAsBefore() throws {
        let dir = try TemporaryDirectory("lmdb-tests")
        let backend = LMDBFixture.backend
        let schema = try LMDBFixture.schema()
        try Data("keep".utf8).write(to: dir.path("neighbour.txt"))
        let before = dir.listing()

        let url = dir.path("app.lmdb")
        let store = try LMDBFixture.create(url, schema: schema)
        try store.save(StoreChanges(inserted: [schema.record("Tag", 1, ["name": "x"])]))
        #expect(backend.ownedFiles(ofStoreAt: url).map(\.lastPathComponent) == ["data.mdb", "lock.mdb", "app.lmdb"])
        #expect(storeError { try backend.destroyStore(at: url) }?.caseName == "locked", "an open store is not destroyed")
        try store.close()
        try backend.destroyStore(at: url)
        #expect(dir.listing() == before)
        #expect(storeError { try backend.destroyStore(at: url) }?.caseName == "storeNotFound")

        // In a directory the store did not create, the directory stays (empty), as it was.
        let existing = dir.path("given")
        try FileManager.default.createDirectory(at: existing, withIntermediateDirectories: false)
        try LMDBFixture.create(existing, schema: schema).close()
        #expect(backend.ownedFiles(ofStoreAt: existing).map(\.lastPathComponent) == ["data.mdb", "lock.mdb"])
        try backend.destroyStore(at: existing)
        #expect(try FileManager.default.contentsOfDirectory(atPath: existing.path).isEmpty)

        // The file form: the data file and its -lock file.
        let file = dir.path("app.mdb")
        try LMDBFixture.create(file, schema: schema).close()
        #expect(backend.ownedFiles(ofStoreAt: file).map(\.lastPathComponent) == ["app.mdb", "app.mdb-lock"])
        try backend.destroyStore(at: file)
        #expect(dir.listing() == (before + ["given"]).sorted())
        #expect(FileManager.default.contents(atPath: dir.path("neighbour.txt").path) == Data("keep".utf8))
    }

    @Test func destroyKeepsWhatSomeonePutInTheStoresDirectory() throws {
        let dir = try TemporaryDirectory("lmdb-tests")
        let url = dir.path("app.lmdb")
        try LMDBFixture.create(url, schema: try LMDBFixture.schema()).close()
        try Data("mine".utf8).write(to: url.appendingPathComponent("notes.txt"))
        try LMDBFixture.backend.destroyStore(at: url)
        // The store's own files are gone; the directory stays, with the note, at its path (not moved aside).
        #expect(try FileManager.default.contentsOfDirectory(atPath: url.path) == ["notes.txt"])
        #expect(dir.listing() == ["app.lmdb"])
    }

    @Test func aDirectoryWithOtherFilesIsNotUsed() throws {
        let dir = try TemporaryDirectory("lmdb-tests")
        let schema = try LMDBFixture.schema()
        let busy = dir.path("busy")
        try FileManager.default.createDirectory(at: busy, withIntermediateDirectories: false)
        try Data("x".utf8).write(to: busy.appendingPathComponent("other.txt"))
        let error = storeError { _ = try LMDBFixture.create(busy, schema: schema) }
        #expect(error?.caseName == "directoryUnusable")
        #expect(try FileManager.default.contentsOfDirectory(atPath: busy.path) == ["other.txt"], "nothing was written")
        #expect(storeError { _ = try LMDBFixture.open(busy) }?.caseName == "unrecognizedStore")
        #expect(storeError { _ = try LMDBFixture.open(dir.path("none.lmdb")) }?.caseName == "storeNotFound")
        #expect(storeError { _ = try LMDBFixture.create(dir.path("no/such/dir.lmdb"), schema: schema) }?.caseName == "directoryUnusable")
        #expect(dir.listing() == ["busy"])

        // The data file of a directory store is not opened as a store of its own (a second lock file would follow).
        let store = dir.path("s.lmdb")
        try LMDBFixture.create(store, schema: schema).close()
        #expect(storeError { _ = try LMDBFixture.open(store.appendingPathComponent("data.mdb")) }?.caseName == "refused")
        #expect(try FileManager.default.contentsOfDirectory(atPath: store.path).sorted() == ["data.mdb", "lock.mdb"])
    }

    @Test func copyWhileWritingGivesAConsistentStore() throws {
        let dir = try TemporaryDirectory("lmdb-tests")
        let backend = LMDBFixture.backend
        let schema = try LMDBFixture.schema()
        let url = dir.path("live.lmdb")
        let store = try LMDBFixture.create(url, schema: schema, options: ["lmdb.mapSize": "1M"])
        defer { try? store.close() }
        // Each save inserts 10 records, so every committed state holds a multiple of 10.
        let saves = 60
        let finished = DispatchSemaphore(value: 0)
        let writer = Thread {
            defer { finished.signal() }
            for s in 0..<saves {
                let rs = (0..<10).compactMap { i in
                    schema.record("Tag", Int64(s * 10 + i + 1), ["name": .string("tag \(s)-\(i)")])
                }
                try? store.save(StoreChanges(inserted: rs))
            }
        }
        writer.start()
        var copies: [URL] = []
        for i in 0..<4 {
            let copy = dir.path("copy\(i).lmdb")
            try backend.copyStore(from: url, to: copy)
            copies.append(copy)
        }
        finished.wait()
        #expect(try store.count(FetchRequest(entity: "Tag")) == saves * 10)
        let final = dir.path("final.mdb")
        try backend.copyStore(from: url, to: final)
        copies.append(final)

        for copy in copies {
            #expect(backend.sniff(copy) == .store)
            #expect(try backend.checkIntegrity(at: copy).isEmpty)
            let c = try LMDBFixture.open(copy)
            let n = try c.count(FetchRequest(entity: "Tag"))
            #expect(n % 10 == 0, "\(copy.lastPathComponent) holds \(n) records: a save was split")
            #expect(c.metadata.storeUUID == store.metadata.storeUUID, "a copy is the same logical store")
            try c.close()
        }
        let last = try LMDBFixture.open(final)
        #expect(try last.fetch(FetchRequest(entity: "Tag")) == store.fetch(FetchRequest(entity: "Tag")))
        try last.close()
        #expect(backend.ownedFiles(ofStoreAt: copies[0]).last == copies[0], "a copy owns the directory it was made in")
        try backend.destroyStore(at: copies[0])
        #expect(!FileManager.default.fileExists(atPath: copies[0].path))

        #expect(storeError { try backend.copyStore(from: url, to: copies[1]) }?.caseName == "storeExists")
        #expect(storeError { try backend.copyStore(from: dir.path("nothing.lmdb"), to: dir.path("x.lmdb")) }?.caseName == "storeNotFound")
        #expect(!dir.listing().contains { $0.hasPrefix(AtomicFile.stagingPrefix) }, "no staging leftovers")
    }
}
