import Foundation
import StoreAPI
import Synchronization

/// A store of typed models for an app: open it once, then read and write from any task.
///
/// ```swift
/// let db = try ModelStore(for: [Author.self, Book.self], at: url, type: "sqlite")
/// try await db.write { tx in
///     let author = try tx.insert(Author(name: "Ursula K. Le Guin"))
///     try tx.insert(Book(title: "The Dispossessed", pages: 387, author: author.ref))
/// }
/// let long = try await db.read { try $0.fetch(Book.self, where: \.pages > 300, sortedBy: [.ascending(\.title)]) }
/// ```
///
/// Writes run one at a time, each saved atomically when its closure returns. Reads run beside them and beside
/// each other, on stores whose engine allows it (SQLite in WAL mode, LMDB); each of a read's fetches sees what was
/// committed when it runs. Values returned are `Sendable` snapshots. ``observe(_:where:sortedBy:)`` streams a
/// fetch's results again after each committed change that changes them: this store's writes, saves of any context
/// of its ``coordinator`` (sync pulls among them), and other processes' saves, which it looks for every
/// ``externalChangeCheckInterval`` while observations run (see <doc:Observation>).
///
/// `read` and `write` run their closures on the store's own threads, as GRDB's database queues do: never on the
/// caller's actor (called from the main actor, the engine's blocking calls never hold the main thread) and never on
/// a thread of Swift's cooperative pool, which has only as many threads as the machine has cores — a long write or
/// many slow reads there would stall every other task of the process. The closures are `@Sendable`; hand values
/// in by capture (`{ [book] tx in try tx.update(book) }`) and out by returning them.
public final class ModelStore: Sendable {
    /// The coordinator underneath, for the string-keyed API and the store operations (backup, migrate, …).
    public let coordinator: StoreCoordinator
    /// The model types the store was opened for.
    public let modelTypes: [any PersistentModel.Type]
    /// How often, while observations run, the store looks for other processes' saves
    /// (``StoreCoordinator/checkForExternalChanges()``); `nil`: never.
    public let externalChangeCheckInterval: Duration?
    private let gate = WriteGate()
    /// Where `read` and `write` run their closures: concurrent, since reads run beside each other and the write
    /// (one write at a time is ``gate``'s job, which also orders them with ``writeNow(_:)``).
    private let queue = DispatchQueue(label: "StoreModels.ModelStore", attributes: .concurrent)
    let observers = Mutex<ObserverList>(ObserverList())
    /// While observations run: the coordinator's change observer that refreshes them, and the task that looks for
    /// other processes' saves. Neither exists otherwise, so that saves of a store nobody observes list nothing.
    let watching = Mutex<Watching>(Watching())

    struct Watching: Sendable {
        var changes: ChangeObservation?
        var polling: Task<Void, Never>?
    }

    /// Opens the store at `url` (created when missing) of store type `type` (`sqlite`, `lmdb`, `xml`, `memory`, …,
    /// registered in `registry`) for `models`. The schema is derived from the types, or is `schema` (an Xcode model
    /// or JSON schema the app ships), which the types are then checked against. While observations run, other
    /// processes' saves are looked for every `externalChangeCheckInterval` (`nil`: never).
    public convenience init(
        for models: [any PersistentModel.Type], at url: URL?, type: String, options: StoreOptions = StoreOptions(),
        schema: Schema? = nil, registry: BackendRegistry = .shared,
        externalChangeCheckInterval: Duration? = .milliseconds(100)
    ) throws {
        try self.init(for: models, description: StoreDescription(url: url, type: type, options: options), schema: schema,
                      registry: registry, externalChangeCheckInterval: externalChangeCheckInterval)
    }

    /// Opens the store `description` describes (created when missing) for `models`: the initializer for a store
    /// with more than a URL and options — a configuration, or sync options, so that a `StoreSync` engine over
    /// ``coordinator`` syncs it (turn on ``StoreAPI/StoreOptions/historyTracking`` too; see the *Sync* article).
    /// The schema is derived from the types, or is `schema`, which the types are then checked against.
    public convenience init(
        for models: [any PersistentModel.Type], description: StoreDescription, schema: Schema? = nil,
        registry: BackendRegistry = .shared, externalChangeCheckInterval: Duration? = .milliseconds(100)
    ) throws {
        let schema = try schema ?? Schema(models: models)
        let coordinator = StoreCoordinator(schema: schema, registry: registry)
        try coordinator.addStore(description)
        try self.init(for: models, coordinator: coordinator, externalChangeCheckInterval: externalChangeCheckInterval)
    }

