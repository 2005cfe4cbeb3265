import Foundation

/// What one ``SyncEngine/sync()`` did. Counts only; never record values.
public struct SyncReport: Sendable, Hashable, Codable {
    /// This store's peer identity after the sync.
    public var peer: UUID
    /// The remote, as ``SyncRemote/displayName`` shows it.
    public var remote: String
    /// Change files written.
    public var pushedFiles = 0
    /// Record changes written (one per changed, inserted or deleted record).
    public var pushedRecords = 0
    /// Change files of other peers read.
    public var pulledFiles = 0
    /// Records created by the pull.
    public var insertedRecords = 0
    /// Records the pull changed.
    public var updatedRecords = 0
    /// Records the pull deleted.
    public var deletedRecords = 0
    /// Records merged into another with the same deduplication key.
    public var mergedDuplicates = 0
    /// Remote files that were not change files this version reads.
    public var ignoredFiles = 0
    /// Changes of entities or values this store does not have.
    public var ignoredChanges = 0
    /// Whether the store found it is a copy of another replica and took a new peer identity.
    public var becameNewPeer = false
    /// Whether this sync attached the store (its first sync with this remote).
    public var attached = false
    /// Whether the remote had purged the history after this store's cursor, so that the store re-read what the
    /// remote holds from the beginning (its baseline), merging it without duplicating anything.
    public var rebaselined = false

    /// Creates an empty report.
    public init(peer: UUID, remote: String) {
        self.peer = peer
        self.remote = remote
    }
}

/// Where a store stands with sync, read from its metadata without contacting the remote.
public struct SyncStatus: Sendable, Hashable, Codable {
    /// The store's sync options (from its description, or as stored), if any.
    public var remote: URL?
    /// The container on the remote.
    public var container: String?
    /// Whether the store has synced at least once (it has a peer identity).
    public var isAttached: Bool
    /// The store's peer identity.
    public var peer: UUID?
    /// The identity of the remote dataset the store syncs with.
    public var remoteIdentity: String?
    /// Local history transactions not pushed yet.
    public var pendingTransactions: Int
    /// Change files this peer has written.
    public var pushedFiles: Int64
    /// When the last sync that pushed, pulled or changed the sync state finished.
    public var lastSync: Date?
}
