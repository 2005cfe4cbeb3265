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
    /// The peer's clock: later than every stamp it made or received.
    var clock: HybridLogicalClock
    /// Global ID → key (attribute, relationship, or `relationship→target` for memberships) → winning stamp.
    var clocks: [String: [String: HybridLogicalClock]] = [:]
    /// Deleted global IDs and the stamp of their deletion: they never come back.
    var tombstones: [String: HybridLogicalClock] = [:]
    /// Global IDs merged into another record by deduplication → the record that won.
    var redirects: [String: String] = [:]
    /// Unordered to-many memberships whose winning change removed the target: `<global ID> <relationship>→<target>`.
    var removed: Set<String> = []
    /// Global ID → ordered to-many name → the winning order hint (a JSON array of global IDs), for relationships
    /// whose members follow their to-one inverse.
    var orderHints: [String: [String: String]] = [:]
    /// Winning relationship values whose target this store does not hold yet (it arrives in a later pull), applied
    /// again on every pull until the target arrives or is deleted.
    var dangling: [String: RecordChange] = [:]
    /// When the last sync that pushed, pulled or changed this state finished.
    var lastSync: Date?

    init(peer: UUID, location: String, storeUUID: UUID) {
        self.peer = peer
        self.location = location
        self.storeUUID = storeUUID
        self.clock = HybridLogicalClock(wall: 0, counter: 0, peer: peer)
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

    /// The metadata value.
    func encoded() throws -> MetadataValue {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        encoder.dateEncodingStrategy = .millisecondsSince1970
        return .string(String(decoding: try encoder.encode(self), as: UTF8.self))
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
