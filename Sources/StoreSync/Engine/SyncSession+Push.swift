import Foundation
import StoreAPI

extension SyncSession {
    /// What one record's local changes since the last push touched.
    private struct Touched {
        var entity: String
        var primaryKey: Int64
        /// `nil`: every key (an insert, or the records a first push sends).
        var keys: Set<String>?
        var deleted: Bool
        /// The record as just read, when it was (a first push's scan): it is not read again.
        var record: Record? = nil
    }

    /// Notes, before the first pull, whether the store holds no synced record, and its history token then. A store
    /// attached empty (a new device) has nothing of its own for a baseline: after the pull, scanning every record
    /// would find only what the pull brought, so ``pushBaseline()`` is skipped and history is pushed from that
    /// token. Empty is checked again after the token is read, so a record saved in between is either seen (and the
    /// baseline made as usual) or in history after the token.
    func noteAttachStart() throws {
        func isEmpty() throws -> Bool {
            try shapes.concrete.allSatisfy { try store.scanKeys(entity: $0, after: nil, limit: 1).isEmpty }
        }
        attachedEmpty = nil
        guard try isEmpty() else { return }
        let token = try store.history(after: state.pushedToken).last?.token ?? state.pushedToken
        guard try isEmpty() else { return }
        attachedEmpty = EmptyAttach(token: token)
    }

    /// Pushes the records the store held when sync was turned on, except values the remote already has (a second
    /// device restored from the same backup pushes nothing). Afterwards, history is pushed from the token read
    /// before the records were.
    func pushBaseline() async throws {
        if let empty = attachedEmpty {
            state.pushedToken = empty.token
            state.baselinePushed = true
            return
        }
        // The token first: a save between this and the scan is pushed again next time, never lost.
        let token = try store.history(after: state.pushedToken).last?.token ?? state.pushedToken
        var records: [(UUID, Touched)] = []
        // The records just scanned are what is pushed: they are not read again.
        try forEachRecord { r in
            records.append((r.globalID, Touched(entity: r.entity, primaryKey: r.primaryKey, keys: nil, deleted: false, record: r)))
        }
        try await push(records, onlyUnstamped: true)
        state.pushedToken = token
        state.baselinePushed = true
    }

    /// Pushes the local changes recorded in history since the last push; changes the engine itself applied (its
    /// history author) are not local and are never pushed back.
    func pushHistory() async throws {
        let transactions = try store.history(after: state.pushedToken)
        guard let last = transactions.last?.token else { return }
        var touched: [UUID: Touched] = [:]
        var order: [UUID] = []
        for t in transactions where t.author != SyncEngine.historyAuthor {
            for c in t.changes {
                guard let shape = shapes.shapes[c.entity] else { continue }
                var entry = touched[c.globalID] ?? {
                    order.append(c.globalID)
                    return Touched(entity: c.entity, primaryKey: c.primaryKey, keys: [], deleted: false)
                }()
                switch c.kind {
                case .insert:
                    entry.keys = nil
                    entry.deleted = false
                    entry.primaryKey = c.primaryKey
                case .update:
                    let owned = c.changedKeys.filter(shape.syncs)
                    if entry.keys != nil { entry.keys?.formUnion(owned) }
                case .delete:
                    entry.deleted = true
                }
                touched[c.globalID] = entry
            }
        }
        let changes = order.compactMap { id -> (UUID, Touched)? in
            guard let t = touched[id], t.deleted || t.keys == nil || !(t.keys ?? []).isEmpty else { return nil }
            return (id, t)
        }
        try await push(changes, onlyUnstamped: false)
        state.pushedToken = last
    }

