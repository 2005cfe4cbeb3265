@_spi(BackendKit) @testable import CoreDataBackend
import Foundation
@_spi(BackendKit) import StoreAPI
import StoreTestSupport
import Testing

/// A Core Data store with external binary data, made through the public API: a photo whose image is above the
/// external-storage threshold (in a file), one below it (inline), a to-one into a hierarchy (`Album` with
/// `SharedAlbum`) and a many-to-many (`tags`).
enum ExternalDataFixture {
    static func schema() throws -> Schema {
        let json = """
            { "entities": [
              { "name": "Album",
                "attributes": [ { "name": "name", "type": "string" } ],
                "relationships": [ { "name": "photos", "destination": "Photo", "inverse": "album", "toMany": true } ] },
              { "name": "SharedAlbum", "parent": "Album",
                "attributes": [ { "name": "owner", "type": "string" } ] },
              { "name": "Photo",
                "attributes": [ { "name": "title", "type": "string" },
                                { "name": "image", "type": "binary", "allowsExternalBinaryDataStorage": true },
                                { "name": "thumb", "type": "binary" } ],
                "relationships": [ { "name": "album", "destination": "Album", "inverse": "photos" },
                                   { "name": "tags", "destination": "Tag", "inverse": "photos", "toMany": true } ] },
              { "name": "Tag",
                "attributes": [ { "name": "label", "type": "string" } ],
                "relationships": [ { "name": "photos", "destination": "Photo", "inverse": "tags", "toMany": true } ] }
            ] }
            """
        return try Schema(jsonData: Data(json.utf8))
    }

    /// `count` bytes of a pattern that differs with `seed`.
    static func bytes(_ count: Int, seed: UInt8) -> Data {
        Data((0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ Int(seed)) })
    }

    /// An image above the threshold, and one below it.
    static let large = bytes(CoreDataExternalData.threshold + 4097, seed: 7)
    static let small = bytes(1000, seed: 3)

    static func coordinator(_ url: URL) throws -> (StoreCoordinator, StoreContext, LoadedStore) {
        let coordinator = StoreCoordinator(schema: try schema(), registry: BackendRegistry(backends: [CoreDataStoreBackend()]))
        let loaded = try coordinator.addStore(StoreDescription(url: url, type: "coredata"))
        return (coordinator, coordinator.newContext(), loaded)
    }

    /// Fills a new store at `url`: a shared album with two photos (the large and the small image) and a tag on
    /// both. Returns the open coordinator, so a caller can keep the store's `-wal` from being checkpointed.
    @discardableResult
    static func create(at url: URL) throws -> (StoreCoordinator, LoadedStore) {
        let (coordinator, context, loaded) = try coordinator(url)
        let album = try context.insert("SharedAlbum", ["name": .string("Summer"), "owner": .string("Ada")])
        let big = try context.insert("Photo", ["title": .string("big"), "image": .binary(large), "thumb": .binary(small)])
        let little = try context.insert("Photo", ["title": .string("little"), "image": .binary(small)])
        let tag = try context.insert("Tag", ["label": .string("sea")])
        try album.setObjects([big, little], forKey: "photos")
        try tag.setObjects([big, little], forKey: "photos")
        try context.save()
        return (coordinator, loaded)
    }

    /// Creates the store at `url` and leaves it as a crashed app would: the main file, a `-wal` that was never
    /// checkpointed (holding every record), its `-shm` and the support folder. The store is written in a scratch
    /// directory and its files are copied while the writer still has it open.
    static func createWithWAL(at url: URL) throws {
        let scratch = try TemporaryDirectory("coredata-extdata-scratch")
        defer { scratch.remove() }
        let original = scratch.path(url.lastPathComponent)
        let (coordinator, loaded) = try create(at: original)
        let fm = FileManager.default
        for suffix in ["", "-wal", "-shm"] {
            try fm.copyItem(atPath: original.path + suffix, toPath: url.path + suffix)
        }
        try fm.copyItem(at: CoreDataStoreBackend.supportFolder(of: original), to: CoreDataStoreBackend.supportFolder(of: url))
        try coordinator.removeStore(loaded)
    }

    /// The sha256 of every file under `dir` (hidden ones and those in folders included), by relative path.
    static func hashes(_ dir: URL) -> [String: String] {
        var out: [String: String] = [:]
        let base = dir.standardizedFileURL.path
        guard let walker = FileManager.default.enumerator(atPath: base) else { return [:] }
        for case let relative as String in walker {
            var isDirectory: ObjCBool = false
            let path = base + "/" + relative
            guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), !isDirectory.boolValue else { continue }
            out[relative] = CoreDataCorpusTests.sha256(path)
        }
        return out
    }

    /// The external data files of the store at `url`.
    static func externalFiles(_ url: URL) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: CoreDataExternalData.folder(ofStoreAt: url).path)) ?? []).sorted()
    }

    /// The images of the store at `url` by title, read through the backend.
    static func images(_ url: URL) throws -> [String: Data] {
        let store = try CoreDataStoreBackend().open(at: url, options: StoreOptions(isReadOnly: true, createIfMissing: false), creating: nil)
        defer { try? store.close() }
        let schema = store.metadata.schema
        let photo = try #require(schema.entity(named: "Photo"))
        let title = try #require(photo.attributeIndex("title")), image = try #require(photo.attributeIndex("image"))
        var out: [String: Data] = [:]
        for r in try store.fetch(FetchRequest(entity: "Photo")) {
            guard case .string(let t) = r.attributes[title] else { continue }
            if case .binary(let d) = r.attributes[image] { out[t] = d } else { out[t] = Data() }
        }
        return out
    }

    /// The raw `ZIMAGE` column of each photo, by title.
    static func imageColumns(_ url: URL) throws -> [String: [UInt8]] {
        var out: [String: [UInt8]] = [:]
        for row in try ReadOnlyDatabase.open(url).rows("SELECT ZTITLE, ZIMAGE FROM ZPHOTO") {
            if let t = row[0].text { out[t] = row[1].bytes ?? [] }
        }
        return out
    }
}
