import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Looks for another process's `fcntl` lock on a file without taking one.
enum InUseProbe {
    /// The process holding a lock on the first byte of `file` (liblmdb's reader lock), or `nil`. Call it only
    /// while the store is not open in this process: closing a descriptor of the lock file drops this process's
    /// own `fcntl` locks on it.
    static func processHolding(_ file: URL) -> Int32? {
        let fd = open(file.path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var probe = flock()
        probe.l_type = Int16(F_WRLCK)
        probe.l_whence = Int16(SEEK_SET)
        probe.l_start = 0
        probe.l_len = 1
        guard fcntl(fd, F_GETLK, &probe) == 0, probe.l_type != Int16(F_UNLCK) else { return nil }
        return probe.l_pid
    }
}