    /// Pushes what the last pull's deduplication changed: every peer must see a merge, and the pull's own save
    /// (history author ``SyncEngine/historyAuthor``) is never pushed.
    func pushMerges() async throws {
        guard !merges.isEmpty else { return }
        var touched: [UUID: Touched] = [:]
        var order: [UUID] = []
        for m in merges {
            guard let shape = shapes.shapes[m.entity] else { continue }
            var entry = touched[m.id] ?? {
                order.append(m.id)
                return Touched(entity: m.entity, primaryKey: m.primaryKey, keys: [], deleted: false)
            }()
            if m.deleted { entry.deleted = true } else { entry.keys?.formUnion((m.keys ?? []).filter(shape.syncs)) }
            touched[m.id] = entry
        }
        merges = []
        try await push(order.compactMap { id in touched[id].map { (id, $0) } }.filter { $0.1.deleted || !($0.1.keys ?? []).isEmpty },
                       onlyUnstamped: false)
    }

    /// Writes a baseline: every synced record with the values and memberships this store holds, each stamped with
    /// the stamp it won with, and every tombstone. Applied anywhere, it changes nothing a peer already has and gives
    /// a peer that starts after a purge everything the purged files held. Values never synced (no stamp) are left to
    /// the next push.
    func pushSnapshot() async throws {
        var cache: [String: [Int64: UUID]] = [:]
        var changes: [RecordChange] = []
        var files: [[RecordChange]] = []
        func flush() async throws {
            if !changes.isEmpty { files.append(changes) }
            changes = []
            guard !files.isEmpty else { return }
            try await write(files)
            files = []
        }
        func fileFull() async throws {
            guard changes.count >= Self.recordsPerFile else { return }
            files.append(changes)
            changes = []
            if files.count >= Self.filesPerRequest { try await flush() }
        }
        var records: [Record] = []
        try forEachRecord { records.append($0) }
        for r in records {
            guard let shape = shapes.shapes[r.entity], state.tombstones[r.globalID] == nil else { continue }
            let id = r.globalID
            let known = state.clocks[id] ?? [:]
            let full = try recordChange(r, shape: shape, keys: nil, stamp: .zero, onlyUnstamped: false, cache: &cache)
            var change = RecordChange(entity: r.entity, id: r.globalID)
            for (key, v) in full.values { if let stamp = known[key] { change.values[key] = StampedValue(clock: stamp, text: v.text) } }
            for i in shape.relationships where shape.entity.relationships[i].isToMany && !shape.entity.relationships[i].isOrdered {
                let rel = shape.entity.relationships[i].name
                let prefix = rel + "→"
                var members: [MemberChange] = []
                for (key, stamp) in known where key.hasPrefix(prefix) {
                    guard let target = UUID(uuidString: String(key.dropFirst(prefix.count))) else { continue }
                    let present = state.isMember(id, key)
                    members.append(MemberChange(target: target, present: present, clock: stamp,
                                                observed: present ? nil : state.covers?[SyncState.member(id, key)] ?? stamp))
                }
                if !members.isEmpty { change.members[rel] = members.sorted { $0.target.sortsBefore($1.target) } }
            }
            if !change.values.isEmpty || !change.members.isEmpty { changes.append(change) }
            try await fileFull()
        }
        for (id, stamp) in state.tombstones.sorted(by: { $0.key.sortsBefore($1.key) }) {
            changes.append(RecordChange(entity: "", id: id, deleted: stamp))
            try await fileFull()
        }
        try await flush()
    }

