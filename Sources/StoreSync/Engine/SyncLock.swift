import Foundation
@_spi(BackendKit) import StoreAPI
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Makes the syncs of one store take turns — between processes (an app's background sync and `storectl sync`) and
/// between engines and tasks of one process — so that each sync starts from the state the previous one wrote.
/// Without it, two syncs read the same cursor and record clocks, and the one that writes last sets them back, which
/// re-applies or loses changes.
///
/// Every store is first locked in this process, by its location. A file store is then also locked with an advisory
/// `flock` on `<store>.storesync.lock` beside it (``StoreCompanionFiles/syncLock(beside:)``, which relocate and
/// destroy remove with the store):
/// - a file of its own rather than one of the store's: SQLite and LMDB lock their files with `fcntl` byte ranges,
///   which a network file system that emulates `flock` with `fcntl` would make contend with this lock, and the sync
///   state log beside the store is replaced by a rename when it is rewritten, so a lock on it would guard nothing;
/// - `flock`, because the kernel releases it when the holder's process ends, even by SIGKILL, so a crashed sync
///   never leaves the store locked.
/// The holder writes its process ID into the file, for the error a waiter reports.
///
/// A store on a server that takes locks for its clients (``StoreAPI/ClientLockingStore``: the PostgreSQL backend, with
/// an advisory lock) is locked there, across processes and machines, and released by the server when the holder's
/// connection ends. Other stores without a file (in-memory stores) are locked in this process only, which is where
/// they live.
///
/// A sync takes the lock before it reads anything of the store and holds it until it ends; saves never take it, so a
/// sync waiting for it never delays a save, and it is never waited for while a store lock is held.
final class SyncLock: Sendable {
    /// The open lock file while it is held by `flock`; `nil` for a store without a file, or once released.
    private let descriptor: Mutex<Int32?>
    /// The lock a server store holds for this sync; `nil` for other stores, or once released.
    private let serverLock: Mutex<(any ClientLock)?>
    /// The in-process key; `nil` once released.
    private let key: Mutex<String?>

    private init(descriptor: Int32?, serverLock: (any ClientLock)? = nil, key: String) {
        self.descriptor = Mutex(descriptor)
        self.serverLock = Mutex(serverLock)
        self.key = Mutex(key)
    }

    /// The name of the lock a server store takes.
    static let serverLockName = "storesync"

    /// The locations of the stores whose sync runs in this process.
    private static let held = Mutex<Set<String>>([])

    /// Takes the lock of `store`, waiting up to `timeout` seconds for another sync of it to finish. Throws
    /// ``SyncError/syncInProgress(store:pid:waited:)`` when it does not, and a ``StoreError`` when the lock file
    /// cannot be opened or the store's server cannot be reached.
    static func acquire(for store: LoadedStore, timeout: Double) async throws -> SyncLock {
        let target = Target(store.store)
        var waiting = Waiting(timeout: timeout)
        while true {
            switch try target.attempt() {
            case .acquired(let lock): return lock
            case .busy(let holder): try await Task.sleep(for: try waiting.next(target, holder: holder))
            }
        }
    }

    /// The same lock for a short call that is not async (a detach), its thread blocked while it waits.
    static func acquireBlocking(for store: any PersistentStore, timeout: Double) throws -> SyncLock {
        let target = Target(store)
        var waiting = Waiting(timeout: timeout)
        while true {
            switch try target.attempt() {
            case .acquired(let lock): return lock
            case .busy(let holder):
                let pause = try waiting.next(target, holder: holder).components
                usleep(useconds_t(pause.seconds * 1_000_000 + pause.attoseconds / 1_000_000_000_000))
            }
        }
    }

    /// What is locked for one store: its in-process key, its lock file or its server.
    private struct Target {
        let key: String
        let name: String
        let file: URL?
        let server: (any ClientLockingStore)?

        init(_ store: any PersistentStore) {
            key = SyncEngine.location(url: store.url, identifier: store.metadata.storeUUID)
            name = SyncEngine.name(url: store.url, identifier: store.metadata.storeUUID)
            file = store.url.flatMap { $0.isFileURL ? StoreCompanionFiles.syncLock(beside: $0) : nil }
            server = store as? any ClientLockingStore
        }

        enum Outcome { case acquired(SyncLock), busy(holder: Int32?) }

        /// One try, without waiting: the lock, or who holds it (a process ID, when known).
        func attempt() throws -> Outcome {
            guard SyncLock.held.withLock({ $0.insert(key).inserted }) else { return .busy(holder: getpid()) }
            do {
                if let server {
                    if let lock = try server.tryClientLock(named: SyncLock.serverLockName) {
                        return .acquired(SyncLock(descriptor: nil, serverLock: lock, key: key))
                    }
                    SyncLock.held.withLock { _ = $0.remove(key) }
                    return .busy(holder: nil)
                }
                guard let file else { return .acquired(SyncLock(descriptor: nil, key: key)) }
                while true {
                    // A store whose directory is gone (removed while the store was loaded) cannot be opened there by
                    // another process: the lock in this process is all it needs.
                    guard let fd = try SyncLock.openLockFile(file) else { return .acquired(SyncLock(descriptor: nil, key: key)) }
                    switch try SyncLock.lock(fd, file) {
                    case .held:
                        SyncLock.writeHolder(fd)
                        return .acquired(SyncLock(descriptor: fd, key: key))
                    case .replaced:
                        close(fd)
                    case .busy:
                        let holder = SyncLock.readHolder(fd)
                        close(fd)
                        SyncLock.held.withLock { _ = $0.remove(key) }
                        return .busy(holder: holder)
                    }
                }
            } catch {
                SyncLock.held.withLock { _ = $0.remove(key) }
                throw error
            }
        }
    }

    /// The pauses between tries: doubling up to a tenth of a second, until the deadline.
    private struct Waiting {
        let timeout: Double
        let deadline: ContinuousClock.Instant
        var pause = Duration.milliseconds(2)

        init(timeout: Double) {
            self.timeout = timeout
            deadline = ContinuousClock.now + .seconds(timeout.isFinite ? min(max(0, timeout), 1e9) : 0)
        }

        /// The next pause; throws ``SyncError/syncInProgress(store:pid:waited:)`` once the deadline has passed.
        mutating func next(_ target: Target, holder: Int32?) throws -> Duration {
            let now = ContinuousClock.now
            guard now < deadline else {
                throw SyncError.syncInProgress(store: target.name, pid: holder, waited: timeout)
            }
            defer { pause = min(pause * 2, .milliseconds(100)) }
            return min(pause, deadline - now)
        }
    }

    /// Removes the lock file beside a file store that no longer syncs (a detach, while it holds the lock): a sync
    /// waiting on the removed file finds it replaced when it gets it, and opens the path anew.
    static func removeFile(beside store: URL) {
        try? FileManager.default.removeItem(at: StoreCompanionFiles.syncLock(beside: store))
    }

    /// Releases the lock. Idempotent.
    func release() {
        if let fd = descriptor.withLock({ d -> Int32? in let taken = d; d = nil; return taken }) {
            // The process ID goes first, so a waiter never names a process that no longer holds the lock.
            _ = ftruncate(fd, 0)
            _ = flock(fd, LOCK_UN)
            close(fd)
        }
        serverLock.withLock { lock in
            lock?.release()
            lock = nil
        }
        if let key = key.withLock({ k -> String? in let taken = k; k = nil; return taken }) {
            Self.held.withLock { _ = $0.remove(key) }
        }
    }

    deinit { release() }

    private enum Attempt { case held, busy, replaced }

    /// The lock file, opened (created if missing); `nil` when its directory no longer exists.
    private static func openLockFile(_ file: URL) throws -> Int32? {
        let fd = open(file.path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard fd >= 0 else {
            if errno == ENOENT { return nil }
            let reason = String(cString: strerror(errno))
            if errno == EACCES || errno == EROFS { throw StoreError.readOnly(file, reason: "cannot create the sync lock file: \(reason)") }
            throw StoreError.io(file, operation: "open the sync lock file", reason: reason)
        }
        return fd
    }

    /// Tries `flock` once. A lock taken on a file that is no longer at its path (a destroy or relocate removed it
    /// meanwhile) guards nothing: the caller opens the path again.
    private static func lock(_ fd: Int32, _ file: URL) throws -> Attempt {
        while flock(fd, LOCK_EX | LOCK_NB) != 0 {
            if errno == EINTR { continue }
            if errno == EWOULDBLOCK { return .busy }
            let reason = String(cString: strerror(errno))
            close(fd)
            throw StoreError.io(file, operation: "lock the sync lock file", reason: reason)
        }
        var opened = stat()
        var named = stat()
        guard fstat(fd, &opened) == 0, stat(file.path, &named) == 0,
              opened.st_ino == named.st_ino, opened.st_dev == named.st_dev
        else {
            _ = flock(fd, LOCK_UN)
            return .replaced
        }
        return .held
    }

    private static func writeHolder(_ fd: Int32) {
        let text = Array("\(getpid())\n".utf8)
        _ = ftruncate(fd, 0)
        _ = text.withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, 0) }
    }

    private static func readHolder(_ fd: Int32) -> Int32? {
        var buffer = [UInt8](repeating: 0, count: 32)
        let n = buffer.withUnsafeMutableBytes { pread(fd, $0.baseAddress, $0.count, 0) }
        guard n > 0 else { return nil }
        return Int32(String(decoding: buffer.prefix(n), as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines))
    }
}
