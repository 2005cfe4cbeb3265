import Foundation
import Synchronization

/// Turns a hang into a failure: a background thread aborts the process, naming the input, when one input runs
/// longer than ``FuzzConfiguration/hangSeconds``. (An input stuck inside a C library cannot be interrupted, and a
/// test run that never ends is worse than one that fails with the input's name.)
final class Watchdog: Sendable {
    static let shared = Watchdog()

    private struct Slot {
        var what: String
        var started: Date
    }

    private let slots = Mutex<[Int: Slot]>([:])
    private let nextID = Atomic<Int>(0)
    private let started = Atomic<Bool>(false)

    /// Marks the start of one input; returns the token ``end(_:)`` takes.
    func begin(_ what: @autoclosure () -> String) -> Int {
        startIfNeeded()
        let id = nextID.add(1, ordering: .relaxed).newValue
        let slot = Slot(what: what(), started: Date())
        slots.withLock { $0[id] = slot }
        return id
    }

    func end(_ id: Int) {
        _ = slots.withLock { $0.removeValue(forKey: id) }
    }

    private func startIfNeeded() {
        guard started.compareExchange(expected: false, desired: true, ordering: .relaxed).exchanged else { return }
        let limit = FuzzConfiguration.hangSeconds
        let thread = Thread { [self] in
            while true {
                Thread.sleep(forTimeInterval: 0.5)
                let now = Date()
                let stuck = slots.withLock { $0.values.first { now.timeIntervalSince($0.started) > limit } }
                if let stuck {
                    let message = "FUZZ HANG: \(stuck.what) ran for more than \(Int(limit)) s; aborting the run\n"
                    FileHandle.standardError.write(Data(message.utf8))
                    abort()
                }
            }
        }
        thread.name = "fuzz-watchdog"
        thread.start()
    }
}
