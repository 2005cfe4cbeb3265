import Foundation

/// Moves a finished store from its staging path to its real path, atomically as far as the file system allows.
///
/// A store is often several files (SQLite's `-wal`/`-shm`, LMDB's directory, a lock file). Placing one:
/// 1. every file of a store already at the destination is renamed aside (never deleted before the new store is in
///    place, and never left to pair with the new files — an old `-wal` beside a new database would corrupt it);
/// 2. the staged sidecars are renamed into place, the main file last, so the main file appears only when the store
///    is complete;
/// 3. the directory is fsynced and the old files are deleted.
/// A crash leaves either the old store, or the new one, or (between 1 and 2) no store plus the staged and old
/// files under staging names, which ``AtomicFile/removeStaleStaging(near:)`` and relocate's recovery handle.
enum StorePlacement {
    /// Where a new store for `destination` is built: a staging name beside it, or for a server store the
    /// backend's staging location.
    static func stagingLocation(for destination: URL, backend: any StoreBackend) throws -> URL {
        if let server = backend.asServerStoreBackend { return try server.stagingLocation(for: destination) }
        return AtomicFile.stagingURL(for: destination)
    }

    static func place(staged: URL, at destination: URL, backend: any StoreBackend, replacing existing: (any StoreBackend)?) throws {
        if let server = backend.asServerStoreBackend {
            // No files: the server swaps the stores in one transaction.
            try server.placeStagedStore(staged, at: destination, replacingExisting: existing != nil)
            return
        }
        guard backend.capabilities.contains(.persistent) else {
            // No files: a store lives in the process; swap it under the backend's own lock.
            if let existing { try existing.destroyStore(at: destination) }
            try backend.copyStore(from: staged, to: destination)
            try backend.destroyStore(at: staged)
            return
        }
        let stagedFiles = backend.ownedFiles(ofStoreAt: staged)
        guard !stagedFiles.isEmpty else {
            throw StoreError.io(staged, operation: "placing the new store", reason: "the staged store has no files")
        }
        var aside: [URL] = []
        if let existing {
            let trashPrefix = AtomicFile.stagingURL(for: destination).lastPathComponent + "-old"
            for f in existing.ownedFiles(ofStoreAt: destination) where f.deletingLastPathComponent().standardizedFileURL == destination.deletingLastPathComponent().standardizedFileURL {
                let target = f.deletingLastPathComponent().appendingPathComponent(trashPrefix + "-" + f.lastPathComponent)
                try AtomicFile.rename(f, to: target)
                aside.append(target)
            }
        }
        // Sidecars first, the main file (or directory) last.
        let ordered = stagedFiles.filter { $0.standardizedFileURL != staged.standardizedFileURL }
            + stagedFiles.filter { $0.standardizedFileURL == staged.standardizedFileURL }
        for f in ordered {
            guard let target = backend.placedLocation(of: f, staged: staged, destination: destination) else { continue }
            try AtomicFile.rename(f, to: target)
        }
        try StoreCompanionFiles.place(staged: staged, at: destination)
        try AtomicFile.fsyncDirectory(of: destination)
        for f in aside { try? FileManager.default.removeItem(at: f) }
    }

    /// Deletes whatever a failed operation staged.
    static func discard(staged: URL, backend: any StoreBackend) {
        if let server = backend.asServerStoreBackend { return server.discardStagedStore(staged) }
        for f in backend.ownedFiles(ofStoreAt: staged).reversed() { try? FileManager.default.removeItem(at: f) }
        StoreCompanionFiles.remove(beside: staged)
        if !backend.capabilities.contains(.persistent) { try? backend.destroyStore(at: staged) }
        // Files a backend creates but does not list (a half-created store) share the staging name.
        AtomicFile.removeStaleStaging(near: staged, exactName: staged.lastPathComponent)
    }
}
