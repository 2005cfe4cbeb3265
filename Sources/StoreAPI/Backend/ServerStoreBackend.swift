import Foundation

/// A backend whose stores live on a database server rather than in files (PostgreSQL): a store is named by a
/// server URL, has no files, and is staged and placed by the backend itself.
///
/// Store operations that write a store (convert, copy, replace, migrate, backup) build it under a staging name
/// and then move it into place; for files that is a rename, for a server store it is the backend's
/// ``placeStagedStore(_:at:replacingExisting:)`` — for PostgreSQL one transaction that drops the old schema and
/// renames the staged one. Operations never look for files at such a URL.
public protocol ServerStoreBackend: StoreBackend {
    /// Whether `url` names a store of this backend's server kind (its scheme), whatever is there.
    func handles(_ url: URL) -> Bool

    /// A fresh location beside `destination` (on the same server) to build a new store at.
    func stagingLocation(for destination: URL) throws -> URL

    /// Moves the complete store at `staged` to `destination` atomically, replacing the store there when
    /// `replacingExisting` (and failing with ``StoreError/storeExists(_:)`` when one is there otherwise).
    func placeStagedStore(_ staged: URL, at destination: URL, replacingExisting: Bool) throws

    /// Deletes whatever a failed operation built at `staged`; never throws.
    func discardStagedStore(_ staged: URL)
}

extension BackendRegistry {
    /// The registered server backend that handles `url`, if any (a file URL has none).
    public func serverBackend(for url: URL) -> (any ServerStoreBackend)? {
        guard !url.isFileURL else { return nil }
        for id in typeIdentifiers {
            if let b = (try? backend(for: id))?.asServerStoreBackend, b.handles(url) { return b }
        }
        return nil
    }
}

extension StoreBackend {
    /// Whether this backend's stores are files: persistent, and not on a server (``ServerStoreBackend``).
    /// Operations look at the file system only for these.
    var keepsFiles: Bool { capabilities.contains(.persistent) && asServerStoreBackend == nil }
}
