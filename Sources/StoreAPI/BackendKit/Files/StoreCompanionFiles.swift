import Foundation

/// Files that modules above the backends keep beside a file store — today the sync engine's log of per-record sync
/// state, `<store>.storesync` — and that every store operation treats as part of the store: copy, migrate, backup
/// and restore carry them to the new store, relocate moves them, destroy removes them.
///
/// The sync engine's lock file, `<store>.storesync.lock`, is a companion that is never carried: a lock belongs to
/// the path it guards, so a copy gets its own when it first syncs. Relocate and destroy remove it with the others.
///
/// They are not a backend's files (``StoreBackend/ownedFiles(ofStoreAt:)``): any backend's store may have them, and
/// a store works without them. Their owners must read them only as far as the store's metadata vouches for, since
/// a copy is taken after the store's own files and may hold more than the copied store knows of.
@_spi(BackendKit) public enum StoreCompanionFiles {
    /// The suffix of the sync engine's per-record state log.
    public static let syncStateLogSuffix = ".storesync"

    /// Where the sync engine's per-record state log of the store at `store` lives.
    public static func syncStateLog(beside store: URL) -> URL {
        URL(fileURLWithPath: store.standardizedFileURL.path + syncStateLogSuffix)
    }

    /// The suffix of the sync engine's lock file, which makes the syncs of one store take turns across processes.
    public static let syncLockSuffix = ".storesync.lock"

    /// Where the sync engine's lock file of the store at `store` lives.
    public static func syncLock(beside store: URL) -> URL {
        URL(fileURLWithPath: store.standardizedFileURL.path + syncLockSuffix)
    }

    /// The companion files of the store at `store` that exist, the lock file aside (tools list them with the
    /// store's own files).
    public static func existing(beside store: URL) -> [URL] {
        guard store.isFileURL else { return [] }
        return [syncStateLog(beside: store)].filter { FileManager.default.fileExists(atPath: $0.path) }
    }

    /// Copies the companions of the store at `source` beside the store being built at `staged` (a staging path,
    /// so the copies are placed, or discarded, with it).
    static func copy(from source: URL, toStaged staged: URL) throws {
        guard source.isFileURL, staged.isFileURL else { return }
        for file in existing(beside: source) {
            let copy = URL(fileURLWithPath: staged.standardizedFileURL.path + String(file.path.dropFirst(source.standardizedFileURL.path.count)))
            try? FileManager.default.removeItem(at: copy)
            try AtomicFile.copyContents(of: file, to: copy, reporting: file)
            try AtomicFile.fsync(path: copy)
        }
    }

    /// Renames the companions of the store built at `staged` to sit beside `destination`, where it was just placed.
    /// A destination companion the staged store has none of is left: an upgrade in place builds the store anew
    /// from itself, and the log beside it is still its log.
    static func place(staged: URL, at destination: URL) throws {
        guard staged.isFileURL, destination.isFileURL else { return }
        for file in existing(beside: staged) {
            let suffix = String(file.path.dropFirst(staged.standardizedFileURL.path.count))
            try AtomicFile.rename(file, to: URL(fileURLWithPath: destination.standardizedFileURL.path + suffix))
        }
    }

    /// Removes the companions of a store that was destroyed (or of a staged store that was discarded).
    static func remove(beside store: URL) {
        for file in existing(beside: store) { try? FileManager.default.removeItem(at: file) }
        guard store.isFileURL else { return }
        // A sync still holding the lock keeps its open file; the next one at this path locks a new file.
        try? FileManager.default.removeItem(at: syncLock(beside: store))
    }
}
