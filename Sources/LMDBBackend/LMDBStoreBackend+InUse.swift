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
        guard case .store(let location, _, _) = LMDBStoreInspector.inspect(url),
              let identity = LMDBStoreInspector.identity(of: location)
        else { return false }
        return try EnvironmentRegistry.withEnvironment(identity) { env in
            env != nil || InUseProbe.processHolding(location.lockFile) != nil
        }
    }

    /// Deletes the store; with `force`, also while another process has it open (liblmdb there keeps working on
    /// the deleted files until it closes them). A store open in this process is refused either way: close it
    /// first.
    public func destroyStore(at url: URL, force: Bool) throws {
        try LMDBStoreFiles.destroy(url, force: force)
    }
}
