@_spi(BackendKit) import CoreDataBackend
import Foundation
import StoreAPI
import StoreTestSupport
import Testing

/// Every entity hash in `VERSION_HASHES.json` (the stores' `NSStoreModelVersionHashes` and the compiled models'
/// `VersionInfo.plist`), reproduced by the framework's version hash from whatever the corpus has to compute it
/// from: the model the hash was made from (`models/`), or the store's own model cache decoded into a schema. Every
/// source that exists must give the hash; a hash with no source must belong to a store named here as having none.
@Suite struct VersionHashGroundTruthTests {
    static let truthFile = PackagePaths.corpus("VERSION_HASHES.json")
    static let models = PackagePaths.corpus("models")
    static var corpusIsPresent: Bool { truthFile != nil && models != nil }

    /// Stores with neither their model in the corpus nor a model cache (Core Data wrote none before 2012), and why.
    static let storesWithNoSource: [String: String] = [
        "stores/RestKit__RestKit__RKSeedDatabase.sqlite":
            "no model cache, and its model is the pre-Xcode 4 binary format, which the loader rejects",
        "stores/magicalpanda__MagicalRecord__Recipes.sqlite":
            "no model cache, and the Recipes model is not in the corpus",
    ]

    struct Tally {
        var total = 0
        var reproduced = 0
        var fromModel = 0
        var fromCache = 0
        /// Store or model → entities whose hash no source gave.
        var unreproduced: [String: [String]] = [:]

        /// Counts `truth`'s hashes, each reproduced when one of `sources` gives it; every source must agree.
        mutating func count(_ label: String, truth: [String: String], model: [String: String]?, cache: [String: String]?) {
            for (entity, expected) in truth.sorted(by: { $0.key < $1.key }) {
                total += 1
                if let model {
                    #expect(model[entity] == expected, "\(label): \(entity) from its model")
                    if model[entity] == expected { fromModel += 1 }
                }
                if let cache {
                    #expect(cache[entity] == expected, "\(label): \(entity) from its model cache")
                    if cache[entity] == expected { fromCache += 1 }
                }
                if model?[entity] == expected || cache?[entity] == expected {
                    reproduced += 1
                } else {
                    unreproduced[label, default: []].append(entity)
                }
            }
        }
    }

    static func hashes(ofModel path: String) throws -> [String: String] {
        let root = try #require(models)
        return try Schema(xcodeModelAt: root.appendingPathComponent(path)).versionHashes
    }

    @Test("every hash in VERSION_HASHES.json is reproduced from its model or its store's model cache",
          .enabled(if: VersionHashGroundTruthTests.corpusIsPresent, "corpus not found at ../shared/corpus; skipped"))
    func everyGroundTruthHash() throws {
        let url = try #require(Self.truthFile)
        let truth = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: url)) as? [String: Any])
        let stores = try #require(truth["stores"] as? [String: [String: Any]])
        let compiled = try #require(truth["compiled_models"] as? [String: [String: Any]])
        var tally = Tally()

        for (store, entry) in stores.sorted(by: { $0.key < $1.key }) {
            let expected = try #require(entry["entityHashes"] as? [String: String], "\(store)")
            let model = try CoreDataCorpusModels.storeModels[store].map(Self.hashes(ofModel:))
            let file = try CoreDataStoreFile.read(at: try #require(PackagePaths.corpus(store), "\(store) is missing"))
            let cache = try file.schema()?.versionHashes
            tally.count(store, truth: expected, model: model, cache: cache)
            if Self.storesWithNoSource[store] != nil {
                #expect(model == nil && cache == nil, "\(store) is listed as having no source, but has one")
            }
        }
        for (plist, entry) in compiled.sorted(by: { $0.key < $1.key }) {
            // models/X.momd/VersionInfo.plist was compiled from models/X.xcdatamodeld, one .mom per version.
            let bundle = URL(fileURLWithPath: plist).deletingLastPathComponent().deletingPathExtension().lastPathComponent
            let versions = try #require(entry["versions"] as? [String: [String: String]], "\(plist)")
            for (version, expected) in versions.sorted(by: { $0.key < $1.key }) {
                let path = "\(bundle).xcdatamodeld/\(version).xcdatamodel"
                tally.count(path, truth: expected, model: try Self.hashes(ofModel: path), cache: nil)
            }
        }

        let missing = tally.unreproduced.sorted { $0.key < $1.key }
            .map { "\($0.key) (\($0.value.joined(separator: ", ")): \(Self.storesWithNoSource[$0.key] ?? "unexpected"))" }
        print("VERSION_HASHES.json: \(tally.reproduced) of \(tally.total) entity hashes reproduced "
              + "(\(tally.fromModel) from their model, \(tally.fromCache) from their store's model cache); "
              + "not reproducible: \(missing.isEmpty ? "none" : missing.joined(separator: "; "))")
        #expect(tally.total > 0)
        #expect(Set(tally.unreproduced.keys) == Set(Self.storesWithNoSource.keys))
    }
}
