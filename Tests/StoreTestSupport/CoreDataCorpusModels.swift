import Foundation

/// Which model in the shared corpus (`models/`) each corpus store was written with, and the stores whose model is
/// not there. The stores' metadata names no model, so the match comes from the source repositories: each store is
/// a fixture its project keeps beside the model version it was made with, named after that version (`_V2` ↔
/// `… 2.xcdatamodel`, `v1.1.0` ↔ `v1.1.0.xcdatamodel`; CoreDataPlus's `NSStoreModelVersionIdentifiers` `1`/`2` name
/// SampleModel/SampleModel2).
public enum CoreDataCorpusModels {
    /// Store (a path under the corpus, as `VERSION_HASHES.json` names it) → its model version, a path under
    /// `models/`.
    public static let storeModels: [String: String] = {
        var map: [String: String] = [
            "stores/alemar11__CoreDataPlus/SampleModel_V1.sqlite": "alemar11__CoreDataPlus__SampleModel.xcdatamodeld/SampleModel.xcdatamodel",
            "stores/alemar11__CoreDataPlus/SampleModel_V2.sqlite": "alemar11__CoreDataPlus__SampleModel.xcdatamodeld/SampleModel2.xcdatamodel",
            "stores/alemar11__CoreDataPlus/SampleModel3_V1.sqlite": "alemar11__CoreDataPlus__SampleModel3.xcdatamodeld/SampleModel3.xcdatamodel",
            "stores/duckduckgo__BrowserServicesKit/Bookmarks_V1.sqlite": "duckduckgo__BrowserServicesKit__BookmarksModel.xcdatamodeld/BookmarksModel.xcdatamodel",
            "stores/duckduckgo__BrowserServicesKit/SyncMetadata_V3.sqlite": "duckduckgo__BrowserServicesKit__SyncMetadata.xcdatamodeld/SyncMetadata 3.xcdatamodel",
            "stores/wibosco__CoreDataMigrationRevised-Example/CoreDataMigration_Example_1.sqlite": "wibosco__CoreDataMigrationRevised-Example__CoreDataMigration_Example.xcdatamodeld/CoreDataMigration_Example.xcdatamodel",
        ]
        for v in 2...5 {
            map["stores/duckduckgo__BrowserServicesKit/Bookmarks_V\(v).sqlite"] = "duckduckgo__BrowserServicesKit__BookmarksModel.xcdatamodeld/BookmarksModel \(v).xcdatamodel"
        }
        for v in 2...3 {
            map["stores/wibosco__CoreDataMigrationRevised-Example/CoreDataMigration_Example_\(v).sqlite"] = "wibosco__CoreDataMigrationRevised-Example__CoreDataMigration_Example.xcdatamodeld/CoreDataMigration_Example \(v).xcdatamodel"
        }
        for v in ["1.0.0", "1.1.0", "1.1.2", "1.2.0", "2.0.0"] {
            map["stores/jeffreybergier__CoreDataMigrationTests/Example_v\(v).sqlite"] = "jeffreybergier__CoreDataMigrationTests__Model.xcdatamodeld/v\(v).xcdatamodel"
        }
        return map
    }()

    /// Stores whose model is not in the corpus, and why; their hashes cannot be reproduced from an Xcode model.
    public static let storesWithoutModel: [String: String] = [
        "stores/RestKit__RestKit__RKSeedDatabase.sqlite": "its model is the pre-Xcode 4 binary format (models/legacy-xcode3-binary), which the loader rejects",
        "stores/alemar11__CoreDataPlus/SampleModel2_V1.sqlite": "its model exists only in code (SampleModel.xcdatamodeld's 'SampleModel2' version is a different model: Car/Person, not Author/Book)",
        "stores/alemar11__CoreDataPlus/SampleModel2_V2.sqlite": "its model exists only in code (SampleModel.xcdatamodeld's 'SampleModel2' version is a different model: Car/Person, not Author/Book)",
        "stores/magicalpanda__MagicalRecord__Recipes.sqlite": "the Recipes model is not in the corpus (MagicalRecord's TestModel is a different model)",
    ]
}
