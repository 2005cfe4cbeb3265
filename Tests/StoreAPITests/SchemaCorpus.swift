import Foundation
import StoreTestSupport
import Testing
@testable import StoreAPI

/// The shared corpus of real Xcode models, read in place from `../shared/corpus` beside the package.
enum SchemaCorpus {
    static let root: URL = PackagePaths.root.appendingPathComponent("../shared/corpus").standardizedFileURL
    static let models = root.appendingPathComponent("models")
    static let features = models.appendingPathComponent("FEATURES.json")

    static var isPresent: Bool { FileManager.default.fileExists(atPath: features.path) }
    static let absentMessage: Comment = "corpus not found at ../shared/corpus (relative to the package root); skipped"

    /// Top-level models: every `.xcdatamodel` and `.xcdatamodeld` directly under models/.
    static var topLevelModels: [String] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: models.path)) ?? []
        return names.filter { $0.hasSuffix(".xcdatamodel") || $0.hasSuffix(".xcdatamodeld") }.sorted()
    }

    /// Every single model version, as a path relative to models/: the `.xcdatamodel` directories at the top level
    /// and every version inside each `.xcdatamodeld`.
    static var modelVersions: [String] {
        var out: [String] = []
        for name in topLevelModels {
            if name.hasSuffix(".xcdatamodel") { out.append(name); continue }
            let inner = (try? FileManager.default.contentsOfDirectory(atPath: models.appendingPathComponent(name).path)) ?? []
            out += inner.filter { $0.hasSuffix(".xcdatamodel") }.sorted().map { "\(name)/\($0)" }
        }
        return out
    }

    static func url(_ relative: String) -> URL { models.appendingPathComponent(relative) }

    static func load(_ relative: String) throws -> Schema { try Schema(xcodeModelAt: url(relative)) }

    /// FEATURES.json, keyed by the model directory relative to models/ (without `/contents`).
    static func featureTable() throws -> [String: [String: Any]] {
        let object = try JSONSerialization.jsonObject(with: Data(contentsOf: features))
        let table = try #require(object as? [String: [String: Any]])
        var out: [String: [String: Any]] = [:]
        for (key, value) in table {
            var k = key
            if k.hasPrefix("./") { k.removeFirst(2) }
            if k.hasSuffix("/contents") { k.removeLast("/contents".count) }
            out[k] = value
        }
        return out
    }
}

/// Xcode's name for each attribute type, to compare with FEATURES.json.
extension AttributeType {
    var xcodeName: String {
        switch self {
        case .integer16: "Integer 16"
        case .integer32: "Integer 32"
        case .integer64: "Integer 64"
        case .decimal: "Decimal"
        case .double: "Double"
        case .float: "Float"
        case .string: "String"
        case .boolean: "Boolean"
        case .date: "Date"
        case .binary: "Binary"
        case .transformable: "Transformable"
        case .uuid: "UUID"
        case .uri: "URI"
        }
    }
}

extension DeleteRule {
    var xcodeName: String {
        switch self {
        case .nullify: "Nullify"
        case .cascade: "Cascade"
        case .deny: "Deny"
        case .noAction: "No Action"
        }
    }
}

/// Xcode model files written for a test.
extension TemporaryDirectory {
    /// Writes a `.xcdatamodel` directory whose `contents` holds `body` inside a `<model>` element.
    @discardableResult
    func model(_ name: String, in folder: URL? = nil, body: String) throws -> URL {
        let dir = (folder ?? url).appendingPathComponent(name)
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        let xml = """
            <?xml version="1.0" encoding="UTF-8" standalone="yes"?>
            <model type="com.apple.IDECoreDataModeler.DataModel" documentVersion="1.0" minimumToolsVersion="Automatic">
            \(body)
            </model>
            """
        try Data(xml.utf8).write(to: dir.appendingPathComponent("contents"))
        return dir
    }

    func file(_ name: String, _ text: String) throws -> URL {
        let f = url.appendingPathComponent(name)
        try FileManager.default.createDirectory(at: f.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data(text.utf8).write(to: f)
        return f
    }
}
