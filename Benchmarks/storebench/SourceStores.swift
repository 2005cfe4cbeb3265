import Foundation
import StoreAPI
import XMLBackend

/// The source stores: one per backend per size, written straight from the generator through each backend's own
/// store API (not through a conversion, so a conversion bug cannot hide in its own input), built once and reused
/// by every section.
enum SourceStores {
    static let types = ["sqlite", "lmdb", "xml"]

    /// Where the store of `type` for `dataset` lives under `dir`.
    static func url(_ dir: URL, _ type: String) -> URL {
        dir.appendingPathComponent("source.\(type)")
    }

    /// The directory for one size: versioned, so a changed generator never reuses old stores.
    static func directory(root: URL, total: Int) -> URL {
        root.appendingPathComponent("dataset-v\(Dataset.version)-\(total)")
    }

    /// Builds the store of `type` unless a complete one from an earlier run is there (`--data-dir`). Returns the
    /// time spent building, or `nil` when it was reused.
    static func ensure(_ dataset: Dataset, type: String, in dir: URL) throws -> Timing? {
        let stamp = dir.appendingPathComponent(".complete-\(type)")
        let url = url(dir, type)
        if FileManager.default.fileExists(atPath: stamp.path), FileManager.default.fileExists(atPath: url.path) { return nil }
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        for leftover in (try? FileManager.default.contentsOfDirectory(atPath: dir.path)) ?? [] where leftover.hasPrefix("source.\(type)") {
            try FileManager.default.removeItem(at: dir.appendingPathComponent(leftover))
        }
        let (_, seconds) = try Measure.timing { try build(dataset, type: type, at: url) }
        _ = FileManager.default.createFile(atPath: stamp.path, contents: Data())
        return seconds
    }

    static func build(_ dataset: Dataset, type: String, at url: URL) throws {
        let backend = try BackendRegistry.shared.backend(for: type)
        if let atomic = backend as? any AtomicStoreBackend {
            try atomic.writeStore(GeneratedContents(dataset: dataset, metadata: dataset.metadata(type: type)), to: url)
            return
        }
        let store = try backend.open(at: url, options: StoreOptions(), creating: dataset.metadata(type: type))
        do {
            try dataset.forEachBatch(5_000) { try store.save(StoreChanges(inserted: $0)) }
            try store.close()
        } catch {
            try? store.close()
            throw error
        }
    }

    /// The generated records as an atomic backend's input, streamed.
    struct GeneratedContents: AtomicStoreContents {
        let dataset: Dataset
        let metadata: StoreMetadata
        func forEachRecord(_ body: (Record) throws -> Void) throws {
            try dataset.forEachBatch(5_000) { batch in for r in batch { try body(r) } }
        }
        func forEachHistoryTransaction(_ body: (HistoryTransaction) throws -> Void) throws {}
    }

    /// Total bytes of every file the store owns.
    static func size(_ url: URL, type: String) -> Int {
        guard let backend = try? BackendRegistry.shared.backend(for: type) else { return 0 }
        return backend.ownedFiles(ofStoreAt: url).reduce(0) { $0 + diskBytes($1) }
    }

    static func diskBytes(_ url: URL) -> Int {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory) else { return 0 }
        if !isDirectory.boolValue {
            return (try? FileManager.default.attributesOfItem(atPath: url.path)[.size] as? Int) ?? 0
        }
        let children = (try? FileManager.default.contentsOfDirectory(atPath: url.path)) ?? []
        return children.reduce(0) { $0 + diskBytes(url.appendingPathComponent($1)) }
    }
}
