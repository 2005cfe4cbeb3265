import Foundation
import StoreAPI
import StoreTestSupport
import Testing

/// The `.xcdatamodel` loader (and the `.xcdatamodeld` version chooser), fed mutated Xcode models.
@Suite struct XcodeModelFuzzTests {
    /// Every model `contents` in the corpus (and the legacy binary `elements`), plus the sample's model.
    static func modelCorpus() throws -> [[UInt8]] {
        var files = [PackagePaths.libraryModel.appendingPathComponent("Library.xcdatamodel/contents")]
        if let models = PackagePaths.corpus("models") {
            files += FuzzPaths.files(under: models) { $0 == "contents" || $0 == "elements" }
        }
        return try files.map { Array(try Data(contentsOf: $0)) }
    }

    /// Property: a mutated model loads, or fails with a ``SchemaError`` naming the file. A model that loads
    /// survives its JSON form unchanged and can back a store: one record per entity is inserted and saved (or
    /// refused with a ``StoreError``).
    @Test func mutatedModels() throws {
        let dir = try TemporaryDirectory("fuzz-model")
        let model = dir.path("Fuzz Modèl.xcdatamodel")
        try FileManager.default.createDirectory(at: model, withIntermediateDirectories: true)
        let contents = model.appendingPathComponent("contents")
        let campaign = FuzzCampaign(target: "xcdatamodel", corpus: try Self.modelCorpus(), dialect: .xml, ciIterations: 400) {
            FuzzErrors.schema($0) ?? FuzzErrors.store($0)
        }
        let stats = campaign.run { bytes, _ in
            try Data(bytes).write(to: contents)
            let schema: Schema
            do {
                schema = try Schema(xcodeModelAt: model)
            } catch {
                guard "\(error)".contains(model.lastPathComponent) else {
                    throw FuzzViolation("the error does not name the model: \(error)")
                }
                throw error
            }
            try Self.schemaSurvivesJSON(schema)
            try Self.schemaBacksAStore(schema)
        }
        #expect(stats.accepted > 0 && stats.rejectedTotal > 0, "the campaign exercised both paths: \(stats)")
    }

    /// Property: a bundle whose `.xccurrentversion` is damaged still loads a version or fails with a
    /// ``SchemaError`` naming the bundle or the file.
    @Test func mutatedCurrentVersionFiles() throws {
        var seeds: [[UInt8]] = []
        if let models = PackagePaths.corpus("models") {
            seeds = try FuzzPaths.files(under: models) { $0 == ".xccurrentversion" }.map { Array(try Data(contentsOf: $0)) }
        }
        let plist = """
            <?xml version="1.0" encoding="UTF-8"?>
            <!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
            <plist version="1.0"><dict><key>_XCCurrentVersionName</key><string>B 2.xcdatamodel</string></dict></plist>
            """
        seeds.append(Array(plist.utf8))
        let dir = try TemporaryDirectory("fuzz-bundle")
        let bundle = dir.path("Bündle.xcdatamodeld")
        let library = try Data(contentsOf: PackagePaths.libraryModel.appendingPathComponent("Library.xcdatamodel/contents"))
        for name in ["A.xcdatamodel", "B 2.xcdatamodel", "B 10.xcdatamodel"] {
            let version = bundle.appendingPathComponent(name)
            try FileManager.default.createDirectory(at: version, withIntermediateDirectories: true)
            try library.write(to: version.appendingPathComponent("contents"))
        }
        let current = bundle.appendingPathComponent(".xccurrentversion")
        let campaign = FuzzCampaign(target: "xccurrentversion", corpus: seeds, dialect: .xml, maxSize: 4 << 10, ciIterations: 150,
                                    classify: FuzzErrors.schema)
        let stats = campaign.run { bytes, _ in
            try Data(bytes).write(to: current)
            do {
                let versions = try XcodeModelVersions(bundleAt: bundle)
                guard versions.versions.contains(versions.current) else {
                    throw FuzzViolation("the current version \(versions.current.lastPathComponent) is not one of the versions")
                }
                _ = try Schema(xcodeModelAt: bundle)
            } catch let error as SchemaError {
                guard "\(error)".contains(bundle.lastPathComponent) else {
                    throw FuzzViolation("the error does not name the bundle: \(error)")
                }
                throw error
            }
        }
        #expect(stats.accepted > 0 && stats.rejectedTotal > 0, "the campaign exercised both paths: \(stats)")
    }

    static func schemaSurvivesJSON(_ schema: Schema) throws {
        let json = try schema.jsonData()
        let again = try Schema(jsonData: json, file: "round-trip.json")
        guard again == schema, again.versionHashes == schema.versionHashes else {
            throw FuzzViolation("the schema's JSON form reads back differently")
        }
    }

    /// Inserts one record of every concrete entity (defaults applied) into an in-memory store and saves.
    static func schemaBacksAStore(_ schema: Schema) throws {
        let coordinator = StoreCoordinator(schema: schema, registry: FuzzBackends.registry)
        try coordinator.addStore(StoreDescription(url: nil, type: "memory"))
        let context = coordinator.newContext()
        for e in schema.entities where !e.isAbstract {
            _ = try context.insert(e.name, [:])
        }
        do { try context.save() } catch let error as StoreError {
            switch error {
            case .missingValue, .countViolation, .uniquenessViolation: return  // required values left empty
            default: throw error
            }
        }
        for e in schema.entities { _ = try context.fetch(FetchRequest(entity: e.name)) }
    }
}
