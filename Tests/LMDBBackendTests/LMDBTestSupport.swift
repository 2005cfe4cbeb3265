import Foundation
@testable import LMDBBackend
import StoreAPI
import StoreConformance
import StoreTestSupport
import Testing

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
    static func corpus(_ path: String) -> URL? { PackagePaths.corpus(path) }

    /// Whether the tests run as root (permission checks do not apply then).
    static var isRoot: Bool { getuid() == 0 }
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
