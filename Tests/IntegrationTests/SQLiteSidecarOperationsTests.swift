import Foundation
import LMDBBackend
import SQLiteBackend
@_spi(BackendKit) import StoreAPI
import StoreTestSupport
import Testing

/// SQLite stores whose sidecars are in the states the corpus and crashed apps leave behind: every record only in
/// the `-wal` (with and without its `-shm`). Copy, convert, relocate and destroy must treat the sidecars as part of
/// the store: nothing lost, nothing left behind, source untouched.
@Suite struct SQLiteSidecarOperationsTests {
    enum Sidecars: String, CaseIterable, Sendable {
        case walAndShm, walWithoutShm
    }

    static let registry: BackendRegistry = {
        let r = BackendRegistry(backends: [InMemoryBackend()])
        r.register(SQLiteStoreBackend())
        r.register(LMDBStoreBackend())
        return r
    }()

    static func schema() throws -> Schema {
        try Schema(entities: [
            EntityDescription(name: "Note", attributes: [
                AttributeDescription(name: "text", type: .string),
                AttributeDescription(name: "n", type: .integer64),
            ]),
        ])
    }

    /// A directory with a store named `name` whose records live only in its `-wal`: the files of an open store,
    /// copied while it is open (as a crash or a file-level backup leaves them), without the `-shm` if asked.
    static func makeWALOnlyStore(in dir: URL, name: String, _ sidecars: Sidecars) throws -> (url: URL, records: [UUID: Record]) {
        let scratch = dir.appendingPathComponent("scratch-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: scratch) }
        let live = scratch.appendingPathComponent("live.sqlite")
        let schema = try schema()
        let store = try SQLiteStoreBackend().open(at: live, options: StoreOptions(),
                                                   creating: StoreMetadata(storeType: "sqlite", schema: schema))
        let entity = try schema.requireEntity("Note")
        let first = try store.allocatePrimaryKeys(root: "Note", count: 50)
        var records: [UUID: Record] = [:]
        for i in 0..<50 {
            var r = entity.newRecord(primaryKey: first + Int64(i))
            r.attributes = [.string("note \(i) — ünïcödé"), .integer64(Int64(i))]
            records[r.globalID] = r
        }
        try store.save(StoreChanges(inserted: Array(records.values)))
        let url = dir.appendingPathComponent(name)
        try FileManager.default.copyItem(at: live, to: url)
        try FileManager.default.copyItem(atPath: live.path + "-wal", toPath: url.path + "-wal")
        if sidecars == .walAndShm {
            try FileManager.default.copyItem(atPath: live.path + "-shm", toPath: url.path + "-shm")
        }
        try store.close()
        return (url, records)
    }

    /// The files of a directory and their bytes, without `-shm` files: SQLite creates or rebuilds a WAL
    /// database's shared-memory index whenever anything reads it (even read-only), and must: it holds no data, and
    /// deleting it behind another process's back is what corrupts stores.
    static func dataFiles(in dir: URL) -> [String: Data] {
        var out: [String: Data] = [:]
        for name in (try? FileManager.default.contentsOfDirectory(atPath: dir.path)) ?? [] where !name.hasSuffix("-shm") {
            out[name] = FileManager.default.contents(atPath: dir.appendingPathComponent(name).path)
        }
        return out
    }

    static func records(at url: URL, type: String) throws -> [UUID: Record] {
        let backend = try registry.backend(for: type)
        let store = try backend.open(at: url, options: StoreOptions(isReadOnly: true, createIfMissing: false), creating: nil)
        defer { try? store.close() }
        var out: [UUID: Record] = [:]
        for r in try store.fetch(FetchRequest(entity: "Note")) { out[r.globalID] = r }
        return out
    }

    @Test(arguments: Sidecars.allCases)
    func theMainFileAloneHoldsNoneOfTheRecords(_ sidecars: Sidecars) throws {
        let tmp = try TemporaryDirectory("sidecar-ops")
        let dir = tmp.url
        let (url, _) = try Self.makeWALOnlyStore(in: dir, name: "only.sqlite", sidecars)
        let bare = dir.appendingPathComponent("bare.sqlite")
        try FileManager.default.copyItem(at: url, to: bare)
        let fromMainFile = try? Self.records(at: bare, type: "sqlite")
        #expect((fromMainFile ?? [:]).isEmpty, "the fixture must keep its records only in the -wal")
    }

    @Test(arguments: Sidecars.allCases, ["sqlite", "lmdb"])
    func copyAndConvertReadTheWAL(_ sidecars: Sidecars, _ destinationType: String) throws {
        let tmp = try TemporaryDirectory("sidecar-ops")
        let dir = tmp.url
        let sourceDir = dir.appendingPathComponent("source")
        try FileManager.default.createDirectory(at: sourceDir, withIntermediateDirectories: true)
        let (url, records) = try Self.makeWALOnlyStore(in: sourceDir, name: "only.sqlite", sidecars)
        let before = Self.dataFiles(in: sourceDir)
        #expect(before.keys.sorted() == ["only.sqlite", "only.sqlite-wal"])

        let destination = dir.appendingPathComponent("copy.\(destinationType)")
        try StoreOperations(registry: Self.registry).copyStore(from: url, sourceType: "sqlite", to: destination, type: destinationType)
        let copied = try Self.records(at: destination, type: destinationType)
        #expect(copied.count == records.count)
        for (gid, want) in records {
            #expect(copied[gid]?.attributes == want.attributes && copied[gid]?.primaryKey == want.primaryKey)
        }
        #expect(Self.dataFiles(in: sourceDir) == before, "the source's database and -wal must be left byte for byte")
        #expect(Set(try Self.records(at: url, type: "sqlite").keys) == Set(records.keys), "the source still holds every record")
        #expect(!(try FileManager.default.contentsOfDirectory(atPath: dir.path)).contains { $0.hasPrefix(AtomicFile.stagingPrefix) })
    }

    @Test(arguments: Sidecars.allCases)
    func relocateMovesEverySidecar(_ sidecars: Sidecars) throws {
        let tmp = try TemporaryDirectory("sidecar-ops")
        let dir = tmp.url
        let oldDir = dir.appendingPathComponent("old")
        let newDir = dir.appendingPathComponent("shared folder")
        try FileManager.default.createDirectory(at: oldDir, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(at: newDir, withIntermediateDirectories: true)
        let (url, records) = try Self.makeWALOnlyStore(in: oldDir, name: "only.sqlite", sidecars)

        let target = newDir.appendingPathComponent("moved.sqlite")
        _ = try StoreOperations(registry: Self.registry).relocateStore(from: url, to: target, type: "sqlite")
        #expect(try FileManager.default.contentsOfDirectory(atPath: oldDir.path).isEmpty,
                "nothing of the store may stay behind, -wal included")
        let moved = try Self.records(at: target, type: "sqlite")
        #expect(Set(moved.keys) == Set(records.keys), "every record, including those only in the -wal, moved")
    }

    @Test(arguments: Sidecars.allCases)
    func destroyRemovesTheStoreAndEverySidecar(_ sidecars: Sidecars) throws {
        let tmp = try TemporaryDirectory("sidecar-ops")
        let dir = tmp.url
        let storeDir = dir.appendingPathComponent("store")
        try FileManager.default.createDirectory(at: storeDir, withIntermediateDirectories: true)
        let bystander = storeDir.appendingPathComponent("only.sqlite.notes")
        try Data("not the store's".utf8).write(to: bystander)
        let (url, _) = try Self.makeWALOnlyStore(in: storeDir, name: "only.sqlite", sidecars)

        try StoreOperations(registry: Self.registry).destroyStore(at: url, type: "sqlite")
        #expect(try FileManager.default.contentsOfDirectory(atPath: storeDir.path) == ["only.sqlite.notes"],
                "destroy leaves the directory as it was before the store existed")
    }
}
