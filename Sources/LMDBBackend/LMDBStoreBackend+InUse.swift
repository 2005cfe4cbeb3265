import Foundation
import StoreAPI
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension LMDBStoreBackend {
    /// Whether the environment is open in this process or in another one.
    ///
    /// liblmdb keeps a shared `fcntl` lock on the lock file for as long as any process has the environment open;
    /// `F_GETLK` reports it without taking anything. The lock file is only probed while the store is not open in
    /// this process (the registry's lock held meanwhile): closing the probe's descriptor would otherwise drop this
    /// process's own locks on it.
    public func isInUse(at url: URL) throws -> Bool {
        guard case .store(let location, _, _) = StoreInspector.inspect(url),
              let identity = StoreInspector.identity(of: location)
        else { return false }
        return try EnvironmentRegistry.withEnvironment(identity) { env in
            env != nil || InUseProbe.processHolding(location.lockFile) != nil
        }
    }

    /// Deletes the store; with `force`, also while another process has it open (liblmdb there keeps working on
    /// the deleted files until it closes them). A store open in this process is refused either way: close it
    /// first.
    public func destroyStore(at url: URL, force: Bool) throws {
        guard force else { return try destroyStore(at: url) }
        let inspection = StoreInspector.inspect(url)
        guard case .store(let location, _, let info) = inspection else {
            throw StoreInspector.refusal(inspection, url: url) ?? StoreError.storeNotFound(url)
        }
        guard let identity = StoreInspector.identity(of: location) else { throw StoreError.storeNotFound(url) }
        try EnvironmentRegistry.withEnvironment(identity) { env in
            if env != nil {
                throw StoreError.locked(url, reason: "the store is open in this process; close it before destroying it")
            }
            try StoreFiles.removeFiles(of: location, createdDirectory: info.createdDirectory)
        }
    }
}

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
