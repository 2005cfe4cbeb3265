import Dispatch
import Synchronization

/// Lets one write run at a time, in the order they asked: async writers wait without holding a thread, synchronous
/// ones (``ModelStore/writeNow(_:)``) block theirs.
final class WriteGate: Sendable {
    private enum Waiter {
        case task(CheckedContinuation<Void, Never>)
        case thread(DispatchSemaphore)
    }

    private struct State {
        var busy = false
        var waiting: [Waiter] = []
    }

    private let state = Mutex(State())

    func enter() async {
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            let admitted = state.withLock { s -> Bool in
                guard s.busy else {
                    s.busy = true
                    return true
                }
                s.waiting.append(.task(c))
                return false
            }
            if admitted { c.resume() }
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
        case .task(let c): c.resume()
        case .thread(let semaphore): semaphore.signal()
        case nil: break
        }
    }
}