    /// Writes the changes of the touched records as change files, reading each record's current values (except
    /// those read already).
    private func push(_ touched: [(UUID, Touched)], onlyUnstamped: Bool) async throws {
        guard !touched.isEmpty else { return }
        if state.clocks.isEmpty {
            // A first push fills the maps from empty: room for every record is made once, not by regrowing.
            state.clocks.reserveCapacity(touched.count)
        }
        touchedIDs.reserveCapacity(touchedIDs.count + touched.count)
        let now = Date()
        state.clock = state.clock.tick(now: now, peer: state.peer)
        let stamp = state.clock
        var cache: [String: [Int64: UUID]] = [:]
        var files: [[RecordChange]] = []
        var start = 0
        while start < touched.count {
            let slice = touched[start..<min(start + Self.recordsPerFile, touched.count)]
            start += slice.count
            // Current records of this slice, by hierarchy.
            var byRoot: [String: Set<Int64>] = [:]
            for (_, t) in slice where !t.deleted && t.record == nil {
                if let shape = shapes.shapes[t.entity] { byRoot[shape.entity.rootName, default: []].insert(t.primaryKey) }
            }
            var current: [String: [Int64: Record]] = [:]
            for (root, keys) in byRoot {
                for r in try store.records(withKeys: Array(keys), root: root) { current[root, default: [:]][r.primaryKey] = r }
            }
            var changes: [RecordChange] = []
            changes.reserveCapacity(slice.count)
            for (id, t) in slice {
                guard let shape = shapes.shapes[t.entity] else { continue }
                guard !t.deleted, let record = t.record ?? current[shape.entity.rootName]?[t.primaryKey], record.globalID == id else {
                    if state.tombstones[id] == nil {
                        changes.append(RecordChange(entity: t.entity, id: id, deleted: stamp))
                    }
                    continue
                }
                // A record under a global ID deleted or merged away elsewhere (inserted again here): the next apply
                // removes it instead of pushing it.
                if state.tombstones[id] != nil || state.redirects[id] != nil {
                    needsCleanup = true
                    continue
                }
                let change = try recordChange(record, shape: shape, keys: t.keys, stamp: stamp, onlyUnstamped: onlyUnstamped, cache: &cache)
                if !change.values.isEmpty || !change.members.isEmpty { changes.append(change) }
            }
            guard !changes.isEmpty else { continue }
            files.append(changes)
            if files.count >= Self.filesPerRequest {
                try await write(files)
                files = []
            }
        }
        if !files.isEmpty { try await write(files) }
    }

    /// The change of one record: its values for `keys` (all for `nil`), stamped.
    private func recordChange(_ r: Record, shape: SyncedSchema.Shape, keys: Set<String>?, stamp: HybridLogicalClock,
                              onlyUnstamped: Bool, cache: inout [String: [Int64: UUID]]) throws -> RecordChange {
        // Room for every value at once: a map grown value by value is made several times over.
        var change = RecordChange(entity: r.entity, id: r.globalID,
                                  values: Dictionary(minimumCapacity: keys?.count ?? shape.attributes.count + shape.relationships.count))
        let known = state.clocks.isEmpty ? [:] : state.clocks[r.globalID] ?? [:]
        func wanted(_ key: String) -> Bool { (keys?.contains(key) ?? true) && !(onlyUnstamped && known[key] != nil) }
        for i in shape.attributes {
            let name = shape.entity.attributes[i].name
            guard wanted(name) else { continue }
            change.values[name] = StampedValue(clock: stamp, text: try SyncedSchema.text(of: r.attributes[i]))
        }
        for i in shape.orderHints {
            let rel = shape.entity.relationships[i]
            guard wanted(rel.name) else { continue }
            let ids = try globalIDs(root: shape.destinationRoots[i], keys: Set(r.relationships[i].keys), cache: &cache)
            change.values[rel.name] = StampedValue(clock: stamp, text: SyncedSchema.text(ofOrdered: r.relationships[i].keys.compactMap { ids[$0] }))
        }
        for i in shape.relationships {
            let rel = shape.entity.relationships[i]
            guard keys?.contains(rel.name) ?? true else { continue }
            // A value already stamped is not looked up (a first push of records that all came from the remote).
            if !rel.isToMany || rel.isOrdered, !wanted(rel.name) { continue }
            let root = shape.destinationRoots[i]
            let targetKeys = r.relationships[i].keys
            let ids = try globalIDs(root: root, keys: Set(targetKeys), cache: &cache)
            let targets = targetKeys.compactMap { ids[$0] }
            if !rel.isToMany || rel.isOrdered {
                guard wanted(rel.name) else { continue }
                let text = rel.isToMany ? SyncedSchema.text(ofOrdered: targets) : (targets.first?.keyString ?? "")
                change.values[rel.name] = StampedValue(clock: stamp, text: text)
            } else {
                // Memberships that changed since they last synced: new targets added, vanished ones removed.
                let prefix = rel.name + "→"
                var previous = Set<UUID>()
                for (key, _) in known where key.hasPrefix(prefix) {
                    if let t = UUID(uuidString: String(key.dropFirst(prefix.count))),
                       state.isMember(r.globalID, key) { previous.insert(t) }
                }
                let now = Set(targets)
                var members: [MemberChange] = []
                for t in targets where !previous.contains(t) { members.append(MemberChange(target: t, present: true, clock: stamp)) }
                if !onlyUnstamped {
                    for t in previous.subtracting(now).sorted(by: { $0.sortsBefore($1) }) {
                        // It removes the add this store saw, and no add it did not see.
                        members.append(MemberChange(target: t, present: false, clock: stamp,
                                                    observed: known["\(prefix)\(t.keyString)"]))
                    }
                }
                if !members.isEmpty { change.members[rel.name] = members }
            }
        }
        return change
    }

