import Foundation
import SQLiteBackend
import StoreAPI
import StoreTestSupport
import Testing
import XMLBackend

/// The XML store reader, fed mutated XML stores: Apple-written ones from the corpus and ones our backend writes.
@Suite struct XMLStoreFuzzTests {
    /// The seeds: the corpus's XML stores, the fixture store and two library slices written by our backend.
    static func corpus(in dir: TemporaryDirectory) throws -> [[UInt8]] {
        var seeds: [[UInt8]] = []
        if let xml = PackagePaths.corpus("xmlstores") {
            for f in FuzzPaths.files(under: xml, { _ in true }) { seeds.append(Array(try Data(contentsOf: f))) }
        }
        let fixture = dir.path("fixture.xml")
        try FuzzFixture.write(XMLStoreBackend(), at: fixture)
        seeds.append(Array(try Data(contentsOf: fixture)))
        let schema = try LibrarySample.schema()
        for (i, seed) in [UInt64(1), 2].enumerated() {
            let url = dir.path("library\(i).xml")
            let store = try XMLStoreBackend().open(at: url, options: StoreOptions(),
                                                   creating: StoreMetadata(storeType: "xml", storeUUID: FuzzFixture.gid(500 + i), schema: schema))
            try NDJSONImporter().importRecords(from: Data(LibrarySample.slice(count: 12, seed: seed)), into: store)
            try store.close()
            seeds.append(Array(try Data(contentsOf: url)))
        }
        return seeds
    }

    @Test func seedsAreValidStores() throws {
        let dir = try TemporaryDirectory("fuzz-xml-seeds")
        let seeds = try Self.corpus(in: dir)
        #expect(seeds.count >= 3)
        for (i, seed) in seeds.enumerated() {
            let url = dir.path("seed\(i).xml")
            try Data(seed).write(to: url)
            #expect(XMLStoreBackend().sniff(url) == .store, "seed \(i)")
            #expect(try StoreProbe.readEverything(url, with: XMLStoreBackend()) > 0, "seed \(i) holds records")
        }
    }

    /// Property: every mutated file is read completely or refused with a ``StoreError`` naming the file; a file
    /// that opens can be copied (to XML, and now and then to SQLite) and reads back the same.
    @Test func mutatedXMLStores() throws {
        let dir = try TemporaryDirectory("fuzz-xml")
        let campaign = FuzzCampaign(target: "xml-store", corpus: try Self.corpus(in: dir), dialect: .xml, ciIterations: 300,
                                    classify: FuzzErrors.store)
        let input = dir.path("input.xml")
        var accepted = 0
        let stats = campaign.run { bytes, index in
            try Data(bytes).write(to: input)
            try StoreProbe.readEverything(input, with: XMLStoreBackend())
            accepted += 1
            if accepted % 4 == 1 {
                try StoreProbe.copyMustMatch(input, with: XMLStoreBackend(), to: "xml", at: dir.path("copy.xml"))
            }
            if accepted % 16 == 1 {
                try StoreProbe.copyMustMatch(input, with: XMLStoreBackend(), to: "sqlite", at: dir.path("copy.sqlite"))
            }
        }
        #expect(stats.accepted > 0 && stats.rejectedTotal > 0, "the campaign exercised both paths: \(stats)")
    }
}
