import Foundation
import SQLiteFiles
import StoreAPI

extension CoreDataStoreBackend {
    /// Whether a connection — an app's Core Data stack in another process, or a connection in this one — has the
    /// store open, so that destroy, replace and relocate refuse it unless forced.
    ///
    /// Core Data opens its stores in WAL mode, where each connection keeps a shared lock on the database file from
    /// its first read until it closes. The probe opens the file through SQLite's own VFS (`VFSFile`: this process's
    /// connections keep their locks) and tries to take the exclusive lock for an instant, writing nothing, as the
    /// `sqlite` backend's does. A store in a rollback journal mode (2009-era stores) is not
    /// locked between transactions and is not seen; nor can a file that cannot be opened for writing be probed:
    /// `false` then, meaning "cannot tell".
    public func isInUse(at url: URL) throws -> Bool {
        guard let file = VFSFile(url, readWrite: true), file.isWritable,
              file.readPrefix(16) == Array("SQLite format 3\u{0}".utf8)
        else { return false }
        return file.isLockedByAnotherConnection()
    }
}
