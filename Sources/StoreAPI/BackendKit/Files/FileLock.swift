import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// An exclusive advisory lock (`flock`) on a lock file, held until ``release()`` or deinit.
///
/// Used by atomic stores so that a second writer — in this process or another — waits up to its timeout and then
/// fails with ``StoreError/locked(_:reason:)`` instead of interleaving whole-file writes.
@_spi(BackendKit) public final class FileLock: Sendable {
    private let fd: Int32
    /// The lock file.
    public let url: URL

    private init(fd: Int32, url: URL) {
        self.fd = fd
        self.url = url
    }

    /// Takes the lock, creating the lock file if needed, polling until `timeout` seconds have passed.
    public static func acquire(_ url: URL, timeout: Double) throws -> FileLock {
        let fd = open(url.path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard fd >= 0 else {
            let reason = AtomicFile.errnoString()
            if errno == EACCES || errno == EROFS { throw StoreError.readOnly(url, reason: reason) }
            throw StoreError.io(url, operation: "open lock file", reason: reason)
        }
        let deadline = Date().addingTimeInterval(max(0, timeout))
        while flock(fd, LOCK_EX | LOCK_NB) != 0 {
            guard errno == EWOULDBLOCK || errno == EINTR, Date() < deadline else {
                close(fd)
                throw StoreError.locked(url, reason: "another writer holds the store (waited \(timeout) s)")
            }
            usleep(10_000)
        }
        return FileLock(fd: fd, url: url)
    }

    /// Releases the lock. Idempotent.
    public func release() {
        _ = flock(fd, LOCK_UN)
    }

    deinit {
        _ = flock(fd, LOCK_UN)
        close(fd)
    }
}
