import Foundation
import StoreAPI
import StoreTestSupport
import Testing

/// The decoders every backend's metadata read goes through: stored metadata and the JSON schema form, and stored
/// history transactions (binary, or JSON in stores written before). A schema that decodes must also be able to back a store of every type.
@Suite struct MetadataFuzzTests {
    static func corpus() throws -> [[UInt8]] {
        let fixture = try FuzzFixture.schema()
        let library = try LibrarySample.schema()
        var withEverything = FuzzFixture.metadata(fixture, type: "sqlite")
        withEverything.syncOptions = SyncOptions(remote: URL(string: "https://sync.example.com/x") ?? URL(fileURLWithPath: "/"),
                                                 containerIdentifier: "iCloud.fuzz", scope: .shared)
        withEverything.primaryKeyCounters = ["Item": 5, "Author": .max]
        withEverything.configuration = nil
        var seeds: [[UInt8]] = [
            Array(try withEverything.encoded()),
            Array(try StoreMetadata(storeType: "lmdb", storeUUID: FuzzFixture.gid(1), schema: library).encoded()),
            Array(try fixture.jsonData()),
            Array(try library.jsonData()),
        ]
        // History as stores hold it now (binary) and as stores written before hold it (JSON).
        seeds += try FuzzFixture.history().map { Array(try $0.encoded()) }
        seeds += try FuzzFixture.history().map { Array(try $0.legacyJSONEncoded()) }
        if let models = PackagePaths.corpus("models") {
            for dir in ["JohnEstropia__CoreStore__Model.xcdatamodel", "magicalpanda__MagicalRecord__TestModel.xcdatamodel",
                        "rentzsch__mogenerator__test.xcdatamodel"] {
                seeds.append(Array(try Schema(xcodeModelAt: models.appendingPathComponent(dir)).jsonData()))
            }
        }
        return seeds
    }

    /// Property: every mutated document decodes or fails with the decoder's documented error (a ``StoreError``
    /// for metadata and history, a ``SchemaError`` for schemas); whatever decodes encodes and decodes to the same
    /// value; a schema that decodes backs a working in-memory store, and now and then an SQLite, LMDB and XML one.
    @Test func mutatedMetadataSchemasAndHistory() throws {
        let dir = try TemporaryDirectory("fuzz-metadata")
        let url = dir.path("metadata.json")
        let campaign = FuzzCampaign(target: "metadata-json", corpus: try Self.corpus(), dialect: .json, gentle: true, ciIterations: 300) {
            FuzzErrors.store($0) ?? FuzzErrors.schema($0)
        }
        var schemas = 0
        let stats = campaign.run { bytes, index in
            let data = Data(bytes)
            var firstError: (any Error)?
            var decoded = false
            do {
                let m = try StoreMetadata.decode(data, url: url)
                decoded = true
                guard try StoreMetadata.decode(m.encoded(), url: url) == m else {
                    throw FuzzViolation("metadata does not survive encode → decode")
                }
                try XcodeModelFuzzTests.schemaBacksAStore(m.schema)
            } catch { if error is FuzzViolation { throw error }; firstError = error }
            do {
                let schema = try Schema(jsonData: data, file: url.path)
                decoded = true
                schemas += 1
                try XcodeModelFuzzTests.schemaSurvivesJSON(schema)
                try XcodeModelFuzzTests.schemaBacksAStore(schema)
                if schemas % 10 == 1 || FuzzConfiguration.isLongRun && schemas % 3 == 1 {
                    try Self.schemaBacksEveryBackend(schema, in: dir, index: index)
                }
            } catch { if error is FuzzViolation { throw error }; firstError = firstError ?? error }
            do {
                let t = try HistoryTransaction.decode(data, url: url)
                decoded = true
                guard try HistoryTransaction.decode(t.encoded(), url: url) == t else {
                    throw FuzzViolation("a history transaction does not survive encode → decode")
                }
            } catch { if error is FuzzViolation { throw error }; firstError = firstError ?? error }
            if !decoded, let firstError { throw firstError }
        }
        #expect(stats.accepted > 0 && stats.rejectedTotal > 0, "the campaign exercised both paths: \(stats)")
    }

    /// Creates a store of every persistent type with `schema`, inserts a record of every concrete entity, closes,
    /// reopens and reads everything, then destroys it. Typed refusals are fine; crashes and mismatches are not.
    static func schemaBacksEveryBackend(_ schema: Schema, in dir: TemporaryDirectory, index: Int) throws {
        for backend in FuzzBackends.persistent {
            let url = dir.path("schema-\(index).\(backend.typeIdentifier)")
            let coordinator = StoreCoordinator(schema: schema, registry: FuzzBackends.registry)
            defer { try? StoreOperations(registry: FuzzBackends.registry).destroyStore(at: url, type: backend.typeIdentifier) }
            let loaded = try coordinator.addStore(StoreDescription(url: url, type: backend.typeIdentifier))
            let context = coordinator.newContext()
            var inserted = 0
            for e in schema.entities where !e.isAbstract {
                _ = try context.insert(e.name, [:])
                inserted += 1
            }
            do { try context.save() } catch let error as StoreError {
                switch error {
                case .missingValue, .countViolation, .uniquenessViolation: inserted = 0
                default: throw error
                }
            }
            try coordinator.removeStore(loaded)
            let reopened = try backend.open(at: url, options: StoreProbe.readOnly, creating: nil)
            let count: Int
            do {
                count = try StoreTransfer.countRecords(reopened)
                try reopened.close()
            } catch {
                try? reopened.close()
                throw error
            }
            guard count == inserted else {
                throw FuzzViolation("\(backend.typeIdentifier) store: \(inserted) records saved, \(count) read back")
            }
            _ = try StoreProbe.readRecords(url, with: backend)
        }
    }
}
