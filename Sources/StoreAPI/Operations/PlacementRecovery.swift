import Foundation

/// Undoes a placement a copy, convert, replace, restore or upgrade was killed in the middle of.
///
/// Placing a new store over an old one renames every file of the old one aside (under a staging name ending in
/// `-old-<file>`), then the new one's sidecars into place, its main file last (see `StorePlacement`). Killed in
/// between, the path holds no store: the old one is whole under its aside names and at the real names of the sidecars
/// not yet set aside; a sidecar at a real name whose old copy is aside is the new store's. Left so, the next operation
/// would clear the aside files as stale staging (and an open would create an empty store in its place): the old
/// store would be lost. So every operation that places a store, relocate and every writable open put the old store
/// back first; an operation that was interrupted then runs again from the start.
enum PlacementRecovery {
    /// Puts back the old store set aside by an interrupted placement at `url`, when nothing is at `url` and the aside
    /// copy of its main file exists. Returns whether it did.
    @discardableResult
    static func restoreAsideStore(at url: URL) throws -> Bool {
        let fm = FileManager.default
        // A store on a server is placed in one transaction: nothing is ever left aside.
        guard url.isFileURL, !fm.fileExists(atPath: url.path) else { return false }
        let directory = url.deletingLastPathComponent()
        let name = url.lastPathComponent
        let marker = "-\(name)-old-"
        let entries = (try? fm.contentsOfDirectory(atPath: directory.path)) ?? []
        // The aside names of one placement share their prefix: `<staging prefix><UUID>-<name>-old-`.
        let groups = Dictionary(grouping: entries.compactMap { entry -> (prefix: String, file: String)? in
            guard AtomicFile.stagedName(entry, belongsTo: name), let range = entry.range(of: marker) else { return nil }
            return (String(entry[..<range.upperBound]), String(entry[range.upperBound...]))
        }, by: \.prefix)
        guard let (prefix, files) = groups.first(where: { $0.value.contains { $0.file == name } }) else { return false }
        // A sidecar at its real name whose old copy is aside is the new store's (placed after every old file was set
        // aside); beside the old main file it would be read as its own. One with no aside copy is the old store's,
        // not yet set aside when the placement stopped, and stays.
        let aside = Set(files.map(\.file))
        for entry in entries where entry != name && aside.contains(entry) {
            try fm.removeItem(at: directory.appendingPathComponent(entry))
        }
        // Sidecars first, the main file last, as a placement does.
        for file in files.filter({ $0.file != name }) + files.filter({ $0.file == name }) {
            try AtomicFile.rename(directory.appendingPathComponent(prefix + file.file), to: directory.appendingPathComponent(file.file))
        }
        try AtomicFile.fsyncDirectory(of: url)
        return true
    }

    /// Clears what an interrupted upgrade left beside a store that needs no upgrade now (one killed after its new
    /// store was placed, before the old files were deleted) — only while no one has the store open, since beside a
    /// store in use staging may be a live writer's save.
    static func clearStaging(near url: URL, backend: any StoreBackend) {
        guard backend.keepsFiles, (try? backend.isInUse(at: url)) == false else { return }
        AtomicFile.removeStaleStaging(near: url)
    }
}
