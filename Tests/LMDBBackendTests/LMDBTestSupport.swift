import Foundation
@testable import LMDBBackend
import StoreAPI
import StoreConformance
import Testing

/// A temporary directory the test creates and removes.
final class TemporaryDirectory {
    let url: URL

    init() throws {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("lmdb-tests-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    deinit {
        // Read-only test directories must be made writable again to be removed.
        chmodTree(url)
        try? FileManager.default.removeItem(at: url)
    }

    func path(_ name: String) -> URL { url.appendingPathComponent(name) }

    /// The names in the directory, sorted.
    func listing() -> [String] {
        (try? FileManager.default.contentsOfDirectory(atPath: url.path).sorted()) ?? []
    }

    private func chmodTree(_ url: URL) {
        _ = chmod(url.path, 0o755)
        for name in (try? FileManager.default.contentsOfDirectory(atPath: url.path)) ?? [] {
            let child = url.appendingPathComponent(name)
            var isDir: ObjCBool = false
            if FileManager.default.fileExists(atPath: child.path, isDirectory: &isDir), isDir.boolValue { chmodTree(child) }
        }
    }
}

/// Shared helpers: the schema, store creation and record building.
enum LMDBFixture {
    static let backend = LMDBStoreBackend()

    /// The conformance schema: every attribute type, inheritance, every relationship kind, uniqueness constraints.
    static func schema() throws -> Schema { try ConformanceSchema.make() }

    static func metadata(_ schema: Schema) -> StoreMetadata { StoreMetadata(storeType: "lmdb", schema: schema) }

    /// Creates a store at `url`.
    static func create(_ url: URL, schema: Schema, options: [String: String] = [:]) throws -> LMDBPersistentStore {
        try open(url, options: StoreOptions(backend: options), creating: metadata(schema))
    }

    /// Opens an existing store (or creates one when `creating` is given).
    static func open(_ url: URL, options: StoreOptions = StoreOptions(), creating: StoreMetadata? = nil) throws -> LMDBPersistentStore {
        let store = try backend.open(at: url, options: options, creating: creating)
        guard let lmdb = store as? LMDBPersistentStore else {
            throw StoreError.unsupported("the LMDB backend returned \(type(of: store))")
        }
        return lmdb
    }

    /// A record of `entity` with the named attribute and relationship values set (others at their defaults).
    static func record(
        _ schema: Schema, _ entity: String, _ pk: Int64, _ values: [String: StoreValue] = [:],
        _ relationships: [String: RelationshipValue] = [:]
    ) throws -> Record {
        let e = try schema.requireEntity(entity)
        var r = e.newRecord(primaryKey: pk)
        for (name, v) in values {
            guard let i = e.attributeIndex(name) else { throw StoreError.unknownProperty(entity: entity, property: name) }
            r.attributes[i] = v
        }
        for (name, v) in relationships {
            guard let i = e.relationshipIndex(name) else { throw StoreError.unknownProperty(entity: entity, property: name) }
            r.relationships[i] = v
        }
        return r
    }

    /// The records of every entity of `store`, by entity then key (through `scan`).
    static func allRecords(_ store: any PersistentStore, schema: Schema) throws -> [Record] {
        var out: [Record] = []
        for e in schema.entities {
            var after: Int64?
            while true {
                let page = try store.scan(entity: e.name, after: after, limit: 7)
                out += page
                guard let last = page.last, page.count == 7 else { break }
                after = last.primaryKey
            }
        }
        return out
    }

    /// The corpus directory (`../shared/corpus` from the package root), or `nil` when it is absent.
    static func corpus(_ path: String) -> URL? {
        let root = URL(fileURLWithPath: #filePath).resolvingSymlinksInPath().deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let url = root.deletingLastPathComponent().appendingPathComponent("shared/corpus").appendingPathComponent(path)
        return FileManager.default.fileExists(atPath: url.path) ? url : nil
    }

    /// Whether the tests run as root (permission checks do not apply then).
    static var isRoot: Bool { getuid() == 0 }
}

extension StoreError {
    /// The case name, for matching thrown errors in tests.
    var kind: String {
        Mirror(reflecting: self).children.first?.label ?? description
    }
}

/// Runs `body` and returns the ``StoreError`` it throws (`nil` when it throws nothing or something else).
func storeError(_ body: () throws -> Void) -> StoreError? {
    do {
        try body()
        return nil
    } catch let e as StoreError {
        return e
    } catch {
        return nil
    }
}
