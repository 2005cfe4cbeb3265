import Foundation
@_spi(BackendKit) import StoreAPI
import Testing

/// The published conformance suite: the behaviour every backend must show, run against your backend with one call.
///
/// Add `StoreConformance` to your test target and run every group your backend supports:
///
/// ```swift
/// import StoreConformance
/// import Testing
///
/// @Suite struct MyBackendConformance {
///     static let suite = ConformanceSuite(backend: MyBackend())
///
///     @Test(arguments: suite.groups)
///     func conformance(_ group: ConformanceGroup) throws {
///         try Self.suite.run(group)
///     }
/// }
/// ```
///
/// Groups are gated by the backend's ``BackendCapabilities`` (as Level's `supports` manifest gates its suite):
/// a backend that does not declare ``BackendCapabilities/persistent`` skips the reopen-from-disk checks, one without
/// ``BackendCapabilities/history`` skips history, and so on. Every check creates its own temporary directory and
/// removes it afterwards.
public struct ConformanceSuite: Sendable {
    /// The backend under test.
    public let backend: any StoreBackend
    /// Other backends to run migrate and replace round trips with (the built-in ones, usually).
    public let peers: [any StoreBackend]
    /// A registry holding the backend and its peers; checks never touch ``BackendRegistry/shared``.
    public let registry: BackendRegistry
    /// The executable that plays the second process in ``ConformanceGroup/multiProcess`` (see
    /// ``ConformanceWorker``).
    public let worker: URL?
    /// Where the backend's stores go when they are not files (a server backend's URLs): a new location for each
    /// name; `nil` puts stores in the check's temporary directory.
    public let storeLocation: (@Sendable (String) -> URL)?

    /// Creates a suite for `backend`, with `peers` for cross-backend round trips and, for a backend that declares
    /// ``BackendCapabilities/multiProcess``, the `worker` executable that proves it. A backend whose stores live on
    /// a server gives `storeLocation`, a fresh store URL per call; the stores the checks make there are destroyed
    /// afterwards.
    public init(backend: any StoreBackend, peers: [any StoreBackend] = [], worker: URL? = nil,
                storeLocation: (@Sendable (String) -> URL)? = nil) {
        self.backend = backend
        self.peers = peers.filter { $0.typeIdentifier != backend.typeIdentifier }
        self.registry = BackendRegistry(backends: [InMemoryBackend(), backend] + peers)
        self.worker = worker
        self.storeLocation = storeLocation
    }

    /// The groups this backend supports, in a sensible order.
    public var groups: [ConformanceGroup] {
        ConformanceGroup.allCases.filter { $0.isSupported(by: backend.capabilities) }
    }

    /// Runs one group. A group the backend does not support is reported as a test issue, so a wrong manifest is
    /// noticed instead of passing silently.
    public func run(_ group: ConformanceGroup) throws {
        guard group.isSupported(by: backend.capabilities) else {
            Issue.record("\(backend.typeIdentifier) does not declare what \(group) needs; leave it out of the arguments")
            return
        }
        let harness = try Harness(suite: self)
        defer { harness.cleanUp() }
        switch group {
        case .metadata: try checkMetadata(harness)
        case .sniffing: try checkSniffing(harness)
        case .ownedFilesAndDestroy: try checkOwnedFilesAndDestroy(harness)
        case .attributeValues: try checkAttributeValues(harness)
        case .relationships:
            try checkRelationships(harness)
            try checkLinkingToStoredRecords(harness)
        case .deleteRules: try checkDeleteRules(harness)
        case .uniqueness: try checkUniqueness(harness)
        case .batchInsert: try checkBatchInsert(harness)
        case .fetching: try checkFetching(harness)
        case .persistence: try checkPersistence(harness)
        case .atomicSave: try checkAtomicSave(harness)
        case .history: try checkHistory(harness)
        case .schemaCompatibility: try checkSchemaCompatibility(harness)
        case .schemaEvolution: try checkSchemaEvolution(harness)
        case .badInput: try checkBadInput(harness)
        case .readOnly: try checkReadOnly(harness)
        case .concurrentReaders: try checkConcurrentReaders(harness)
        case .operations: try checkOperations(harness)
        case .multiProcess: try checkMultiProcess(harness)
        case .recordPages: try checkRecordPages(harness)
        case .observation: try checkObservation(harness)
        case .typedModels: try checkTypedModels(harness)
        case .aggregates: try checkAggregates(harness)
        case .mergePolicies: try checkMergePolicies(harness)
        }
    }

    /// Runs every supported group.
    public func runAll() throws {
        for g in groups { try run(g) }
    }
}

