import Foundation
import StoreAPI

/// What a store remembers about its sync, kept in its metadata (custom key ``key``) so that every store operation
/// carries it, and apart from its history so that purging history never loses it.
struct SyncState: Sendable, Hashable, Codable {
    /// The custom metadata key.
    static let key = "storesync.state"

    /// This replica's identity on the remote. A copy of the store elsewhere gets a new one.
    var peer: UUID
    /// Where the peer identity was given: host and path. Another place means a moved store or a copy.
    var location: String
    /// The UUID of the store the peer identity was given to.
    var storeUUID: UUID
    /// The identity of the remote's dataset this store syncs with.
    var remoteIdentity: String?
    /// Whether the records the store held when sync was turned on have been pushed.
    var baselinePushed = false
    /// The last history token whose changes are on the remote.
    var pushedToken: Int64?
    /// The last sequence this peer wrote.
    var sequence: Int64 = 0
    /// The remote's cursor after the last applied pull.
    var cursor: SyncCursor?
    /// The cursor last acknowledged to a ``PurgeableSyncRemote``.
    var acknowledged: SyncCursor?
    /// The peer's clock: later than every stamp it made or received.
    var clock: HybridLogicalClock
    /// Global ID → key (attribute, relationship, or `relationship→target` for memberships) → winning stamp (of a
    /// membership, its latest add).
    var clocks: [String: [String: HybridLogicalClock]] = [:]
    /// Deleted global IDs and the stamp of their deletion: they never come back.
    var tombstones: [String: HybridLogicalClock] = [:]
    /// Global IDs merged into another record by deduplication → the record that won.
    var redirects: [String: String] = [:]
    /// Unordered to-many memberships that are not present (see ``isMember(_:_:)``): `<global ID> <relationship>→<target>`.
    var removed: Set<String> = []
    /// Membership (as in ``removed``) → the latest add its removals had seen: adds up to it are removed. Optional so
    /// that states of earlier versions, which have none, still read.
    var covers: [String: HybridLogicalClock]?
    /// Global ID → ordered to-many name → the winning order hint (a JSON array of global IDs), for relationships
    /// whose members follow their to-one inverse.
    var orderHints: [String: [String: String]] = [:]
    /// Winning relationship values whose target this store does not hold yet (it arrives in a later pull), applied
    /// again on every pull until the target arrives or is deleted.
    var dangling: [String: RecordChange] = [:]
    /// When the last sync that pushed, pulled or changed this state finished.
    var lastSync: Date?
    /// For a file store: the log beside it that holds the per-record maps (``clocks``, ``tombstones``,
    /// ``orderHints``, ``removed``, ``covers``), which the metadata then leaves out (see ``RecordStateLog``).
    var recordLog: UUID?
    /// The log's revision this state goes with.
    var revision: Int64?

    init(peer: UUID, location: String, storeUUID: UUID) {
        self.peer = peer
        self.location = location
        self.storeUUID = storeUUID
        self.clock = HybridLogicalClock(wall: 0, counter: 0, peer: peer)
    }

    /// The fields a sync with nothing to do looks at: decoding them skips the clocks, tombstones and the rest that
    /// grow with the synced records.
    struct Head: Decodable {
        var peer: UUID
        var location: String
        var storeUUID: UUID
        var remoteIdentity: String?
        var baselinePushed: Bool
        var pushedToken: Int64?
        var cursor: SyncCursor?
        var acknowledged: SyncCursor?
        var dangling: [String: RecordChange]

        /// The head of a decoded state.
        init(_ s: SyncState) {
            (peer, location, storeUUID, remoteIdentity) = (s.peer, s.location, s.storeUUID, s.remoteIdentity)
            (baselinePushed, pushedToken, cursor, acknowledged, dangling) = (s.baselinePushed, s.pushedToken, s.cursor, s.acknowledged, s.dangling)
        }

        /// The head of the state's metadata text; `nil` when it does not read (the whole state then says why).
        static func read(_ text: String) -> Head? {
            try? JSONDecoder().decode(Head.self, from: Data(text.utf8))
        }
    }

    /// The state in `metadata`, `nil` when there is none; a damaged value is an error naming the store.
    static func read(from metadata: StoreMetadata, store: String) throws -> SyncState? {
        guard let value = metadata.custom[key] else { return nil }
        guard case .string(let text) = value else {
            throw SyncError.notSyncable(store: store, reason: "its sync state (metadata key \(key)) is not a JSON string")
        }
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .millisecondsSince1970
        do { return try decoder.decode(SyncState.self, from: Data(text.utf8)) } catch {
            throw SyncError.notSyncable(store: store, reason: "its sync state (metadata key \(key)) is damaged: \(error)")
        }
    }

    /// The metadata value: the whole state, or without the per-record maps when a ``RecordStateLog`` holds them.
    func encoded() throws -> MetadataValue {
        var head = self
        if recordLog != nil { head.clearRecords() }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        encoder.dateEncodingStrategy = .millisecondsSince1970
        return .string(String(decoding: try encoder.encode(head), as: UTF8.self))
    }

    /// Empties the per-record maps.
    mutating func clearRecords() {
        clocks = [:]
        tombstones = [:]
        orderHints = [:]
        removed = []
        covers = nil
    }

    /// Forgets what this replica knew of every record and of the remote's files, keeping its identity: the next
    /// sync reads the remote from its start and pushes only what it does not have, as when attaching a store with
    /// records (used when the per-record state is lost).
    mutating func forgetRecords() {
        clearRecords()
        cursor = nil
        acknowledged = nil
        baselinePushed = false
        recordLog = nil
    }

    /// Whether the membership `key` (`relationship→target`) of `id` is present: it has an add that no removal saw.
    func isMember(_ id: String, _ key: String) -> Bool {
        guard let add = clocks[id]?[key] else { return false }
        guard let cover = covers?["\(id) \(key)"] else { return !removed.contains("\(id) \(key)") }
        return add > cover
    }

    /// Merges one membership change (an add or a removal) into the state; returns whether the membership is now
    /// present, or `nil` when the change brought nothing new.
    mutating func mergeMember(_ id: String, _ key: String, _ m: MemberChange) -> Bool? {
        let member = "\(id) \(key)"
        if m.present {
            guard m.clock > (clocks[id]?[key] ?? .zero) else { return nil }
            clocks[id, default: [:]][key] = m.clock
        } else {
            guard m.cover > (covers?[member] ?? .zero) else { return nil }
            covers = covers ?? [:]
            covers?[member] = m.cover
        }
        let present = isMember(id, key)
        if present { removed.remove(member) } else { removed.insert(member) }
        return present
    }

    /// The stamp `key` of `id` last won with.
    func stamp(_ id: UUID, _ key: String) -> HybridLogicalClock? { clocks[id.uuidString]?[key] }

    /// The record a global ID stands for after deduplication.
    func resolved(_ id: UUID) -> UUID {
        var current = id.uuidString
        var hops = 0
        while let next = redirects[current], hops < 64 {
            current = next
            hops += 1
        }
        return UUID(uuidString: current) ?? id
    }
}
