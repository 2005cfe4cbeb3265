import Foundation
import Synchronization

/// Runs each remote call with a time limit, so that a sync returns even when a remote hangs without ever throwing:
/// the call is left running on its own and its answer, if it ever comes, is dropped.
///
/// Each call runs on a thread of its own (``CallThread``), never on the cooperative pool: a remote that blocks
/// instead of suspending ties up that thread alone, and every other task of the process — the app's saves among them
/// — keeps the pool's threads. The time limit is a timer on a queue of its own, not a task: it fires even while
/// every thread of the pool is busy, so a sync waits on a full pool only to resume, never to notice the time is up.
///
/// The limit counts from when the call starts running, not from when it was asked for: on a machine whose threads
/// are all busy, a call that has not started yet is not the remote's fault.
struct RemoteTimeout: Sendable {
    let seconds: Double
    let remoteName: String

    func run<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) async throws -> T {
        let timeoutError = SyncError.timedOut(remoteName, seconds: seconds)
        return try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
            let once = ResumeOnce(continuation)
            let thread = CallThread(name: "storesync.remote-call")
            Task(executorPreference: thread) {
                let timer = DispatchWorkItem { once.resume(.failure(timeoutError)) }
                Self.timers.asyncAfter(deadline: .now() + max(seconds, 0), execute: timer)
                let result: Result<T, any Error>
                do { result = .success(try await body()) } catch { result = .failure(error) }
                // The timer is not needed any more: it must not stay queued for every call made.
                timer.cancel()
                once.resume(result)
                thread.finish()
            }
        }
    }

    /// The queue the time limits fire on: its own, so that they never wait for the cooperative pool.
    private static let timers = DispatchQueue(label: "storesync.remote-timeouts")

    /// Runs `body` on a thread of its own, without a time limit (for waits that have their own).
    static func onOwnThread<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) async throws -> T {
        let thread = CallThread(name: "storesync.remote-wait")
        defer { thread.finish() }
        return try await Task(executorPreference: thread) { try await body() }.value
    }
}

/// Resumes a continuation with the first result given, and ignores the others.
private final class ResumeOnce<T: Sendable>: Sendable {
    private let continuation: Mutex<CheckedContinuation<T, any Error>?>

    init(_ continuation: CheckedContinuation<T, any Error>) { self.continuation = Mutex(continuation) }

    @discardableResult
    func resume(_ result: Result<T, any Error>) -> Bool {
        guard let c = continuation.withLock({ c -> CheckedContinuation<T, any Error>? in
            defer { c = nil }
            return c
        }) else { return false }
        c.resume(with: result)
        return true
    }
}
