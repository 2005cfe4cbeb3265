import Foundation
import Synchronization

/// Runs remote calls against one deadline, so that the sync call returns in time even when a remote hangs without
/// ever throwing: the call is left running on its own and its answer, if it ever comes, is dropped.
struct Deadline: Sendable {
    let end: ContinuousClock.Instant
    let seconds: Double
    let remoteName: String

    init(seconds: Double, remoteName: String) {
        self.seconds = seconds
        self.remoteName = remoteName
        self.end = .now + .milliseconds(Int64((max(seconds, 0) * 1000).rounded()))
    }

    func run<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) async throws -> T {
        let remaining = end - .now
        guard remaining > .zero else { throw SyncError.timedOut(remoteName, seconds: seconds) }
        let timeoutError = SyncError.timedOut(remoteName, seconds: seconds)
        return try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
            let once = ResumeOnce(continuation)
            let timer = Task {
                // Cancelled: the call answered in time.
                do { try await Task.sleep(for: remaining) } catch { return }
                once.resume(.failure(timeoutError))
            }
            Task {
                let result: Result<T, any Error>
                do { result = .success(try await body()) } catch { result = .failure(error) }
                // The timer is not needed any more: it must not sleep on for every call made.
                timer.cancel()
                once.resume(result)
            }
        }
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
