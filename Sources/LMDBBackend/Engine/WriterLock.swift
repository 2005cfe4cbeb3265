import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The point in time a writer stops waiting for other writers (``StoreOptions/timeout`` after it began).
struct WriteDeadline {
    /// The timeout it was made from, for messages.
    let seconds: Double
    private let instant: ContinuousClock.Instant

    /// A deadline `seconds` from now; negative or NaN timeouts mean "do not wait", and very long ones are capped
    /// at about 30 years.
    init(seconds: Double) {
        let clamped = seconds.isNaN ? 0 : min(max(0, seconds), 1e9)
        self.seconds = clamped
        instant = .now + .seconds(clamped)
    }

    var hasPassed: Bool { ContinuousClock.now >= instant }

    /// The same moment as a `Date`, for `NSLock.lock(before:)`.
    var date: Date { Date().addingTimeInterval(max(0, Double((instant - .now) / .milliseconds(1)) / 1000)) }

    /// Sleeps for `pause`, or until the deadline when that is sooner.
    func sleep(_ pause: Duration) {
        let left = instant - .now
        let nap = min(pause, left)
        if nap > .zero { usleep(UInt32(clamping: Int64((nap / .microseconds(1)).rounded(.up)))) }
    }
}

/// The inter-process half of the writer lock: an advisory `flock` on the store's data file, taken before a write
/// transaction begins and dropped after it ends.
///
/// liblmdb's own writer lock is a mutex in the lock file that `mdb_txn_begin` waits on for as long as another
/// process's write transaction lasts, with no way to give up. Writers of this framework therefore first take this
/// lock, polling until their deadline, and fail with ``StoreError/locked(_:reason:)`` when it passes; holding it,
/// they find liblmdb's mutex free (or about to be), because every writer of this framework takes the two in the
/// same order.
///
/// The lock is taken on liblmdb's own descriptor of the data file (`mdb_env_get_fd`): `flock` locks belong to an
/// open file description, so each process's environment competes with the others', closing some other descriptor
/// of the file never drops it (as it would an `fcntl` lock), and no file is added to the store. Writers of this
/// process are serialised before this lock, by the environment.
///
/// Limits: programs that do not use this framework (such as `mdb_load`) do not take the lock, so a writer that
/// meets one of them still waits inside `mdb_txn_begin` until it is done. Where the file system does not support
/// `flock`, writers fall back to liblmdb's lock alone.
enum WriterLock {
    /// Takes the lock on `fd` before `deadline`. Returns whether it is held (`false`: `flock` is not supported
    /// there, and the caller relies on liblmdb's lock alone).
    ///
    /// - Throws: ``LMDBFailure`` with `EBUSY` when the deadline passes first.
    static func acquire(_ fd: Int32, before deadline: WriteDeadline) throws -> Bool {
        var pause = Duration.microseconds(500)
        while true {
            if flock(fd, LOCK_EX | LOCK_NB) == 0 { return true }
            switch errno {
            case EINTR:
                continue
            case EWOULDBLOCK:
                if deadline.hasPassed {
                    throw LMDBFailure(code: EBUSY, operation: "another process has been writing to the store for longer than the \(formatted(deadline.seconds))-second timeout (StoreOptions.timeout)")
                }
                deadline.sleep(pause)
                pause = min(pause * 2, .milliseconds(20))
            default:
                return false
            }
        }
    }

    /// Drops the lock taken by ``acquire(_:before:)``.
    static func release(_ fd: Int32) {
        _ = flock(fd, LOCK_UN)
    }

    static func formatted(_ seconds: Double) -> String {
        seconds == seconds.rounded() && seconds < 1e15 ? String(Int64(seconds)) : String(seconds)
    }
}
