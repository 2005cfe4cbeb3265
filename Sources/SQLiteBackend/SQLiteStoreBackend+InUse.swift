import CSQLite
import SQLiteFiles
import Foundation
import StoreAPI

extension SQLiteStoreBackend {
    /// Whether a connection — in another process or in this one — has the store open.
    ///
    /// In WAL mode (every store's default) each connection keeps a shared lock on the database file from its first
    /// read until it closes; SQLite itself relies on this to find the last connection. The probe opens the file
    /// through SQLite's own VFS (see `VFSFile`: this process's other connections keep their locks) and tries to
    /// take the exclusive lock for an instant, writing nothing. It fails exactly when another connection holds a
    /// lock.
    ///
    /// Connections in a rollback journal mode hold no lock between transactions and are not seen; nor can a file
    /// that cannot be opened for writing be probed (`false` then: destroying or replacing it fails anyway).
    public func isInUse(at url: URL) throws -> Bool {
        guard case .sqlite(let applicationID, _) = SQLiteHeader.read(url), applicationID == SQLiteLayout.applicationID,
              let file = VFSFile(url, readWrite: true), file.isWritable
        else { return false }
        return file.isLockedByAnotherConnection()
    }
}
