import StoreAPI
import Synchronization

/// What an observation emits: the fetch's results now, and how they differ from the previous emission.
public struct ModelChanges<Model: PersistentModel>: Sendable {
    /// Every result, in the fetch's order.
    public let results: [Model]
    /// Results that were not in the previous emission (every result, in the first).
    public let inserted: [Model]
    /// Results whose stored values changed since the previous emission.
    public let updated: [Model]
    /// Records of the previous emission that no longer match (deleted, or changed so that they do not match).
    public let deleted: [PersistentID]
    /// Results that stayed but changed places among the others that stayed: the fewest whose moves turn the
    /// previous order into this one (a table view's moves), in the fetch's order.
    public let moved: [PersistentID]
}

extension ModelStore {
    /// The results of a fetch now, and again after each committed write that changes them, with what changed.
    ///
    /// ```swift
    /// for try await change in db.observe(Book.self, where: \.pages > 300, sortedBy: [.ascending(\.title)]) {
    ///     show(change.results)        // change.inserted, .updated, .deleted for animations
    /// }
    /// ```
    ///
    /// A change that leaves the results as they were (it changed other records, or other entities) emits nothing.
    /// Saves through the store's coordinator — this store's writes, other contexts, sync pulls — are seen as soon as
    /// they commit; other processes' saves within ``externalChangeCheckInterval``. The sequence ends when the task
    /// iterating it is cancelled or the store is closed, and with an error when a fetch fails.
    public func observe<M: PersistentModel>(
        _ type: M.Type, where predicate: ModelPredicate<M>? = nil, sortedBy sort: [ModelSort<M>] = []
    ) -> AsyncThrowingStream<ModelChanges<M>, any Error> {
        let (stream, continuation) = AsyncThrowingStream.makeStream(of: ModelChanges<M>.self)
        let request: FetchRequest
        do {
            request = try FetchRequest(M.self, where: predicate, sortedBy: sort)
        } catch {
            continuation.finish(throwing: error)
            return stream
        }
        var entities: Set<String> = [M.entityName]
        for property in M.modelProperties {
            if case .relationship(let r) = property.kind { entities.insert(r.destination) }
        }
        let observer = Observer<M>(request: request, entities: entities, coordinator: coordinator, continuation: continuation)
        let id = observers.withLock { $0.add(observer) }
        continuation.onTermination = { [weak self] _ in
            guard let self else { return }
            observers.withLock { $0.remove(id) }
            stopWatchingIfIdle()
        }
        startWatching()
        if externalChangeCheckInterval != nil {
            // Notes where each store stands before the first fetch: another process's save after it is reported.
            _ = try? coordinator.checkForExternalChanges()
        }
        observer.refresh(after: nil)
        return stream
    }

    /// Starts hearing of the coordinator's changes and looking for other processes' saves, unless already doing so.
    private func startWatching() {
        watching.withLock { w in
            if w.changes == nil {
                w.changes = coordinator.observeChanges { [weak self] changes in
                    self?.refreshObservations(after: changes)
                }
            }
            guard w.polling == nil, let interval = externalChangeCheckInterval else { return }
            w.polling = Task.detached(priority: .utility) { [weak self] in
                while !Task.isCancelled {
                    try? await Task.sleep(for: interval)
                    guard let self, !Task.isCancelled else { return }
                    // A store that cannot be probed now (closed meanwhile) is probed again next time.
                    _ = try? coordinator.checkForExternalChanges()
                }
            }
        }
    }

    /// Stops both once no observation runs. (Decided under the same lock as starting, so an observation that
    /// starts meanwhile is never left unwatched.)
    private func stopWatchingIfIdle() {
        watching.withLock { w in
            guard observers.withLock({ $0.isEmpty }) else { return }
            w.changes = nil
            w.polling?.cancel()
            w.polling = nil
        }
    }
}

/// The observations a store runs, by registration number.
struct ObserverList: Sendable {
    private var next = 0
    private var byID: [Int: any ObservationRefreshing] = [:]

    var all: [any ObservationRefreshing] { Array(byID.values) }

    mutating func add(_ o: any ObservationRefreshing) -> Int {
        next += 1
        byID[next] = o
        return next
    }

    var isEmpty: Bool { byID.isEmpty }

    mutating func remove(_ id: Int) { byID[id] = nil }
    mutating func removeAll() { byID.removeAll() }
}

