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
        var plans = PushPlans(stamp: stamp)
        var files: [PendingFile] = []
        // The files of one request go to the remote while the next request's are made.
        var upload: Upload?
        do {
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
                var file = PendingFile(capacity: slice.count)
                for (id, t) in slice {
                    guard let shape = shapes.shapes[t.entity] else { continue }
                    guard !t.deleted, let record = t.record ?? current[shape.entity.rootName]?[t.primaryKey], record.globalID == id else {
                        if state.tombstones[id] == nil { file.add(RecordChange(entity: t.entity, id: id, deleted: stamp), shape: shape) }
                        continue
                    }
                    // A record under a global ID deleted or merged away elsewhere (inserted again here): the next apply
                    // removes it instead of pushing it.
                    if state.tombstones[id] != nil || state.redirects[id] != nil {
                        needsCleanup = true
                        continue
                    }
                    try add(record, shape: shape, plan: plans.plan(for: shape), keys: t.keys, stamp: stamp,
                            onlyUnstamped: onlyUnstamped, cache: &cache, to: &file)
                }
                guard !file.records.isEmpty else { continue }
                files.append(file)
                if files.count >= Self.filesPerRequest {
                    // The next files are named after the last ones written: the request before must have answered.
                    if let sent = upload { try await finish(sent) }
                    upload = send(files)
                    files = []
                }
            }
            if let sent = upload { try await finish(sent) }
            upload = nil
        } catch {
            // A request on its way is waited for: no call of this sync outlives it.
            _ = try? await upload?.outcomes.value
            throw error
        }
        if !files.isEmpty { try await write(files) }
    }

    /// Writes the change of one record, its values for `keys` (all for `nil`) stamped `stamp`, into `file`'s lines
    /// directly; nothing when it changes nothing.
    private func add(_ r: Record, shape: SyncedSchema.Shape, plan: PushPlan, keys: Set<String>?, stamp: HybridLogicalClock,
                     onlyUnstamped: Bool, cache: inout [String: [Int64: UUID]], to file: inout PendingFile) throws {
        let id = r.globalID
        let known = state.clocks.isEmpty ? [:] : state.clocks[id] ?? [:]
        func wanted(_ key: String) -> Bool { (keys?.contains(key) ?? true) && !(onlyUnstamped && known[key] != nil) }
        // Every value (an insert, or a first push of records this store made): the plan's keys and stamps whole.
        let all = keys == nil && (!onlyUnstamped || known.isEmpty)
        let values = all ? plan.values : plan.values.filter { wanted($0.name) }
        var members: [(name: String, changes: [MemberChange])] = []
        for i in plan.memberships {
            let rel = shape.entity.relationships[i]
            guard keys?.contains(rel.name) ?? true else { continue }
            let targetKeys = r.relationships[i].keys
            let ids = try globalIDs(root: shape.destinationRoots[i], keys: Set(targetKeys), cache: &cache)
            let targets = targetKeys.compactMap { ids[$0] }
            // Memberships that changed since they last synced: new targets added, vanished ones removed.
            let prefix = rel.name + "→"
            var previous = Set<UUID>()
            for (key, _) in known where key.hasPrefix(prefix) {
                if let t = UUID(uuidString: String(key.dropFirst(prefix.count))), state.isMember(id, key) { previous.insert(t) }
            }
            let now = Set(targets)
            var changes: [MemberChange] = []
            for t in targets where !previous.contains(t) { changes.append(MemberChange(target: t, present: true, clock: stamp)) }
            if !onlyUnstamped {
                for t in previous.subtracting(now).sorted(by: { $0.sortsBefore($1) }) {
                    // It removes the add this store saw, and no add it did not see.
                    changes.append(MemberChange(target: t, present: false, clock: stamp, observed: known["\(prefix)\(t.keyString)"]))
                }
            }
            if !changes.isEmpty { members.append((rel.name, changes)) }
        }
        guard !values.isEmpty || !members.isEmpty else { return }
        var pushed = PushedRecord(id: id)
        // Names are numbered as they are first used: the entity's and the plan's all at once when a record uses
        // them all.
        let numbers: ArraySlice<Int>
        if all, r.entity == plan.entity {
            let known = file.numbers(of: plan)
            file.lines.record(id, entity: known[0])
            numbers = known.dropFirst()
        } else {
            file.lines.record(id, entity: file.lines.number(ofName: r.entity))
            numbers = values.map { file.lines.number(ofName: $0.name) }[...]
        }
        for (n, v) in zip(numbers, values) {
            switch v.kind {
            case .attribute(let i):
                try file.lines.value(n, stamp, of: r.attributes[i])
            case .relationship(let i), .orderHint(let i):
                let rel = shape.entity.relationships[i]
                let targetKeys = r.relationships[i].keys
                let ids = try globalIDs(root: shape.destinationRoots[i], keys: Set(targetKeys), cache: &cache)
                if rel.isToMany {
                    let targets = targetKeys.compactMap { ids[$0] }
                    file.lines.value(n, stamp, ordered: targets)
                    if case .orderHint = v.kind { pushed.hints[v.name] = SyncedSchema.text(ofOrdered: targets) }
                } else {
                    file.lines.value(n, stamp, target: targetKeys.lazy.compactMap { ids[$0] }.first)
                }
            }
        }
        pushed.clocks = all ? plan.clocks : Dictionary(uniqueKeysWithValues: values.map { ($0.name, stamp) })
        // Relationships in name order, as a file lists them.
        for (name, changes) in members.sorted(by: { $0.name < $1.name }) {
            let n = file.lines.number(ofName: name)
            for m in changes { file.lines.member(n, m) }
            pushed.members.append((name, changes))
        }
        file.records.append(pushed)
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

    /// Change files on their way to the remote, in one request.
    private struct Upload {
        let files: [PendingFile]
        let names: [ChangeFileName]
        let outcomes: Task<[PutOutcome], any Error>
    }

    /// Writes change files under this peer's next sequences, in one request, and records what they won.
    private func write(_ files: [PendingFile]) async throws { try await finish(send(files)) }

    /// Starts the request that writes `files` under this peer's next sequences.
    private func send(_ files: [PendingFile]) -> Upload {
        let names = files.indices.map { ChangeFileName(peer: state.peer, sequence: state.sequence + 1 + Int64($0)) }
        let payload = zip(names, files).map { name, file in (name: name, data: file.lines.bytes(peer: name.peer, sequence: name.sequence)) }
        let remote = self.remote, calls = self.calls
        return Upload(files: files, names: names, outcomes: Task { try await calls.run { try await remote.put(payload) } })
    }

    /// Waits for a request's answer and records what its files won. A name that exists already means another
    /// replica shares this peer identity (a copy, or a backup restored in place): this store then becomes a new peer
    /// and writes that file and the ones after it under that one.
    private func finish(_ upload: Upload) async throws {
        let outcomes = try await upload.outcomes.value
        var written = 0
        for (name, (file, outcome)) in zip(upload.names, zip(upload.files, outcomes)) {
            guard outcome == .created else { break }
            state.sequence = name.sequence
            record(file.records)
            report.pushedFiles += 1
            report.pushedRecords += file.records.count
            written += 1
        }
        guard written < upload.files.count else { return }
        guard outcomes.count > written, outcomes[written] == .alreadyExists else {
            throw SyncError.remote(remote.displayName, reason: "answered \(outcomes.count) outcomes for \(upload.files.count) files")
        }
        logger.notice("sync: change file name taken by another replica with this peer identity; becoming a new peer",
                      metadata: ["peer": "\(state.peer)", "remote": "\(remote.displayName)"])
        becomeNewPeer()
        try await finish(send(Array(upload.files.dropFirst(written))))
    }

    /// Writes whole record changes as change files, as the other `write` does.
    private func write(_ files: [[RecordChange]]) async throws {
        try await write(files.map { changes in
            var file = PendingFile(capacity: changes.count)
            for c in changes { file.add(c, shape: shapes.shapes[c.entity]) }
            return file
        })
    }

    /// Records the stamps of the records of a change file this peer wrote as the winning ones, in one pass.
    private func record(_ records: [PushedRecord]) {
        for p in records {
            let id = p.id
            touchedIDs.insert(id)
            if let d = p.deleted {
                state.tombstones[id] = d
                state.clocks[id] = nil
                state.orderHints[id] = nil
                continue
            }
            if !p.clocks.isEmpty {
                // The record's map changed in place, found once per record; a record with no stamp yet (every record
                // of a first push) takes the pushed map whole, which records of one entity share.
                func set(_ clocks: inout [String: HybridLogicalClock]) {
                    if clocks.isEmpty {
                        clocks = p.clocks
                        return
                    }
                    for (key, stamp) in p.clocks { clocks[key] = stamp }
                }
                set(&state.clocks[id, default: [:]])
            }
            for (key, hint) in p.hints { state.orderHints[id, default: [:]][key] = hint }
            for (rel, members) in p.members {
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

/// A change file a push is making: its lines, and what each of its records stamps, recorded in the state once the
/// file is on the remote.
private struct PendingFile {
    var lines: ChangeFileWriter
    var records: [PushedRecord] = []
    /// Name numbers of each plan's entity and values, once a record used them all (see ``numbers(of:)``).
    private var planNumbers: [ObjectIdentifier: [Int]] = [:]

    init(capacity: Int) {
        lines = ChangeFileWriter(capacity: capacity)
        records.reserveCapacity(capacity)
    }

    /// The name numbers of `plan`'s entity and all its values, in that order, numbered so the first time.
    mutating func numbers(of plan: PushPlan) -> [Int] {
        let key = ObjectIdentifier(plan)
        if let known = planNumbers[key] { return known }
        let numbers = [lines.number(ofName: plan.entity)] + plan.values.map { lines.number(ofName: $0.name) }
        planNumbers[key] = numbers
        return numbers
    }

    /// A whole record change (a deletion, or one a baseline snapshot made).
    mutating func add(_ c: RecordChange, shape: SyncedSchema.Shape?) {
        lines.add(c)
        var pushed = PushedRecord(id: c.id)
        pushed.deleted = c.deleted
        pushed.clocks = c.values.mapValues(\.clock)
        if let shape, !shape.orderHints.isEmpty {
            for (key, v) in c.values where shape.isOrderHint(key) { pushed.hints[key] = v.text }
        }
        pushed.members = c.members.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
        records.append(pushed)
    }
}

/// What one record of a change file stamps: recorded as the winning stamps once the file is on the remote.
private struct PushedRecord {
    var id: UUID
    var deleted: HybridLogicalClock?
    /// Key → stamp of each value pushed.
    var clocks: [String: HybridLogicalClock] = [:]
    /// Order hints pushed, by relationship name.
    var hints: [String: String] = [:]
    /// Membership changes pushed, by relationship name.
    var members: [(String, [MemberChange])] = []

    init(id: UUID) { self.id = id }
}

/// The values a record of one entity pushes, in the order a change file lists them (by key name), for one push.
private final class PushPlan {
    enum Kind {
        case attribute(Int)
        /// A to-one or ordered to-many relationship this side owns.
        case relationship(Int)
        /// An ordered to-many whose order syncs as a hint.
        case orderHint(Int)
    }

    /// The entity's name.
    let entity: String
    /// Every value key of the entity, by name.
    let values: [(name: String, kind: Kind)]
    /// Owned unordered to-many relationships (positions): pushed as membership changes.
    let memberships: [Int]
    /// Every value key stamped with the push's stamp: the map of a record that pushes them all, shared by all such
    /// records of the entity.
    let clocks: [String: HybridLogicalClock]

    init(shape: SyncedSchema.Shape, stamp: HybridLogicalClock) {
        let e = shape.entity
        entity = e.name
        var values: [(name: String, kind: Kind)] = shape.attributes.map { (e.attributes[$0].name, .attribute($0)) }
        values += shape.orderHints.map { (e.relationships[$0].name, .orderHint($0)) }
        var memberships: [Int] = []
        for i in shape.relationships {
            let r = e.relationships[i]
            if !r.isToMany || r.isOrdered { values.append((r.name, .relationship(i))) } else { memberships.append(i) }
        }
        self.values = values.sorted { $0.name < $1.name }
        self.memberships = memberships
        clocks = Dictionary(uniqueKeysWithValues: values.map { ($0.name, stamp) })
    }
}

/// The plans of one push, by entity.
private struct PushPlans {
    let stamp: HybridLogicalClock
    private var plans: [ObjectIdentifier: PushPlan] = [:]
    /// Records come in runs of one entity: the last plan is checked first.
    private var last: (shape: SyncedSchema.Shape, plan: PushPlan)?

    init(stamp: HybridLogicalClock) { self.stamp = stamp }

    mutating func plan(for shape: SyncedSchema.Shape) -> PushPlan {
        if let last, last.shape === shape { return last.plan }
        let plan = plans[ObjectIdentifier(shape)] ?? PushPlan(shape: shape, stamp: stamp)
        plans[ObjectIdentifier(shape)] = plan
        last = (shape, plan)
        return plan
    }
}
