import Foundation
import StoreAPI
import StoreTestSupport
import Testing
import XMLBackend

/// Saves never lose data: concurrent modification, a second writer and failed saves leave the file as it was.
@Suite struct XMLSafetyTests {
    private func makeStore(_ dir: TemporaryDirectory) throws -> (URL, Schema, any PersistentStore) {
        let url = dir.path("safe.xml")
        let schema = try Fixture.schema()
        let store = try openStore(url, creating: Fixture.metadata(schema))
        try store.save(StoreChanges(inserted: [schema.record("Tag", 1, ["label": "first"])]))
        return (url, schema, store)
    }

    @Test func saveOverAFileModifiedOnDiskFails() throws {
        let dir = try TemporaryDirectory("xmlstore-tests")
        let (url, schema, store) = try makeStore(dir)
        defer { try? store.close() }
        // Someone else rewrites the file (same bytes, new inode: what any atomic writer does).
        let other = dir.path("other.xml")
        try FileManager.default.copyItem(at: url, to: other)
        try FileManager.default.removeItem(at: url)
        try FileManager.default.moveItem(at: other, to: url)
        let before = try Data(contentsOf: url)
        #expect {
            try store.save(StoreChanges(inserted: [schema.record("Tag", 2, ["label": "second"])]))
        } throws: { error in
            guard case StoreError.modifiedOnDisk = error else { return false }
            return true
        }
        #expect(try Data(contentsOf: url) == before, "a refused save must not touch the file")
    }

    @Test func aSecondWriterIsLockedOut() throws {
        let dir = try TemporaryDirectory("xmlstore-tests")
        let (url, _, store) = try makeStore(dir)
        defer { try? store.close() }
        #expect {
            _ = try openStore(url, options: StoreOptions(timeout: 0.1))
        } throws: { error in
            guard case StoreError.locked = error else { return false }
            return true
        }
        // A reader is not a writer: a read-only open works while the writer holds the lock.
        let reader = try openStore(url, options: StoreOptions(isReadOnly: true))
        #expect(try reader.count(FetchRequest(entity: "Tag")) == 1)
        try reader.close()
        try store.close()
        let again = try openStore(url, options: StoreOptions(timeout: 0.1))
        try again.close()
    }

    @Test func aFailedSaveLeavesFileAndStoreUnchanged() throws {
        let dir = try TemporaryDirectory("xmlstore-tests")
        let (url, schema, store) = try makeStore(dir)
        defer { try? store.close() }
        let before = try Data(contentsOf: url)
        let listing = dir.listing()
        // A value of the wrong type cannot be written (it could not be read back): the save fails as a whole.
        let bad = schema.record("Item", 1, ["i16": .string("not a number")])
        let good = schema.record("Tag", 2, ["label": "second"])
        #expect(throws: StoreError.self) { try store.save(StoreChanges(inserted: [good, bad])) }
        #expect(try Data(contentsOf: url) == before)
        #expect(dir.listing() == listing, "no staging file may be left behind")
        #expect(try store.count(FetchRequest(entity: "Tag")) == 1, "the failed save must not apply in memory either")
        // A name XML cannot carry is refused the same way.
        var hostile = Fixture.metadata(try Schema(entities: [EntityDescription(name: "Bad\u{1}Name")]))
        hostile.storeUUID = store.metadata.storeUUID
        #expect(throws: StoreError.self) { try store.save(StoreChanges(metadata: hostile)) }
        #expect(try Data(contentsOf: url) == before)
        // The store still works afterwards.
        try store.save(StoreChanges(inserted: [good]))
        #expect(try store.count(FetchRequest(entity: "Tag")) == 2)
    }

    @Test func aReadOnlyStoreRefusesSaves() throws {
        let dir = try TemporaryDirectory("xmlstore-tests")
        let (url, schema, store) = try makeStore(dir)
        try store.close()
        let before = try Data(contentsOf: url)
        let reader = try openStore(url, options: StoreOptions(isReadOnly: true))
        defer { try? reader.close() }
        #expect(throws: StoreError.self) {
            try reader.save(StoreChanges(inserted: [schema.record("Tag", 9)]))
        }
        #expect(try Data(contentsOf: url) == before)
    }

    @Test func integrityCheckReportsDamage() throws {
        let dir = try TemporaryDirectory("xmlstore-tests")
        let (url, _, store) = try makeStore(dir)
        try store.close()
        #expect(try XMLStoreBackend().checkIntegrity(at: url).isEmpty)
        let data = try Data(contentsOf: url)
        try data.prefix(data.count / 2).write(to: url)
        let problems = try XMLStoreBackend().checkIntegrity(at: url)
        #expect(problems.count == 1)
        #expect(problems.first?.contains("line") == true)
    }

    @Test func copyAndDestroyHandleExactlyTheStoreFiles() throws {
        let dir = try TemporaryDirectory("xmlstore-tests")
        let (url, _, store) = try makeStore(dir)
        try store.close()
        let neighbour = try dir.write("keep me", to: "notes.txt")
        let copy = dir.path("copy.xml")
        try XMLStoreBackend().copyStore(from: url, to: copy)
        #expect(try Data(contentsOf: copy) == Data(contentsOf: url))
        #expect(throws: StoreError.self) { try XMLStoreBackend().copyStore(from: url, to: copy) }
        try XMLStoreBackend().destroyStore(at: url)
        #expect(!FileManager.default.fileExists(atPath: url.path))
        #expect(!FileManager.default.fileExists(atPath: url.path + ".lock"))
        #expect(FileManager.default.fileExists(atPath: neighbour.path))
        #expect(throws: StoreError.self) { try XMLStoreBackend().destroyStore(at: neighbour) }
        #expect(FileManager.default.fileExists(atPath: neighbour.path))
    }
}
