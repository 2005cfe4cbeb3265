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
/// fetch's results again after each write that changes them.
///
/// `read` and `write` are not isolated to the caller's actor: called from the main actor, their closures run off
/// it, so the engine's blocking calls never hold the main thread. The closures are `@Sendable`; hand values in by
/// capture (`{ [book] tx in try tx.update(book) }`) and out by returning them.
public final class ModelStore: Sendable {
    /// The coordinator underneath, for the string-keyed API and the store operations (backup, migrate, …).
    public let coordinator: StoreCoordinator
    /// The model types the store was opened for.
    public let modelTypes: [any PersistentModel.Type]
    private let gate = WriteGate()
    let observers = Mutex<ObserverList>(ObserverList())

    /// Opens the store at `url` (created when missing) of store type `type` (`sqlite`, `lmdb`, `xml`, `memory`, …,
    /// registered in `registry`) for `models`. The schema is derived from the types, or is `schema` (an Xcode model
    /// or JSON schema the app ships), which the types are then checked against.
    public convenience init(
        for models: [any PersistentModel.Type], at url: URL?, type: String, options: StoreOptions = StoreOptions(),
        schema: Schema? = nil, registry: BackendRegistry = .shared
    ) throws {
        let schema = try schema ?? Schema(models: models)
        let coordinator = StoreCoordinator(schema: schema, registry: registry)
        try coordinator.addStore(StoreDescription(url: url, type: type, options: options))
        try self.init(for: models, coordinator: coordinator)
    }

    /// Works over a coordinator that has its stores loaded. The model types are checked against its schema.
    public init(for models: [any PersistentModel.Type], coordinator: StoreCoordinator) throws {
        try coordinator.schema.check(models: models)
        self.coordinator = coordinator
        self.modelTypes = models
    }

    /// Runs `body` with read access and returns what it returns.
    public func read<T: Sendable>(_ body: @Sendable (ModelReader) throws -> T) async throws -> T {
        try body(ModelReader(coordinator: coordinator))
    }

    /// Runs `body` with write access, after the writes started before it; saves its changes atomically when it
    /// returns (none when it throws), tells the observations they touch, and returns what `body` returned.
    public func write<T: Sendable>(_ body: @Sendable (ModelWriter) throws -> T) async throws -> T {
        await gate.enter()
        do {
            let result = try performWrite(body)
            await gate.leave()
            return result
        } catch {
            await gate.leave()
            throw error
        }
    }

    private func performWrite<T>(_ body: (ModelWriter) throws -> T) throws -> T {
        let context = coordinator.newContext()
        let result = try body(ModelWriter(context: context))
        var touched = Set<String>()
        for o in context.insertedObjects + context.updatedObjects + context.deletedObjects {
            touched.insert(o.entity.name)
            touched.formUnion(o.entity.ancestorNames)
        }
        try context.save()
        if !touched.isEmpty { refreshObservations(touching: touched) }
        return result
    }

    /// Re-runs every observation and emits to those whose results changed. Call it when the stores changed
    /// outside this `ModelStore`: another process's save found through history, a sync pull, a store operation.
    public func refreshObservations() {
        refreshObservations(touching: nil)
    }

    func refreshObservations(touching entities: Set<String>?) {
        let list = observers.withLock { $0.all }
        for o in list where entities.map({ !$0.isDisjoint(with: o.entities) }) ?? true {
            o.refresh()
        }
    }

    /// Stops every observation and unloads the stores; reads and writes after it fail.
    public func close() throws {
        let list = observers.withLock { list in
            defer { list.removeAll() }
            return list.all
        }
        for o in list { o.finish() }
        for store in coordinator.stores { try coordinator.removeStore(store) }
    }
}
