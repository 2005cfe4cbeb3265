import Foundation
import SQLiteBackend
import StoreAPI
import StoreTestSupport
import Testing

/// The SQLite backend's sniffer, metadata reader, open, integrity check and fetches, fed mutated database files:
/// our stores (WAL and rollback-journal layouts) and Core Data stores from the corpus.
@Suite struct SQLiteFileFuzzTests {
    static func corpus(in dir: TemporaryDirectory) throws -> [[UInt8]] {
        var seeds: [[UInt8]] = []
        for journal in ["WAL", "DELETE"] {
            let url = dir.path("fixture-\(journal).sqlite")
            try FuzzFixture.write(SQLiteStoreBackend(), at: url, journal: journal)
            seeds.append(Array(try Data(contentsOf: url)))
        }
        let library = dir.path("library.sqlite")
        let store = try SQLiteStoreBackend().open(at: library, options: StoreOptions(),
                                                  creating: StoreMetadata(storeType: "sqlite", storeUUID: FuzzFixture.gid(600), schema: try LibrarySample.schema()))
        try NDJSONImporter().importRecords(from: Data(LibrarySample.slice(count: 12, seed: 5)), into: store)
        try store.close()
        seeds.append(Array(try Data(contentsOf: library)))
        if let stores = PackagePaths.corpus("stores") {
            for name in ["jeffreybergier__CoreDataMigrationTests/Example_v1.0.0.sqlite",
                         "wibosco__CoreDataMigrationRevised-Example/CoreDataMigration_Example_1.sqlite"] {
                if let data = try? Data(contentsOf: stores.appendingPathComponent(name)) { seeds.append(Array(data)) }
            }
        }
        return seeds
    }

    /// Property: a mutated database file is read completely or refused with a ``StoreError`` naming it, and is
    /// never modified by being read; what opens copies to XML and reads back the same.
    @Test func mutatedDatabaseFiles() throws {
        let dir = try TemporaryDirectory("fuzz-sqlite")
        let campaign = FuzzCampaign(target: "sqlite-file", corpus: try Self.corpus(in: dir), dialect: .binary, maxSize: 256 << 10,
                                    ciIterations: 200, classify: FuzzErrors.store)
        let input = dir.path("input.sqlite")
        var accepted = 0
        let stats = campaign.run { bytes, _ in
            for suffix in ["-wal", "-shm", "-journal"] { try? FileManager.default.removeItem(atPath: input.path + suffix) }
            let original = Data(bytes)
            try original.write(to: input)
            do {
                try StoreProbe.readEverything(input, with: SQLiteStoreBackend())
            } catch {
                try Self.requireUntouched(input, original)
                throw error
            }
            try Self.requireUntouched(input, original)
            accepted += 1
            if accepted % 8 == 1 {
                try StoreProbe.copyMustMatch(input, with: SQLiteStoreBackend(), to: "xml", at: dir.path("copy.xml"))
            }
        }
        #expect(stats.accepted > 0 && stats.rejectedTotal > 0, "the campaign exercised both paths: \(stats)")
    }

    /// Property: with the data in a `-wal` beside the file (a store copied while open), a damaged log is read
    /// or refused, never trusted into a crash.
    @Test func mutatedWriteAheadLogs() throws {
        let dir = try TemporaryDirectory("fuzz-sqlite-wal")
        let live = dir.path("live.sqlite")
        let store = try SQLiteStoreBackend().open(at: live, options: StoreOptions(historyTracking: true),
                                                  creating: FuzzFixture.metadata(try FuzzFixture.schema(), type: "sqlite"))
        try store.save(StoreChanges(inserted: try FuzzFixture.records(try FuzzFixture.schema()), history: FuzzFixture.history()))
        let main = try Data(contentsOf: live)
        let wal = try Data(contentsOf: URL(fileURLWithPath: live.path + "-wal"))
        try store.close()
        #expect(wal.count > 0, "the open store's data is in its -wal")
        let input = dir.path("input.sqlite")
        let campaign = FuzzCampaign(target: "sqlite-wal", corpus: [Array(wal)], dialect: .binary, ciIterations: 50,
                                    classify: FuzzErrors.store)
        let stats = campaign.run { bytes, _ in
            for suffix in ["-wal", "-shm", "-journal"] { try? FileManager.default.removeItem(atPath: input.path + suffix) }
            try main.write(to: input)
            try Data(bytes).write(to: URL(fileURLWithPath: input.path + "-wal"))
            try StoreProbe.readEverything(input, with: SQLiteStoreBackend())
        }
        #expect(stats.accepted > 0, "\(stats)")
    }

    static func requireUntouched(_ url: URL, _ original: Data) throws {
        guard (try? Data(contentsOf: url)) == original else {
            throw FuzzViolation("reading modified the database file")
        }
    }
}