protocol ObservationRefreshing: Sendable {
    /// The entities whose changes may change the results.
    var entities: Set<String> { get }
    /// Brings the results up to date after `change` (`nil`: any change, fetched again in full) and emits when
    /// they differ from the last emission.
    func refresh(after change: SavedChanges?)
    /// Ends the sequence.
    func finish()
}

final class Observer<M: PersistentModel>: ObservationRefreshing {
    let request: FetchRequest
    let entities: Set<String>
    let coordinator: StoreCoordinator
    let continuation: AsyncThrowingStream<ModelChanges<M>, any Error>.Continuation
    /// How a save of this process is applied to the results without fetching them again; `nil` when the request
    /// does not allow it.
    private let patch: ObservationPatch<M>?
    /// The last emission's results; `nil` before the first. Held while fetching, so that two refreshes (a write's
    /// and the first one) never emit out of order.
    private let last = Mutex<ObservedResults<M>?>(nil)

    init(
        request: FetchRequest, entities: Set<String>, coordinator: StoreCoordinator,
        continuation: AsyncThrowingStream<ModelChanges<M>, any Error>.Continuation
    ) {
        self.request = request
        self.entities = entities
        self.coordinator = coordinator
        self.continuation = continuation
        self.patch = ObservationPatch(request: request, watched: entities, schema: coordinator.schema)
    }

    func refresh(after change: SavedChanges?) {
        last.withLock { last in
            let fetched: ObservedResults<M>
            do {
                // A patch that cannot be applied, or fails, leaves it to a full fetch (which reports any error).
                if let change, let previous = last, let patch,
                   let patched = try? patch.apply(change, to: previous, coordinator: coordinator) {
                    fetched = patched
                } else {
                    let full = try ModelFetch.committed(M.self, request, coordinator)
                    fetched = ObservedResults(ids: full.ids, records: full.records, models: full.models)
                }
            } catch {
                continuation.finish(throwing: error)
                return
            }
            let now = Array(zip(fetched.ids, fetched.records))
            let before = last.map { Array(zip($0.ids, $0.records)) } ?? []
            let old = Dictionary(before.map { ($0.0, $0.1) }, uniquingKeysWith: { a, _ in a })
            let current = Set(fetched.ids)
            var inserted: [M] = []
            var updated: [M] = []
            for (i, (id, record)) in now.enumerated() {
                if let was = old[id] {
                    if was != record { updated.append(fetched.models[i]) }
                } else {
                    inserted.append(fetched.models[i])
                }
            }
            let deleted = before.filter { !current.contains($0.0) }.map { PersistentID(objectID: $0.0, snapshot: $0.1) }
            let moved = Self.moved(from: before.map(\.0), to: now)
            let first = last == nil
            last = fetched
            guard first || !inserted.isEmpty || !updated.isEmpty || !deleted.isEmpty || !moved.isEmpty else { return }
            continuation.yield(ModelChanges(results: fetched.models, inserted: inserted, updated: updated,
                                            deleted: deleted, moved: moved))
        }
    }

    func finish() { continuation.finish() }

    /// The results in `now` that were in `before` but are not in the longest run of them that kept its order:
    /// moving just these turns the old order into the new one.
    static func moved(from before: [ObjectID], to now: [(ObjectID, Record)]) -> [PersistentID] {
        let position = Dictionary(before.enumerated().map { ($1, $0) }, uniquingKeysWith: { a, _ in a })
        let staying = now.compactMap { item in position[item.0].map { (item, $0) } }
        guard staying.count > 1 else { return [] }
        // Longest increasing subsequence of old positions (patience sorting), remembering predecessors.
        var tails: [Int] = []
        var previous = [Int](repeating: -1, count: staying.count)
        for (i, s) in staying.enumerated() {
            var lo = 0, hi = tails.count
            while lo < hi {
                let mid = (lo + hi) / 2
                if staying[tails[mid]].1 < s.1 { lo = mid + 1 } else { hi = mid }
            }
            if lo > 0 { previous[i] = tails[lo - 1] }
            if lo == tails.count { tails.append(i) } else { tails[lo] = i }
        }
        var kept = Set<Int>()
        var i = tails.last ?? -1
        while i >= 0 {
            kept.insert(i)
            i = previous[i]
        }
        return staying.enumerated().filter { !kept.contains($0.offset) }
            .map { PersistentID(objectID: $0.element.0.0, snapshot: $0.element.0.1) }
    }
}
