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
    /// membership, its latest add). Keyed by the ID itself, not its text: a big pull or push looks up every record.
    var clocks: [UUID: [String: HybridLogicalClock]] = [:] { didSet { recordMapChanges.count &+= 1 } }
    /// Deleted global IDs and the stamp of their deletion: they never come back.
    var tombstones: [UUID: HybridLogicalClock] = [:] { didSet { recordMapChanges.count &+= 1 } }
    /// Global IDs merged into another record by deduplication → the record that won.
    var redirects: [UUID: UUID] = [:]
    /// Unordered to-many memberships that are not present (see ``isMember(_:_:)``): `<global ID> <relationship>→<target>`.
    var removed: Set<String> = [] { didSet { recordMapChanges.count &+= 1 } }
    /// Membership (as in ``removed``) → the latest add its removals had seen: adds up to it are removed. Optional so
    /// that states of earlier versions, which have none, still read.
    var covers: [String: HybridLogicalClock]? { didSet { recordMapChanges.count &+= 1 } }
    /// Global ID → ordered to-many name → the winning order hint (a JSON array of global IDs), for relationships
    /// whose members follow their to-one inverse.
    var orderHints: [UUID: [String: String]] = [:] { didSet { recordMapChanges.count &+= 1 } }
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
    /// Counts the changes of the per-record maps the log holds (each assignment or change in place): two values of
    /// a state with the same count, one a copy of the other, hold the same maps. Not part of the state's value.
    var recordMapChanges = ChangeCount()

    /// A count of changes that no comparison or hash of the value holding it sees (see ``recordMapChanges``).
    struct ChangeCount: Sendable, Hashable {
        var count = 0
        static func == (_: ChangeCount, _: ChangeCount) -> Bool { true }
        func hash(into hasher: inout Hasher) {}
    }

    init(peer: UUID, location: String, storeUUID: UUID) {
        self.peer = peer
        self.location = location
        self.storeUUID = storeUUID
        self.clock = HybridLogicalClock(wall: 0, counter: 0, peer: peer)
    }

    private enum CodingKeys: String, CodingKey {
        case peer, location, storeUUID, remoteIdentity, baselinePushed, pushedToken, sequence, cursor, acknowledged, clock
        case clocks, tombstones, redirects, removed, covers, orderHints, dangling, lastSync, recordLog, revision
    }

    /// Read as earlier versions wrote it: the per-record maps keyed by the global IDs' text. A key that is not a
    /// global ID names no record and is left out.
    init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        peer = try c.decode(UUID.self, forKey: .peer)
        location = try c.decode(String.self, forKey: .location)
        storeUUID = try c.decode(UUID.self, forKey: .storeUUID)
        remoteIdentity = try c.decodeIfPresent(String.self, forKey: .remoteIdentity)
        baselinePushed = try c.decode(Bool.self, forKey: .baselinePushed)
        pushedToken = try c.decodeIfPresent(Int64.self, forKey: .pushedToken)
        sequence = try c.decode(Int64.self, forKey: .sequence)
        cursor = try c.decodeIfPresent(SyncCursor.self, forKey: .cursor)
        acknowledged = try c.decodeIfPresent(SyncCursor.self, forKey: .acknowledged)
        clock = try c.decode(HybridLogicalClock.self, forKey: .clock)
        clocks = Self.byID(try c.decode([String: [String: HybridLogicalClock]].self, forKey: .clocks))
        tombstones = Self.byID(try c.decode([String: HybridLogicalClock].self, forKey: .tombstones))
        var redirects: [UUID: UUID] = [:]
        for (from, to) in try c.decode([String: String].self, forKey: .redirects) {
            guard let from = UUID(uuidString: from), let to = UUID(uuidString: to) else { continue }
            redirects[from] = to
        }
        self.redirects = redirects
        removed = try c.decode(Set<String>.self, forKey: .removed)
        covers = try c.decodeIfPresent([String: HybridLogicalClock].self, forKey: .covers)
        orderHints = Self.byID(try c.decode([String: [String: String]].self, forKey: .orderHints))
        dangling = try c.decode([String: RecordChange].self, forKey: .dangling)
        lastSync = try c.decodeIfPresent(Date.self, forKey: .lastSync)
        recordLog = try c.decodeIfPresent(UUID.self, forKey: .recordLog)
        revision = try c.decodeIfPresent(Int64.self, forKey: .revision)
    }

    /// Written as earlier versions write it (see ``init(from:)``), so that they read it too.
    func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(peer, forKey: .peer)
        try c.encode(location, forKey: .location)
        try c.encode(storeUUID, forKey: .storeUUID)
        try c.encodeIfPresent(remoteIdentity, forKey: .remoteIdentity)
        try c.encode(baselinePushed, forKey: .baselinePushed)
        try c.encodeIfPresent(pushedToken, forKey: .pushedToken)
        try c.encode(sequence, forKey: .sequence)
        try c.encodeIfPresent(cursor, forKey: .cursor)
        try c.encodeIfPresent(acknowledged, forKey: .acknowledged)
        try c.encode(clock, forKey: .clock)
        try c.encode(Self.byText(clocks), forKey: .clocks)
        try c.encode(Self.byText(tombstones), forKey: .tombstones)
        try c.encode(Dictionary(uniqueKeysWithValues: redirects.map { ($0.key.keyString, $0.value.keyString) }), forKey: .redirects)
        try c.encode(removed, forKey: .removed)
        try c.encodeIfPresent(covers, forKey: .covers)
        try c.encode(Self.byText(orderHints), forKey: .orderHints)
        try c.encode(dangling, forKey: .dangling)
        try c.encodeIfPresent(lastSync, forKey: .lastSync)
        try c.encodeIfPresent(recordLog, forKey: .recordLog)
        try c.encodeIfPresent(revision, forKey: .revision)
    }

    private static func byID<V>(_ map: [String: V]) -> [UUID: V] {
        var out: [UUID: V] = Dictionary(minimumCapacity: map.count)
        for (key, value) in map { if let id = UUID(uuidString: key) { out[id] = value } }
        return out
    }

    private static func byText<V>(_ map: [UUID: V]) -> [String: V] {
        var out: [String: V] = Dictionary(minimumCapacity: map.count)
        for (id, value) in map { out[id.keyString] = value }
        return out
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

    /// Whether the per-record maps (those the log beside a file store holds) are all empty.
    var knowsNoRecord: Bool {
        clocks.isEmpty && tombstones.isEmpty && orderHints.isEmpty && removed.isEmpty && (covers?.isEmpty ?? true)
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
    func isMember(_ id: UUID, _ key: String) -> Bool {
        guard let add = clocks[id]?[key] else { return false }
        let member = Self.member(id, key)
        guard let cover = covers?[member] else { return !removed.contains(member) }
        return add > cover
    }

    /// The name of a membership in ``removed`` and ``covers``: `<global ID> <relationship>→<target>`.
    static func member(_ id: UUID, _ key: String) -> String { "\(id.keyString) \(key)" }

    /// Merges one membership change (an add or a removal) into the state; returns whether the membership is now
    /// present, or `nil` when the change brought nothing new.
    mutating func mergeMember(_ id: UUID, _ key: String, _ m: MemberChange) -> Bool? {
        let member = Self.member(id, key)
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
    func stamp(_ id: UUID, _ key: String) -> HybridLogicalClock? { clocks[id]?[key] }

    /// The record a global ID stands for after deduplication.
    func resolved(_ id: UUID) -> UUID {
        var current = id
        var hops = 0
        while let next = redirects[current], hops < 64 {
            current = next
            hops += 1
        }
        return current
    }
}
