import Foundation
import LMDBBackend
import Logging
import SQLiteBackend
import StoreAPI
@testable import StoreSync
import StoreSyncPostgres
import StoreTestSupport
import Testing
import XMLBackend

/// The library schema the sync tests use: authors, books and tags. `Tag.name` is a uniqueness constraint (the
/// deduplication key); `Book.related` is an ordered many-to-many.
enum SyncFixtures {
    static let schema: Schema = {
        do {
            return try Schema(entities: [
                EntityDescription(name: "Author", attributes: [
                    AttributeDescription(name: "name", type: .string),
                    AttributeDescription(name: "born", type: .integer32),
                ], relationships: [
                    RelationshipDescription(name: "books", destination: "Book", inverse: "author", isToMany: true, isOrdered: true),
                ]),
                EntityDescription(name: "Book", attributes: [
                    AttributeDescription(name: "title", type: .string),
                    AttributeDescription(name: "pages", type: .integer64),
                    AttributeDescription(name: "rating", type: .double),
                ], relationships: [
                    RelationshipDescription(name: "author", destination: "Author", inverse: "books"),
                    RelationshipDescription(name: "tags", destination: "Tag", inverse: "books", isToMany: true),
                    RelationshipDescription(name: "related", destination: "Book", inverse: "relatedBy", isToMany: true, isOrdered: true),
                    RelationshipDescription(name: "relatedBy", destination: "Book", inverse: "related", isToMany: true),
                ]),
                EntityDescription(name: "Tag", attributes: [
                    AttributeDescription(name: "name", type: .string),
                ], relationships: [
                    RelationshipDescription(name: "books", destination: "Book", inverse: "tags", isToMany: true),
                ], uniquenessConstraints: [["name"]]),
            ])
        } catch {
            preconditionFailure("the sync test schema is invalid: \(error)")
        }
    }()

    static let registry: BackendRegistry = {
        let registry = BackendRegistry(backends: [InMemoryBackend()])
        registry.register(SQLiteStoreBackend())
        registry.register(LMDBStoreBackend())
        registry.register(XMLStoreBackend())
        return registry
    }()

    static let options = SyncOptions(remote: URL(fileURLWithPath: "/unused-remote"), containerIdentifier: "tests")

    /// The remotes the scenario tests run through: memory always, PostgreSQL where the test server can run
    /// (always in CI, which requires it).
    static let remoteKinds: [RemoteKind] = PostgresTestServer.isAvailable ? [.memory, .postgres] : [.memory]

    /// The number of change files on a remote.
    static func fileCount(_ remote: any SyncRemote) async throws -> Int {
        try await remote.list(after: nil).names.count
    }

    /// The file name of a store of `type` called `name`.
    static func file(_ name: String, type: String) -> String {
        switch type {
        case "lmdb": "\(name).lmdb"
        case "xml": "\(name).xml"
        default: "\(name).sqlite"
        }
    }
}

/// A kind of remote a test runs through.
enum RemoteKind: String, Sendable, CaseIterable, CustomTestStringConvertible {
    case memory, postgres

    /// A new, empty remote of this kind: for PostgreSQL, a container in a schema of its own on the test server.
    func make(container: String = "tests") throws -> any SyncRemote {
        switch self {
        case .memory: InMemoryRemote()
        case .postgres: try PostgresRemote(url: PostgresTestServer.shared().storeURL("sync"), container: container)
        }
    }

    var testDescription: String { rawValue }
}

/// One replica: a store loaded with history tracking and sync options in its own coordinator, and its engine.
final class Replica {
    let coordinator: StoreCoordinator
    private(set) var loaded: LoadedStore
    private(set) var engine: SyncEngine
    let remote: any SyncRemote
    let timeout: Double

    /// A replica of `type` at `url` (`nil`: an anonymous in-memory store), of the library schema unless given another.
    init(_ url: URL?, type: String, remote: any SyncRemote, options: SyncOptions = SyncFixtures.options,
         timeout: Double = 30, logger: Logger = Logger(label: "sync-tests"), schema: Schema = SyncFixtures.schema) throws {
        coordinator = StoreCoordinator(schema: schema, registry: SyncFixtures.registry)
        var description = StoreDescription(url: url, type: type, syncOptions: options)
        description.options.historyTracking = true
        loaded = try coordinator.addStore(description)
        self.remote = remote
        self.timeout = timeout
        engine = try SyncEngine(store: loaded, coordinator: coordinator, remote: remote, timeout: timeout, logger: logger)
    }

    /// Reloads the engine after a store operation replaced the loaded store.
    func adopt(_ store: LoadedStore) throws {
        loaded = store
        engine = try SyncEngine(store: store, coordinator: coordinator, remote: remote, timeout: timeout)
    }

    @discardableResult
    func sync() async throws -> SyncReport { try await engine.sync() }

    func context() -> StoreContext { coordinator.newContext() }

    func count(_ entity: String) throws -> Int { try context().count(FetchRequest(entity: entity)) }

    /// The record with this global ID, if the store holds it.
    func object(_ id: UUID, in context: StoreContext) throws -> ManagedObject? {
        for entity in ["Author", "Book", "Tag"] {
            if let o = try context.fetch(FetchRequest(entity: entity)).first(where: { $0.globalID == id }) { return o }
        }
        return nil
    }

    /// Records only: metadata and history differ between replicas by design.
    func differences(from other: Replica) throws -> StoreDifferences {
        try StoreComparison(comparesMetadata: false, comparesHistory: false).compare(loaded.store, other.loaded.store)
    }

    @discardableResult
    func insert(_ entity: String, _ values: [String: StoreValue], globalID: UUID? = nil) throws -> UUID {
        let c = context()
        let o = try c.insert(entity, values, globalID: globalID)
        try c.save()
        return o.globalID
    }

    func update(_ id: UUID, _ body: (ManagedObject, StoreContext) throws -> Void) throws {
        let c = context()
        let o = try #require(try object(id, in: c))
        try body(o, c)
        try c.save()
    }

    func delete(_ id: UUID) throws {
        let c = context()
        let o = try #require(try object(id, in: c))
        try c.delete(o)
        try c.save()
    }

    func value(_ id: UUID, _ key: String) throws -> StoreValue? {
        let c = context()
        return try object(id, in: c)?.value(forKey: key)
    }
}

/// A remote that is always unreachable.
struct UnreachableRemote: SyncRemote {
    var displayName: String { "unreachable" }
    func identity() async throws -> String { throw SyncError.remote(displayName, reason: "no route to host") }
    func list(after cursor: SyncCursor?) async throws -> RemoteListing { throw SyncError.remote(displayName, reason: "no route to host") }
    func fetch(_ name: ChangeFileName) async throws -> Data { throw SyncError.remote(displayName, reason: "no route to host") }
    func put(_ data: Data, as name: ChangeFileName) async throws -> PutOutcome { throw SyncError.remote(displayName, reason: "no route to host") }
}

/// A remote that never answers.
struct HangingRemote: SyncRemote {
    var displayName: String { "hanging" }
    func identity() async throws -> String { try await hang() }
    func list(after cursor: SyncCursor?) async throws -> RemoteListing { try await hang() }
    func fetch(_ name: ChangeFileName) async throws -> Data { try await hang() }
    func put(_ data: Data, as name: ChangeFileName) async throws -> PutOutcome { try await hang() }
    private func hang<T>() async throws -> T {
        try await Task.sleep(for: .seconds(3_600))
        throw SyncError.remote(displayName, reason: "woke up")
    }
}