    /// Writes change files under this peer's next sequences, in one request, and records what they won. A name
    /// that exists already means another replica shares this peer identity (a copy, or a backup restored in place):
    /// this store then becomes a new peer and writes that file and the ones after it under that one.
    private func write(_ files: [[RecordChange]]) async throws {
        var rest = files[...]
        while !rest.isEmpty {
            let batches = rest.enumerated().map { n, changes in
                ChangeBatch(peer: state.peer, sequence: state.sequence + 1 + Int64(n), changes: changes)
            }
            let payload = batches.map { (name: $0.name, data: $0.encoded()) }
            let remote = self.remote
            let outcomes = try await calls.run { try await remote.put(payload) }
            var written = 0
            for (batch, outcome) in zip(batches, outcomes) {
                guard outcome == .created else { break }
                state.sequence = batch.sequence
                record(batch)
                report.pushedFiles += 1
                report.pushedRecords += batch.changes.count
                written += 1
            }
            rest = rest.dropFirst(written)
            guard written < batches.count else { return }
            guard outcomes.count > written, outcomes[written] == .alreadyExists else {
                throw SyncError.remote(remote.displayName, reason: "answered \(outcomes.count) outcomes for \(batches.count) files")
            }
            logger.notice("sync: change file name taken by another replica with this peer identity; becoming a new peer",
                          metadata: ["peer": "\(state.peer)", "remote": "\(remote.displayName)"])
            becomeNewPeer()
        }
    }

    /// Records the stamps of a change file this peer wrote as the winning ones.
    private func record(_ batch: ChangeBatch) {
        for c in batch.changes {
            let id = c.id
            touchedIDs.insert(id)
            if let d = c.deleted {
                state.tombstones[id] = d
                state.clocks[id] = nil
                state.orderHints[id] = nil
                continue
            }
            if !c.values.isEmpty {
                // The record's map changed in place, found once per record rather than once per value; a record
                // with no stamp yet (every record of a first push) takes the change's keys whole, not rehashed.
                func set(_ clocks: inout [String: HybridLogicalClock]) {
                    if clocks.isEmpty {
                        clocks = c.values.mapValues(\.clock)
                        return
                    }
                    for (key, v) in c.values { clocks[key] = v.clock }
                }
                set(&state.clocks[id, default: [:]])
                if let shape = shapes.shapes[c.entity], !shape.orderHints.isEmpty {
                    for (key, v) in c.values where shape.isOrderHint(key) { state.orderHints[id, default: [:]][key] = v.text }
                }
            }
            for (rel, members) in c.members {
                for m in members { _ = mergeMember(id, "\(rel)→\(m.target.keyString)", m) }
            }
        }
    }

    /// Gives this replica a new peer identity that keeps everything else it knows (what it pushed and pulled).
    func becomeNewPeer() {
        let peer = UUID()
        state.peer = peer
        state.sequence = 0
        state.clock = HybridLogicalClock(wall: state.clock.wall, counter: state.clock.counter, peer: peer)
        report.becameNewPeer = true
    }
}
