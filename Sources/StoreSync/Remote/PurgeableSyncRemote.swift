import Foundation

/// A remote whose history can be purged: peers acknowledge what they have applied, and files every peer has
/// applied can be deleted without any peer re-syncing from scratch.
///
/// The engine acknowledges its cursor after every pull it applied. ``SyncEngine/purgeHistory()`` first writes a
/// *baseline* — the purging peer's whole synced state, every value with the stamp it won with, and its
/// tombstones — and then asks the remote to delete the files at or below the lowest acknowledged cursor (and never
/// above the purging peer's own). A new peer starts from the baseline; a peer whose cursor is below the purge
/// horizon (its acknowledgement was forgotten with ``forget(peer:)``) is told so by ``SyncRemote/list(after:)``
/// throwing ``SyncError/historyPurged(_:)`` and re-baselines: it lists from the beginning and applies the baseline,
/// which merges by global ID and stamp and so never duplicates a record.
public protocol PurgeableSyncRemote: SyncRemote {
    /// Records that `peer` has applied every file up to `cursor`. An older cursor than the one recorded is ignored.
    func acknowledge(_ cursor: SyncCursor, peer: UUID) async throws

    /// The acknowledged cursor of every peer that acknowledged one.
    func acknowledgements() async throws -> [UUID: SyncCursor]

    /// Deletes the files at or below the lower of `limit` and every peer's acknowledged cursor; returns how many
    /// it deleted. Listing after a cursor below the new horizon then throws ``SyncError/historyPurged(_:)``.
    func purge(upTo limit: SyncCursor) async throws -> Int

    /// Forgets a peer's acknowledgement (a replica gone for good), so that it no longer holds history back.
    func forget(peer: UUID) async throws
}