/// A group of conformance checks.
public enum ConformanceGroup: String, CaseIterable, Sendable, CustomStringConvertible {
    /// Metadata is written on create, readable without opening, writable in place; the store UUID is kept.
    case metadata
    /// `sniff` tells missing, garbage, foreign and own paths apart without writing anything.
    case sniffing
    /// `ownedFiles` lists every file; destroy removes exactly those and refuses what is not a store.
    case ownedFilesAndDestroy
    /// Every attribute type round-trips with edge values (Int64 min/max, NaN, ±∞, −0, NUL and non-ASCII strings,
    /// distant dates, empty and 1 MiB blobs, nil vs default).
    case attributeValues
    /// Every relationship kind keeps both sides and inheritance; ordered to-many relationships keep their order when
    /// the backend declares ``BackendCapabilities/orderedRelationships``. New records linked to stored ones, save
    /// after save, come back on both sides; a record deleted elsewhere fails a save that links to it.
    case relationships
    /// Cascade, nullify, deny and no-action rules.
    case deleteRules
    /// Single and compound uniqueness constraints, nil values, pending and stored conflicts.
    case uniqueness
    /// Batch inserts: rows land in one save with defaults and global IDs kept; a bad row (unknown name, wrong
    /// type, missing value, uniqueness conflict) fails the batch and nothing is written.
    case batchInsert
    /// Predicates, sorting, offset, limit and count match the reference evaluator.
    case fetching
    /// Everything survives closing and reopening the store.
    case persistence
    /// A failing save writes nothing.
    case atomicSave
    /// History transactions: tokens, authors, changed keys, tombstones, reading since a token.
    case history
    /// A store refuses a schema with other version hashes, and is left untouched.
    case schemaCompatibility
    /// Upgrades to later versions of the schema through ``StoreOperations/upgradeStore(at:type:to:options:)``, one
    /// lightweight change at a time (an added optional attribute, an added entity, a removed attribute, a rename
    /// through a renaming identifier, Int16 widened to Int64, optional made required with a default, a to-one made
    /// to-many): every record keeps its primary key, global ID and every value the new schema keeps; the store UUID
    /// and custom metadata are kept; the store opens with the new schema and refuses the old one (when an entity of
    /// the old one changed). An upgrade the data does not fit (a required value missing, duplicates under a new
    /// uniqueness constraint) is refused with the records named, and leaves the store as it was (a persistent
    /// store's files byte for byte).
    /// ``StoreOptions/migratesSchemaAutomatically`` upgrades on open; without it the newer schema is refused.
    case schemaEvolution
    /// Garbage, truncated files and unusable directories get typed errors and nothing is written.
    case badInput
    /// A read-only description never writes.
    case readOnly
    /// Readers on other threads see consistent data while a writer saves.
    case concurrentReaders
    /// Convert to every peer type and back, replace, migrate through a coordinator, backup while writing and
    /// restore, relocate (including a resumed one): identities, metadata, history and sync options preserved,
    /// sources untouched, nothing left behind.
    case operations
    /// Two processes write one store at once: nothing lost, no key handed out twice, each sees the other's saves
    /// (for backends that declare ``BackendCapabilities/multiProcess``; needs a ``ConformanceWorker``).
    case multiProcess
    /// Pages of records (for backends that declare ``BackendCapabilities/recordPages``): a page read with
    /// ``PageScanningStore/scanPage(entity:after:limit:)`` holds exactly what a scan returns, and a page inserted
    /// with ``PageInsertingStore/insert(_:)`` stores exactly what saving its records would — refusing, and writing
    /// nothing of, a page that does not fit its entity.
    case recordPages
    /// Change observation: a coordinator's observers hear of every committed save once — context saves with the
    /// records they inserted, updated and deleted, batch inserts — and never of a failed one; a context with
    /// `automaticallyMergesChanges` shows another context's save at its next fetch. For backends that declare
    /// ``BackendCapabilities/multiProcess``, a save through another coordinator on the same store is found by
    /// `checkForExternalChanges()`, once.
    case observation
    /// Typed models (`StoreModels`) on the backend: `@Model` structs inserted with to-one, to-many and ordered
    /// relationships (inverses kept), fetched with key-path predicates, sorts and limits, updated, refused whole
    /// on a uniqueness conflict, deleted with a cascade; every attribute type round-trips (optionals empty and
    /// set, enums, `Codable` values), and, for a persistent backend, survives reopening.
    case typedModels
    /// Aggregates and distinct values (``StoreContext/aggregate(_:)``): counts, sums, minimums, maximums and
    /// averages, grouped by attributes and by paths through to-one relationships, with predicates, match the
    /// reference ``AggregateEvaluator`` — in the engine where the backend computes them, else by the generic
    /// fallback — with nil, NaN and empty sets as ``AggregateRequest`` defines them, and a context's unsaved
    /// changes included.
    case aggregates
    /// Merge policies (``MergePolicy``): an insert that collides with a stored record on a uniqueness constraint
    /// fails the save under ``MergePolicy/error`` and becomes an update of the stored record — which keeps its
    /// primary key and global ID — under the others, with attributes, to-one and to-many relationships (and their
    /// inverses) as each policy defines; two inserts of one save that collide are merged alike; a policy set for
    /// one insert overrides the context's.
    case mergePolicies

