import Foundation
import StoreAPI

/// Loads a schema from the files a user has: an Xcode model (`.xcdatamodeld`, `.xcdatamodel`, or its `contents`
/// file), the framework's JSON form, or a store (its own schema).
enum SchemaFiles {
    /// The schema of a model file, or of the store at `url` when it is not one and a backend recognises a store
    /// there (read from its metadata; the store is not changed).
    static func loadModelOrStore(_ url: URL) throws -> Schema {
        if SchemaFiles.looksLikeModel(url) { return try load(url) }
        guard let backend = try? Backends.registry.detectBackend(at: url) else { return try load(url) }
        return try backend.readMetadata(at: url).schema
    }

    static func load(_ url: URL) throws -> Schema {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory) else {
            throw CommandFailure("\(url.path): no such file or directory")
        }
        let ext = url.pathExtension.lowercased()
        if isDirectory.boolValue || ext == "xcdatamodeld" || ext == "xcdatamodel" || url.lastPathComponent == "contents" {
            return try Schema(xcodeModelAt: url)
        }
        let data: Data
        do { data = try Data(contentsOf: url) } catch {
            throw CommandFailure("\(url.path): cannot read: \(error.localizedDescription)")
        }
        switch data.first(where: { ![0x20, 0x09, 0x0A, 0x0D, 0xEF, 0xBB, 0xBF].contains($0) }) {
        case UInt8(ascii: "{"): return try Schema(jsonData: data, file: url.path)
        case UInt8(ascii: "<"): return try Schema(xcodeModelAt: url)
        default:
            throw CommandFailure("\(url.path): not a schema: expected an Xcode model (.xcdatamodeld, .xcdatamodel), the JSON schema form or a store")
        }
    }

    /// Whether `url` looks like a model rather than a store.
    static func looksLikeModel(_ url: URL) -> Bool {
        let ext = url.pathExtension.lowercased()
        return ["xcdatamodeld", "xcdatamodel", "json"].contains(ext) || url.lastPathComponent == "contents"
    }
}
