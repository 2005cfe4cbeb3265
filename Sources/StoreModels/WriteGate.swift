import Dispatch
import Synchronization

/// Lets one write run at a time, in the order they asked: async writers wait without holding a thread, synchronous
/// ones (``ModelStore/writeNow(_:)``) block theirs. An async writer whose task is cancelled while it waits leaves
/// the line.
final class WriteGate: Sendable {
    private enum Waiter {
        case task(ticket: Int, CheckedContinuation<Void, any Error>)
        case thread(DispatchSemaphore)
    }

    private struct State {
        var busy = false
        var waiting: [Waiter] = []
        /// The next async waiter's ticket, by which a cancellation finds it in ``waiting``.
        var nextTicket = 0
    }

    private let state = Mutex(State())

    /// Waits for the gate and enters it; throws `CancellationError`, without entering, when the task is cancelled
    /// before its turn comes.
    func enter() async throws {
        let ticket = state.withLock { s in
            defer { s.nextTicket += 1 }
            return s.nextTicket
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (c: CheckedContinuation<Void, any Error>) in
                let admitted = state.withLock { s -> Bool? in
                    guard s.busy else {
                        s.busy = true
                        return true
                    }
                    // Cancelled already: onCancel ran before there was a waiter to take out.
                    if Task.isCancelled { return nil }
                    s.waiting.append(.task(ticket: ticket, c))
                    return false
                }
                switch admitted {
                case true?: c.resume()
                case nil: c.resume(throwing: CancellationError())
                case false?: break
                }
            }
        } onCancel: {
            let waiter = state.withLock { s -> CheckedContinuation<Void, any Error>? in
                guard let i = s.waiting.firstIndex(where: { if case .task(ticket, _) = $0 { true } else { false } }),
                      case .task(_, let c) = s.waiting.remove(at: i)
                else { return nil }
                return c
            }
            waiter?.resume(throwing: CancellationError())
        }
    }

    func enterBlocking() {
        let semaphore = DispatchSemaphore(value: 0)
        let admitted = state.withLock { s -> Bool in
            guard s.busy else {
                s.busy = true
                return true
            }
            s.waiting.append(.thread(semaphore))
            return false
        }
        if !admitted { semaphore.wait() }
    }

    /// Hands the gate to the longest waiter, or opens it.
    func leave() {
        let next = state.withLock { s -> Waiter? in
            guard !s.waiting.isEmpty else {
                s.busy = false
                return nil
            }
            return s.waiting.removeFirst()
        }
        switch next {
        case .task(_, let c): c.resume()
        case .thread(let semaphore): semaphore.signal()
        case nil: break
        }
    }
}
