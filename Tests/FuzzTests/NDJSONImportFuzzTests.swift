import Foundation
@_spi(BackendKit) import StoreAPI
import Testing

/// The NDJSON importer, fed mutated exports and slices of the bundled sample, into empty and populated stores.
@Suite struct NDJSONImportFuzzTests {
    struct Targets {
        let fixture: MemoryStore
        let library: MemoryStore
        let populatedLibrary: MemoryStore
    }

    static func targets() throws -> Targets {
        let fixtureSchema = try FuzzFixture.schema()
        let librarySchema = try LibrarySample.schema()
        let populated = MemoryStore(url: nil, metadata: StoreMetadata(storeType: "memory", schema: librarySchema))
        try NDJSONImporter().importRecords(from: Data(LibrarySample.slice(count: 40, seed: 99)), into: populated)
        return Targets(
            fixture: MemoryStore(url: nil, metadata: FuzzFixture.metadata(fixtureSchema, type: "memory")),
            library: MemoryStore(url: nil, metadata: StoreMetadata(storeType: "memory", schema: librarySchema)),
            populatedLibrary: populated)
    }

    /// The seeds: an export of the fixture store and slices of the sample (one overlapping the populated store).
    static func corpus() throws -> [[UInt8]] {
        let fixture = MemoryStore(url: nil, metadata: FuzzFixture.metadata(try FuzzFixture.schema(), type: "memory"))
        try fixture.save(StoreChanges(inserted: try FuzzFixture.records(try FuzzFixture.schema())))
        var seeds: [[UInt8]] = [try export(fixture)]
        for seed in [UInt64(1), 2, 3, 4, 99] { seeds.append(LibrarySample.slice(count: seed == 99 ? 6 : 15, seed: seed)) }
        return seeds
    }

    static func export(_ store: any PersistentStore) throws -> [UInt8] {
        var out: [UInt8] = []
        try NDJSONExporter().export(store) { out += Array($0) }
        return out
    }

    @Test func seedsImport() throws {
        let seeds = try Self.corpus()
        let targets = try Self.targets()
        #expect(seeds.count == 6)
        #expect(try NDJSONImporter().importRecords(from: Data(seeds[0]), into: targets.fixture.detachedCopy()).inserted == 17)
        for seed in seeds.dropFirst().dropLast() {
            #expect(try NDJSONImporter().importRecords(from: Data(seed), into: targets.library.detachedCopy()).inserted == 15)
        }
    }

    /// Property: a mutated file imports, or fails with an ``InterchangeError`` (or a ``StoreError``) and leaves the
    /// store exactly as it was. What imports exports again and imports into a fresh store as the same records.
    @Test func mutatedNDJSON() throws {
        let targets = try Self.targets()
        let campaign = FuzzCampaign(target: "ndjson-import", corpus: try Self.corpus(), dialect: .json, maxSize: 32 << 10,
                                    gentle: true, ciIterations: 400, classify: FuzzErrors.interchange)
        let fixtureNames = ["\"Item\"", "\"Person\"", "\"Dog\"", "\"Cat\""].map { Array($0.utf8) }
        let stats = campaign.run { bytes, index in
            // One store per input: the one whose schema the input was most likely derived from.
            let base = fixtureNames.contains(where: { FuzzText.find($0, in: bytes) != nil }) ? targets.fixture
                : index % 3 == 0 ? targets.populatedLibrary : targets.library
            let store = base.detachedCopy()
            let before = store.snapshot().recordCount
            do {
                try NDJSONImporter(maxProblems: 5).importRecords(from: Data(bytes), named: "input.ndjson", into: store)
            } catch {
                if store.snapshot().recordCount != before {
                    throw FuzzViolation("a failed import changed the store (\(before) → \(store.snapshot().recordCount) records): \(error)")
                }
                if error is InterchangeError, !"\(error)".contains("input.ndjson") {
                    throw FuzzViolation("the error does not name the input: \(error)")
                }
                throw error
            }
            try Self.exportImportsAgain(store, empty: MemoryStore(url: nil, metadata: base.metadata))
        }
        #expect(stats.accepted > 0 && stats.rejectedTotal > 0, "the campaign exercised both paths: \(stats)")
    }

    /// Exports `store`, imports that into `empty`, and compares the two by global ID.
    static func exportImportsAgain(_ store: MemoryStore, empty: MemoryStore) throws {
        let text = try export(store)
        do {
            try NDJSONImporter().importRecords(from: Data(text), named: "re-export.ndjson", into: empty)
        } catch {
            throw FuzzViolation("an imported store's export does not import again: \(error)")
        }
        let differences = try StoreComparison(comparesMetadata: false, comparesHistory: false).compare(store, empty)
        guard differences.isIdentical else {
            throw FuzzViolation("export → import does not reproduce the records: \(differences.summary)")
        }
    }
}
