import Foundation
import Synchronization

/// A coordinator's change observers and what it last knew of each store's change probe.
final class ChangeFeed: Sendable {
    private struct Observers {
        var next = 0
        var handlers: [Int: @Sendable (SavedChanges) -> Void] = [:]
    }

    /// What ``StoreCoordinator/checkForExternalChanges()`` last saw of a store.
    struct ProbeState: Sendable {
        var token: Int64?
        var historyToken: Int64?
    }

    private let observers = Mutex(Observers())
    /// How many observers there are, read on every save without taking the lock: a save builds its notification
    /// only when someone listens.
    private let count = Atomic<Int>(0)
    let probes = Mutex<[UUID: ProbeState]>([:])
    /// Held while one check of the stores runs, so two checks never report one change twice.
    let checking = Mutex<Void>(())

    var isObserved: Bool { count.load(ordering: .acquiring) > 0 }

    func add(_ handler: @escaping @Sendable (SavedChanges) -> Void) -> Int {
        observers.withLock { o in
            o.next += 1
            o.handlers[o.next] = handler
            count.store(o.handlers.count, ordering: .releasing)
            return o.next
        }
    }

    func remove(_ id: Int) {
        observers.withLock { o in
            o.handlers[id] = nil
            count.store(o.handlers.count, ordering: .releasing)
        }
    }

    /// Calls every observer with `changes`, outside the lock (an observer may add or remove observers).
    func post(_ changes: SavedChanges) {
        let handlers = observers.withLock { Array($0.handlers.sorted { $0.key < $1.key }.map(\.value)) }
        for h in handlers { h(changes) }
    }
}

/// Keeps a change observer registered until it is cancelled or released (see
/// ``StoreCoordinator/observeChanges(_:)``).
public final class ChangeObservation: Sendable {
    private let feed: ChangeFeed
    private let id: Int

    init(feed: ChangeFeed, id: Int) {
        self.feed = feed
        self.id = id
    }

    /// Stops the observer; it is called no more once this returns (a call under way in another thread finishes).
    public func cancel() { feed.remove(id) }

    deinit { feed.remove(id) }
}