    public var description: String { rawValue }

    /// Whether a backend with `capabilities` can run the group.
    public func isSupported(by capabilities: BackendCapabilities) -> Bool {
        switch self {
        case .persistence, .sniffing, .badInput, .ownedFilesAndDestroy: capabilities.contains(.persistent)
        case .history: capabilities.contains(.history)
        case .atomicSave: capabilities.contains(.transactions)
        case .multiProcess: capabilities.contains(.multiProcess) && capabilities.contains(.persistent)
        case .recordPages: capabilities.contains(.recordPages)
        default: true
        }
    }
}

/// What a check works with: a temporary directory and helpers to make stores in it.
struct Harness {
    let suite: ConformanceSuite
    let directory: URL
    let schema: Schema
    private let created = CreatedStores()

    /// Store URLs handed out, so named in-memory stores can be dropped afterwards.
    final class CreatedStores: @unchecked Sendable {
        private let lock = NSLock()
        private var urls: [URL] = []
        func add(_ url: URL) { lock.withLock { urls.append(url) } }
        var all: [URL] { lock.withLock { urls } }
    }

    init(suite: ConformanceSuite) throws {
        self.suite = suite
        self.schema = try ConformanceSchema.make()
        directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("storeapi-conformance-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    var backend: any StoreBackend { suite.backend }
    var isPersistent: Bool { backend.capabilities.contains(.persistent) }

    /// Whether `got` holds the same data as `want`, as far as the backend under test promises: a backend that does
    /// not declare ``BackendCapabilities/orderedRelationships`` may return ordered to-many relationships in any
    /// order, so for it they are compared as sets.
    func sameRecord(_ got: Record, _ want: Record, in entity: Entity) -> Bool {
        if backend.capabilities.contains(.orderedRelationships) { return got.isLogicallyEqual(to: want, in: entity) }
        return Self.ignoringOrder(got).isLogicallyEqual(to: Self.ignoringOrder(want), in: entity)
    }

    private static func ignoringOrder(_ record: Record) -> Record {
        var r = record
        r.relationships = r.relationships.map { value in
            if case .toMany(let keys) = value { return .toMany(keys.sorted()) }
            return value
        }
        return r
    }

    /// A path for a new store of the backend under test.
    func storeURL(_ name: String = "store") -> URL {
        if let location = suite.storeLocation {
            let url = location(name)
            created.add(url)
            return url
        }
        let url = directory.appendingPathComponent(name + "." + (backend.fileExtensions.first ?? "store"))
        created.add(url)
        return url
    }

    /// A location for a new store of `peer`: a file in the check's directory, or for the backend under test when
    /// its stores are not files, one from ``ConformanceSuite/storeLocation``.
    func storeURL(_ name: String, of peer: any StoreBackend) -> URL {
        if peer.typeIdentifier == backend.typeIdentifier, suite.storeLocation != nil { return storeURL(name) }
        return directory.appendingPathComponent(name + "." + (peer.fileExtensions.first ?? "store"))
    }

    func description(_ url: URL, options: StoreOptions = StoreOptions(), configuration: String? = nil) -> StoreDescription {
        StoreDescription(url: url, type: backend.typeIdentifier, configuration: configuration, options: options)
    }

    /// A coordinator with one store of the backend under test at `url`.
    func coordinator(_ url: URL, options: StoreOptions = StoreOptions(), schema: Schema? = nil) throws -> (StoreCoordinator, LoadedStore) {
        let c = StoreCoordinator(schema: schema ?? self.schema, registry: suite.registry)
        let s = try c.addStore(description(url, options: options))
        return (c, s)
    }

    /// Closes every store of a coordinator (so a reopen really reads from the backend).
    func close(_ coordinator: StoreCoordinator) throws {
        for s in coordinator.stores { try coordinator.removeStore(s) }
    }

    /// Names of the entries in the temporary directory, for before/after comparisons.
    func listing() -> [String] {
        (try? FileManager.default.contentsOfDirectory(atPath: directory.path).sorted()) ?? []
    }

    func cleanUp() {
        try? FileManager.default.removeItem(at: directory)
        // Named in-memory stores live in the process; drop the ones this check made.
        if !isPersistent || suite.storeLocation != nil {
            for url in created.all { try? backend.destroyStore(at: url) }
        }
    }
}
