import Foundation
@_spi(BackendKit) import StoreAPI
import StoreConformance
import Testing

/// A backend that does not declare `orderedRelationships` runs the suite, and checks that depend on order are gated:
/// this wrapper around the in-memory backend hands every to-many relationship back in reverse order, so an ungated
/// order comparison anywhere in the suite fails here.
@Suite struct UnorderedBackendConformanceTests {
    static let suite = ConformanceSuite(backend: ReversingBackend())

    @Test(arguments: suite.groups)
    func conformance(_ group: ConformanceGroup) throws {
        try Self.suite.run(group)
    }

    @Test func theWrapperReallyReversesOrder() throws {
        let store = ReversingStore(MemoryStore(url: nil, metadata: StoreMetadata(storeType: "memory", schema: try ConformanceSchema.make())))
        let author = try store.allocatePrimaryKeys(root: "Author", count: 1)
        let works = try store.allocatePrimaryKeys(root: "Work", count: 2)
        let schema = store.metadata.schema
        var a = try schema.requireEntity("Author").newRecord(primaryKey: author)
        a.attributes[0] = "A"
        a.relationships[0] = .toMany([works, works + 1])
        var b1 = try schema.requireEntity("Book").newRecord(primaryKey: works)
        var b2 = try schema.requireEntity("Book").newRecord(primaryKey: works + 1)
        b1.attributes[0] = "one"
        b2.attributes[0] = "two"
        b1.relationships[0] = .toOne(author)
        b2.relationships[0] = .toOne(author)
        try store.save(StoreChanges(inserted: [a, b1, b2]))
        let read = try #require(try store.records(withKeys: [author], root: "Author").first)
        #expect(read.relationships[0] == .toMany([works + 1, works]))
    }
}

/// The in-memory backend, minus the ordered-relationships promise.
struct ReversingBackend: StoreBackend {
    let base = InMemoryBackend()
    var typeIdentifier: String { "reversing-memory" }
    var fileExtensions: [String] { [] }
    var capabilities: BackendCapabilities { base.capabilities.subtracting(.orderedRelationships) }
    func sniff(_ url: URL) -> SniffResult { base.sniff(url) }
    func ownedFiles(ofStoreAt url: URL) -> [URL] { base.ownedFiles(ofStoreAt: url) }
    func readMetadata(at url: URL) throws -> StoreMetadata { try base.readMetadata(at: url) }
    func writeMetadata(_ metadata: StoreMetadata, at url: URL) throws { try base.writeMetadata(metadata, at: url) }
    func open(at url: URL?, options: StoreOptions, creating: StoreMetadata?) throws -> any PersistentStore {
        ReversingStore(try base.open(at: url, options: options, creating: creating))
    }
    func destroyStore(at url: URL) throws { try base.destroyStore(at: url) }
    func copyStore(from source: URL, to destination: URL) throws { try base.copyStore(from: source, to: destination) }
    func checkIntegrity(at url: URL) throws -> [String] { try base.checkIntegrity(at: url) }
}

/// Reverses every to-many relationship it hands out.
final class ReversingStore: PersistentStore {
    let base: any PersistentStore
    init(_ base: any PersistentStore) { self.base = base }

    var url: URL? { base.url }
    var metadata: StoreMetadata { base.metadata }
    func fetch(_ request: FetchRequest) throws -> [Record] { try base.fetch(request).map(Self.reversed) }
    func count(_ request: FetchRequest) throws -> Int { try base.count(request) }
    func records(withKeys keys: [Int64], root: String) throws -> [Record] {
        try base.records(withKeys: keys, root: root).map(Self.reversed)
    }
    func scan(entity: String, after primaryKey: Int64?, limit: Int) throws -> [Record] {
        try base.scan(entity: entity, after: primaryKey, limit: limit).map(Self.reversed)
    }
    func save(_ changes: StoreChanges) throws { try base.save(changes) }
    func allocatePrimaryKeys(root: String, count: Int) throws -> Int64 { try base.allocatePrimaryKeys(root: root, count: count) }
    func history(after token: Int64?) throws -> [HistoryTransaction] { try base.history(after: token) }
    func close() throws { try base.close() }

    static func reversed(_ record: Record) -> Record {
        var r = record
        r.relationships = r.relationships.map { value in
            if case .toMany(let keys) = value { return .toMany(keys.reversed()) }
            return value
        }
        return r
    }
}
