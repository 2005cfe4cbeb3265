import Foundation

extension StoreOperations {
    /// What ``relocateStore(from:to:type:)`` did.
    public enum RelocationOutcome: Sendable, Equatable {
        /// The store was moved from the old path to the new one.
        case moved
        /// Only the new path held the store: an earlier relocation had finished.
        case alreadyDone
        /// Both paths held the store (an earlier relocation was interrupted); the old copy, which stays
        /// authoritative until a relocation finishes, was moved over the new one.
        case resumed
    }

    /// Moves a store with every file it owns from `old` to `new` — the "move my store into the shared folder"
    /// step every app writes by hand — idempotently and crash-safely:
    ///
    /// - only `old` exists → the store is copied to a staging path beside `new`, moved into place, then `old` is
    ///   destroyed;
    /// - only `new` exists → nothing to do;
    /// - both exist (a crash after the copy was placed but before `old` was removed) → `old` is still the
    ///   authoritative copy (nothing may write to `new` before relocation returns), so it replaces `new` and is
    ///   then removed. If the two have different store UUIDs they are different stores and nothing is touched.
    ///
    /// A store someone has open (``StoreBackend/isInUse(at:)``) is not moved (``StoreError/locked(_:reason:)``): its
    /// user would go on writing to the deleted old files. Close it and relocate again.
    ///
    /// Staging leftovers of an interrupted run are cleaned up: beside `new` first, beside `old` once it holds nothing. Sync is never started and no remote is
    /// contacted; sync options in the store's metadata travel with it.
    @discardableResult
    public func relocateStore(from old: URL, to new: URL, type: String? = nil) throws -> RelocationOutcome {
        return try loggedOperation("relocate store", ["from": old.logValue, "to": new.logValue], logger: logger, counts: { ["outcome": "\($0)"] }) {
            if old.standardizedFileURL == new.standardizedFileURL {
                throw StoreError.refused(new, reason: "old and new paths are the same")
            }
            if new.isFileURL {
                try PlacementRecovery.restoreAsideStore(at: new)
                AtomicFile.removeStaleStaging(near: new)
            }
            let oldBackend = try? backend(ofStoreAt: old, type: type)
            let newBackend = try? backend(ofStoreAt: new, type: type)
            switch (oldBackend, newBackend) {
            case (nil, nil):
                // Say why the old path is unusable (missing, or not a store of that type).
                _ = try backend(ofStoreAt: old, type: type)
                throw StoreError.storeNotFound(old)
            case (nil, .some):
                // A removal of the old store killed after it moved the files aside left them under a staging name.
                if old.isFileURL { AtomicFile.removeStaleStagingIfVacant(near: old) }
                StoreCompanionFiles.remove(beside: old)
                return .alreadyDone
            case (.some(let from), nil):
                if new.isFileURL, FileManager.default.fileExists(atPath: new.path) {
                    throw StoreError.refused(new, reason: "exists and is not a store; not replacing it")
                }
                // An app writing to the old store would go on writing to deleted files once it moved.
                try Self.refuseRelocationIfInUse(old, backend: from)
                try copyStore(from: old, sourceType: from.typeIdentifier, to: new, type: from.typeIdentifier)
                try from.destroyStore(at: old)
                StoreCompanionFiles.remove(beside: old)
                return .moved
            case (.some(let from), .some(let to)):
                let a = try from.readMetadata(at: old)
                let b = try to.readMetadata(at: new)
                guard a.storeUUID == b.storeUUID else {
                    throw StoreError.refused(new, reason: "both paths hold a store, and they are different stores (UUIDs \(a.storeUUID) and \(b.storeUUID)); resolve this by hand")
                }
                try Self.refuseRelocationIfInUse(old, backend: from)
                try copyStore(from: old, sourceType: from.typeIdentifier, to: new, type: from.typeIdentifier,
                              options: CopyOptions(replacingExisting: true))
                try from.destroyStore(at: old)
                StoreCompanionFiles.remove(beside: old)
                return .resumed
            }
        }
    }

    static func refuseRelocationIfInUse(_ url: URL, backend: any StoreBackend) throws {
        guard try backend.isInUse(at: url) else { return }
        throw StoreError.locked(
            url, reason: "another process (or another connection in this one) has the store open; close it, then relocate again")
    }
}
