import Foundation
import Synchronization

/// Syncs one engine's store in the background until stopped: after a sync that worked, again after ``interval``
/// (sooner when a ``NotifyingSyncRemote`` says another peer pushed); after a failure, again after a delay that
/// doubles with each failure in a row, up to ``maxBackoff``.
///
/// Nothing else waits on it: saves never touch the remote, so an unreachable, slow or gone remote costs them
/// nothing, and the loop's failures show in ``status`` (and the engine's log) instead of anywhere else. Every call to
/// the remote, and every wait for its notifications, runs on a thread of its own, so a remote that hangs holds no
/// thread of the cooperative pool the app's tasks run on.
public final class BackgroundSync: Sendable {
    /// Where the loop stands.
    public struct Status: Sendable {
        /// The report of the last sync that worked.
        public var lastReport: SyncReport?
        /// The error of the last sync, when it failed.
        public var lastError: String?
        /// Failed syncs in a row.
        public var consecutiveFailures = 0
        /// Syncs attempted.
        public var attempts = 0
    }

    /// The wait after a sync that worked.
    public let interval: Duration
    /// The longest wait after failures.
    public let maxBackoff: Duration
    private let shared = Shared()
    private let task = Mutex<Task<Void, Never>?>(nil)

    /// What the loop and the callers share.
    private final class Shared: Sendable {
        let status = Mutex(Status())
    }

    /// Starts syncing `engine` in the background.
    public init(engine: SyncEngine, interval: Duration = .seconds(30), maxBackoff: Duration = .seconds(600)) {
        self.interval = interval
        self.maxBackoff = max(maxBackoff, interval)
        let loop = Task { [shared, interval, maxBackoff = self.maxBackoff] in
            while !Task.isCancelled {
                var wait = interval
                do {
                    let report = try await engine.sync()
                    shared.status.withLock {
                        $0.attempts += 1
                        $0.lastReport = report
                        $0.lastError = nil
                        $0.consecutiveFailures = 0
                    }
                } catch {
                    let failures = shared.status.withLock {
                        $0.attempts += 1
                        $0.lastError = "\(error)"
                        $0.consecutiveFailures += 1
                        return $0.consecutiveFailures
                    }
                    wait = Self.backoff(after: failures, interval: interval, max: maxBackoff)
                }
                if Task.isCancelled { return }
                if let notifying = engine.remote as? any NotifyingSyncRemote, shared.status.withLock({ $0.consecutiveFailures == 0 }) {
                    // Woken by another peer's push, or after the interval; a failed wait falls back to sleeping.
                    let seconds = Double(wait.components.seconds) + Double(wait.components.attoseconds) / 1e18
                    // On a thread of its own: a remote whose wait blocks must not hold a thread of the pool.
                    if (try? await RemoteTimeout.onOwnThread({ try await notifying.waitForChanges(timeout: seconds) })) != nil { continue }
                }
                try? await Task.sleep(for: wait)
            }
        }
        task.withLock { $0 = loop }
    }

    /// Where the loop stands now.
    public var status: Status { shared.status.withLock { $0 } }

    /// Stops the loop; a sync under way finishes (it never leaves the store half-changed) and no other starts.
    public func stop() {
        task.withLock { $0?.cancel() }
    }

    deinit { task.withLock { $0?.cancel() } }

    /// The wait after `failures` failures in a row: the interval doubled for each, at most `max`.
    static func backoff(after failures: Int, interval: Duration, max limit: Duration) -> Duration {
        var wait = interval
        for _ in 0..<Swift.max(0, failures) {
            wait = wait * 2
            if wait >= limit { return limit }
        }
        return Swift.min(wait, limit)
    }
}

/// A remote that can wake a peer when another one pushes (the PostgreSQL remote, through `LISTEN`).
public protocol NotifyingSyncRemote: SyncRemote {
    /// Waits until another peer pushes (or one did since the last wait), at most `timeout` seconds; returns whether
    /// one did.
    func waitForChanges(timeout: Double) async throws -> Bool
}