    /// Works over a coordinator that has its stores loaded. The model types are checked against its schema. Saves
    /// of the coordinator's other contexts refresh this store's observations too.
    public init(
        for models: [any PersistentModel.Type], coordinator: StoreCoordinator,
        externalChangeCheckInterval: Duration? = .milliseconds(100)
    ) throws {
        try coordinator.schema.check(models: models)
        self.coordinator = coordinator
        self.modelTypes = models
        self.externalChangeCheckInterval = externalChangeCheckInterval
    }

    /// Runs `body` with read access and returns what it returns. Throws `CancellationError`, without running
    /// `body`, when the task is cancelled before `body` starts; once started, `body` runs to its end.
    public func read<T: Sendable>(_ body: @escaping @Sendable (ModelReader) throws -> T) async throws -> T {
        let coordinator = self.coordinator
        return try await onQueue { try body(ModelReader(coordinator: coordinator)) }
    }

    /// Runs `body` with write access, after the writes started before it; saves its changes atomically when it
    /// returns (none when it throws), tells the observations they touch, and returns what `body` returned.
    /// Throws `CancellationError`, without running `body` or waiting further, when the task is cancelled before
    /// `body` starts (while it waits for the writes before it, say); once started, `body` runs to its end and its
    /// changes are saved.
    @discardableResult
    public func write<T: Sendable>(_ body: @escaping @Sendable (ModelWriter) throws -> T) async throws -> T {
        try await gate.enter()
        defer { gate.leave() }
        return try await onQueue { try self.performWrite(body) }
    }

    /// Runs `work` on ``queue`` and waits for it without holding a thread; throws `CancellationError` instead when
    /// the task is cancelled before `work` starts.
    private func onQueue<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        try Task.checkCancellation()
        let cancelled = CancellationFlag()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                queue.async {
                    guard !cancelled.isSet else { return continuation.resume(throwing: CancellationError()) }
                    continuation.resume(with: Result { try work() })
                }
            }
        } onCancel: {
            cancelled.set()
        }
    }

    /// ``read(_:)`` for synchronous code (a command-line tool, a test, a conformance check): runs `body` on the
    /// calling thread, which it blocks while the engine reads.
    public func readNow<T>(_ body: (ModelReader) throws -> T) throws -> T {
        try body(ModelReader(coordinator: coordinator))
    }

    /// ``write(_:)`` for synchronous code: waits, blocking the calling thread, for the writes started before it
    /// (async ones included), then runs `body` and saves its changes atomically when it returns. Do not call it
    /// from a task that another write waits for.
    @discardableResult
    public func writeNow<T>(_ body: (ModelWriter) throws -> T) throws -> T {
        gate.enterBlocking()
        defer { gate.leave() }
        return try performWrite(body)
    }

    private func performWrite<T>(_ body: (ModelWriter) throws -> T) throws -> T {
        let context = coordinator.newContext()
        let result = try body(ModelWriter(context: context))
        // The save tells the coordinator's observers, this store's observations among them.
        try context.save()
        return result
    }

    /// Re-runs every observation and emits to those whose results changed. Saves through the coordinator and
    /// other processes' saves refresh them on their own; call it after changing a store behind the coordinator's
    /// back (an import straight into a ``PersistentStore``).
    public func refreshObservations() {
        for o in observers.withLock({ $0.all }) { o.refresh(after: nil) }
    }

    func refreshObservations(after changes: SavedChanges) {
        for o in observers.withLock({ $0.all }) where changes.mayTouch(o.entities) {
            o.refresh(after: changes)
        }
    }

    /// Stops every observation and unloads the stores; reads and writes after it fail.
    public func close() throws {
        watching.withLock { w in
            w.changes = nil
            w.polling?.cancel()
            w.polling = nil
        }
        let list = observers.withLock { list in
            defer { list.removeAll() }
            return list.all
        }
        for o in list { o.finish() }
        for store in coordinator.stores { try coordinator.removeStore(store) }
    }
}

/// Set once a task is cancelled, read by the work it queued before that work starts.
private final class CancellationFlag: Sendable {
    private let value = Atomic(false)
    var isSet: Bool { value.load(ordering: .acquiring) }
    func set() { value.store(true, ordering: .releasing) }
}
