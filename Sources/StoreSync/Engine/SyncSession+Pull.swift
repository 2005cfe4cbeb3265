import Foundation
import Synchronization
@_spi(BackendKit) import StoreAPI

extension SyncSession {
    /// The values and memberships of one record that won against everything this store knew.
    struct Winner {
        var entity: String
        var values: [String: StampedValue] = [:]
        var members: [String: [UUID: MemberChange]] = [:]
    }

    /// Records of a pull that cannot conflict with anything: neither the sync state nor the store knows their global
    /// ID, their entity is inserted without objects, and the change is their first in the pull. Every value wins,
    /// so they skip the per-record winner maps and are inserted straight from their changes.
    struct FreshRecords {
        /// The pull's files: each record's change is read where it is, not copied out (a first pull has a fresh
        /// record per change, and its values are read from there into rows, slot by slot).
        let files: [PulledChangeFile]
        /// Where each record's change is in ``files``, in the order the records were added.
        private(set) var places: [Place] = []
        /// Positions in ``places`` by global ID; built only when a later change of the pull names a known record
        /// (which may be one of these), not per record, and then extended with the records added since.
        var positions: [UUID: Int] = [:]
        /// How many of ``places`` ``positions`` lists.
        var listed = 0
        /// Positions of records that a later change of the pull took out to the winner maps.
        var taken: Set<Int> = []

        /// A change's place: its file's position in ``files`` and its record's position in that file.
        struct Place {
            let batch: Int
            let change: Int
        }

        init(files: [PulledChangeFile]) { self.files = files }

        /// How many records were added.
        var count: Int { places.count }

        /// The change of the record at `i` in ``places``.
        func change(_ i: Int) -> RecordChange { files[places[i].batch].change(places[i].change) }

        /// The global ID of the record at `i` in ``places``.
        func globalID(_ i: Int) -> UUID { files[places[i].batch].records[places[i].change].id }

        /// Adds the record whose change is at `place`.
        mutating func add(_ place: Place) { places.append(place) }

        /// Makes room for `count` more records at once.
        mutating func reserveCapacity(_ count: Int) { places.reserveCapacity(places.count + count) }

        /// Takes the record out, when it is one of these.
        mutating func take(_ id: UUID) -> RecordChange? {
            guard !places.isEmpty else { return nil }
            if listed < places.count {
                // Records added after the positions were last listed are listed too: a record new to this pull
                // and changed again by a later file of it must be found here, or it would be inserted twice.
                positions.reserveCapacity(places.count)
                for i in listed..<places.count { positions[globalID(i)] = i }
                listed = places.count
            }
            guard let i = positions[id], !taken.contains(i) else { return nil }
            taken.insert(i)
            return change(i)
        }
    }

    /// Lists and fetches the change files other peers wrote since the last pull and applies them in one save.
    func pull() async throws {
        let remote = self.remote
        let cursor = state.cursor
        logStep("before pull")
        let listing: RemoteListing
        do {
            listing = try await calls.run { try await remote.list(after: cursor) }
        } catch SyncError.historyPurged {
            // Below the purge horizon: what the remote still holds starts with a baseline; merging it by global ID
            // and stamp never duplicates what this store has.
            logger.notice("sync: the remote purged history this peer had not read; re-baselining",
                          metadata: ["peer": "\(state.peer)", "remote": "\(remote.displayName)"])
            report.rebaselined = true
            listing = try await calls.run { try await remote.list(after: nil) }
        }
        var wanted: [ChangeFileName] = []
        for name in listing.names {
            if name.peer == state.peer {
                if name.sequence <= state.sequence { continue }
                // A file of this identity that this replica did not write: another replica shares the identity.
                logger.notice("sync: another replica writes with this peer identity; becoming a new peer",
                              metadata: ["peer": "\(state.peer)", "remote": "\(remote.displayName)"])
                becomeNewPeer()
            }
            wanted.append(name)
        }
        logStep("pull: list")
        var batches: [PulledChangeFile] = []
        // Several files per request, each request within the call time limit. The next request is under way while
        // the files of one are decoded: the remote's work and this peer's overlap. A request still running when
        // the pull fails is left to finish on its own; its files are dropped.
        let calls = self.calls
        func request(_ names: [ChangeFileName]) -> Task<[Data], any Error> {
            Task { try await calls.run { try await remote.fetch(names) } }
        }
        let requests = Self.requests(for: wanted)
        // How long the pull waited for the remote with nothing to decode (traced: what fetching costs beyond
        // what overlaps with decoding).
        var waited = Duration.zero
        var next = requests.first.map(request)
        for (n, names) in requests.enumerated() {
            guard let current = next else { break }
            let asked = ContinuousClock.now
            let files = try await current.value
            waited += ContinuousClock.now - asked
            next = n + 1 < requests.count ? request(requests[n + 1]) : nil
            guard files.count == names.count else {
                throw SyncError.remote(remote.displayName, reason: "answered \(files.count) files for \(names.count) asked for")
            }
            let decoded = Self.decode(files)
            for (n, (name, data)) in zip(names, files).enumerated() {
                if let format = ChangeBatch.laterFormat(data) {
                    throw SyncError.remote(remote.displayName, reason: "\(name) is in change file format \(format), "
                        + "written by a later version (this one reads formats 1 to \(ChangeBatch.newestFormat)); nothing "
                        + "was pulled: upgrade to sync with this remote")
                }
                guard let batch = decoded[n], batch.name == name else {
                    report.ignoredFiles += 1
                    logger.warning("sync: ignoring a change file that is not one this version reads",
                                   metadata: ["file": "\(name)", "remote": "\(remote.displayName)"])
                    continue
                }
                batches.append(batch)
            }
        }
        report.pulledFiles += batches.count
        logger.trace("sync: waited for the remote's files", metadata: [
            "requests": "\(requests.count)",
            "ms": "\(Self.milliseconds(waited))",
        ])
        logStep("pull: fetch+decode")
        try apply(batches)
        state.cursor = listing.cursor
    }

    /// Decodes the fetched files of one request, in order, on as many cores as there are (each file is read on its
    /// own, and a pull spends a good part of its time reading them); `nil` for a file this version does not read.
    static func decode(_ files: [Data]) -> [PulledChangeFile?] {
        guard files.count > 1 else { return files.map(PulledChangeFile.read) }
        let decoded = Mutex([PulledChangeFile?](repeating: nil, count: files.count))
        DispatchQueue.concurrentPerform(iterations: files.count) { n in
            let file = PulledChangeFile.read(files[n])
            decoded.withLock { $0[n] = file }
        }
        return decoded.withLock { $0 }
    }

    /// The fetch requests for `wanted`, in order, each of ``filesPerRequest`` files but the last.
    static func requests(for wanted: [ChangeFileName]) -> [[ChangeFileName]] {
        stride(from: 0, to: wanted.count, by: filesPerRequest).map {
            Array(wanted[$0..<min($0 + filesPerRequest, wanted.count)])
        }
    }

    /// Merges the pulled changes with what this store knows and applies the winners in one save.
    func apply(_ batches: [PulledChangeFile]) throws {
        var winners: [UUID: Winner] = [:]
        var order: [UUID] = []
        var fresh = FreshRecords(files: batches)
        // Values still waiting for their target won earlier: they take part again.
        for (_, c) in state.dangling.sorted(by: { $0.key < $1.key }) {
            var w = Self.winner(c.id, c.entity, &winners, &order)
            for (k, v) in c.values { w.values[k] = v }
            for (rel, ms) in c.members { for m in ms { w.members[rel, default: [:]][m.target] = m } }
            winners[c.id] = w
        }
        state.dangling = [:]
        let incoming = batches.reduce(0) { $0 + $1.records.count }
        // Nothing to merge: the record index is not read (for a store that has not built it yet, that is a scan).
        guard incoming > 0 || !winners.isEmpty || needsCleanup else { return }
        if state.clocks.isEmpty {
            // A first pull fills the maps from empty: room for every record is made once, not by regrowing.
            state.clocks.reserveCapacity(incoming)
        }
        if state.knowsNoRecord {
            // Every record whose state this pull changes is every record the state then knows: the next write is
            // a snapshot, and the records are not listed one by one as well.
            touchedEveryRecord = true
        }
        if !shapes.shapes.values.contains(where: \.insertsWithoutObject) {
            // Every record of the pull goes into the winner maps (none can be fresh, see FreshRecords).
            winners.reserveCapacity(winners.count + incoming)
            order.reserveCapacity(order.count + incoming)
        } else if touchedEveryRecord {
            // A first pull: most of its records are fresh, and room for them is made once, not by regrowing.
            fresh.reserveCapacity(incoming)
        }
        if !touchedEveryRecord { touchedIDs.reserveCapacity(touchedIDs.count + incoming) }
        // Records the store holds are looked up as the changes are merged, without taking the index's lock per
        // record: nothing changes the index meanwhile.
        try index.refresh(self)
        let indexed = index.objects
        // The entity of the last record, by file and name number, its shape, and whether its records can be fresh:
        // looked up once per run of records of one entity (the shape is not retained and released per record).
        var last: (batch: Int, entity: Int, shape: SyncedSchema.Shape?, takesRows: Bool)?
        // Fresh records are merged on the maps taken out of the state for a run of them (see FreshRun); any other
        // change goes the general way, with the maps back in the state, made into its ``RecordChange`` only then.
        var run: FreshRun?
        for (b, batch) in batches.enumerated() {
            for n in batch.records.indices {
                let place = FreshRecords.Place(batch: b, change: n)
                // Runs of records of one entity: the name's number is compared, not the name hashed, per record.
                let entity = batch.records[n].entity
                if last?.batch != b || last?.entity != entity {
                    let shape = shapes.shapes[batch.names[entity]]
                    last = (b, entity, shape, shape.map { $0.insertsWithoutObject && $0.orderHints.isEmpty } ?? false)
                }
                if last?.shape?.insertsWithoutObject == true {
                    var taken = run.take() ?? FreshRun(taking: self)
                    if last?.takesRows == true,
                       taken.add(n, of: batch, at: place, winners: winners, indexed: indexed, fresh: &fresh) {
                        run = taken
                        continue
                    }
                    taken.putBack(into: self)
                } else if let taken = run.take() {
                    taken.putBack(into: self)
                }
                merge(batch.change(n), at: place, shape: last?.shape, into: &winners, order: &order, fresh: &fresh,
                      indexed: indexed)
            }
        }
        if let taken = run.take() { taken.putBack(into: self) }
        logStep("pull: merge")
        guard !winners.isEmpty || fresh.count > fresh.taken.count || needsCleanup else { return }
        try applyWinners(winners, order: order, fresh: fresh)
    }

    private static func winner(_ id: UUID, _ entity: String, _ winners: inout [UUID: Winner], _ order: inout [UUID]) -> Winner {
        if let w = winners[id] { return w }
        order.append(id)
        return Winner(entity: entity)
    }

    /// Merges one change, found at `place` in the pull's files; `shape` is its entity's (`nil`: an entity that does
    /// not sync here).
    private func merge(_ c: RecordChange, at place: FreshRecords.Place, shape: SyncedSchema.Shape?, into winners: inout [UUID: Winner], order: inout [UUID],
                       fresh: inout FreshRecords, indexed: [UUID: ObjectID]) {
        let id = c.id
        // A deletion names a global ID, whatever its entity (a baseline's tombstones name none).
        guard shape != nil || c.deleted != nil else {
            report.ignoredChanges += 1
            return
        }
        if let d = c.deleted {
            state.clock = state.clock.receiving(d)
            if let old = state.tombstones[id], old >= d { return }
            state.tombstones[id] = d
            state.clocks[id] = nil
            state.orderHints[id] = nil
            touch(id)
            needsCleanup = true
            return
        }
        guard state.tombstones.isEmpty || state.tombstones[id] == nil else { return }
        var isNew = winners.isEmpty || winners[c.id] == nil
        let known = state.clocks[id] != nil
        if isNew, known, let first = fresh.take(id) {
            // A record this pull brought before: it goes the general way from here, from the values it won then.
            winners[id] = Winner(entity: first.entity, values: first.values)
            order.append(id)
            isNew = false
        }
        if isNew { order.append(c.id) }
        // Changed in place: a copy taken out of the dictionary would copy its maps on the first change.
        func won(_ body: (inout Winner) -> Void) { body(&winners[c.id, default: Winner(entity: c.entity)]) }
        // One pass over the values: the latest stamp, and whether every value is stamped.
        var allStamped = true
        if !c.values.isEmpty {
            var latest = state.clock
            for (_, v) in c.values {
                if v.clock > latest { latest = v.clock }
                if !(v.clock > .zero) { allStamped = false }
            }
            state.clock = state.clock.receiving(latest)
        }
        if isNew, !known, !c.values.isEmpty, allStamped {
            // A record this store knows no value of (every record of a first pull): every value wins, and the
            // change's maps are taken whole instead of entry by entry (its keys not hashed again).
            state.clocks[id] = c.values.mapValues(\.clock)
            if let shape, !shape.orderHints.isEmpty {
                for (key, v) in c.values where shape.isOrderHint(key) { state.orderHints[id, default: [:]][key] = v.text }
            }
            touch(id)
            if let shape, shape.insertsWithoutObject, c.members.isEmpty, indexed.isEmpty || indexed[id] == nil {
                order.removeLast()
                fresh.add(place)
                return
            }
            winners[c.id] = Winner(entity: c.entity, values: c.values)
        } else {
            if isNew { winners[c.id] = Winner(entity: c.entity) }
            var touched = false
            for (key, v) in c.values {
                guard v.clock > (state.clocks[id]?[key] ?? .zero) else { continue }
                state.clocks[id, default: [:]][key] = v.clock
                if shape?.isOrderHint(key) == true { state.orderHints[id, default: [:]][key] = v.text }
                touched = true
                won { $0.values[key] = v }
            }
            if touched { touch(id) }
        }
        for (rel, members) in c.members {
            for m in members {
                state.clock = state.clock.receiving(m.clock)
                let key = "\(rel)→\(m.target.keyString)"
                // Add-wins: a removal takes away only the adds its peer had seen.
                guard let present = mergeMember(id, key, m) else { continue }
                won { $0.members[rel, default: [:]][m.target] = MemberChange(target: m.target, present: present, clock: m.clock) }
            }
        }
    }

    private func applyWinners(_ winners: [UUID: Winner], order: [UUID], fresh: FreshRecords) throws {
        var winners = winners
        var order = order
        var fresh = fresh
        let context = coordinator.newContext()
        context.author = SyncEngine.historyAuthor
        // An entry that does not name its record any more (the store changed without history): the index is built
        // again before anything is changed in the context.
        func matches(_ ids: [UUID]) -> Bool {
            for id in ids {
                guard let oid = index[id] else { continue }
                if (try? context.object(with: oid))?.globalID != id { return false }
            }
            return true
        }
        // Most pulls bring no deletion and no merge: no map is looked up per record then.
        func gone(_ id: UUID) -> Bool {
            guard !state.tombstones.isEmpty || !state.redirects.isEmpty else { return false }
            return state.tombstones[id] != nil || state.redirects[id] != nil
        }
        // Deleted and merged-away records go, wherever the deletion came from: a global ID never comes back.
        func leavingRecords() -> [UUID] {
            guard needsCleanup else { return [] }
            if state.tombstones.count + state.redirects.count < index.objects.count {
                let named = Array(state.tombstones.keys) + Array(state.redirects.keys)
                return Array(Set(named.filter { index[$0] != nil }))
            }
            return index.objects.keys.filter(gone)
        }
        var leaving = leavingRecords()
        if !matches(order) || !matches(leaving) {
            logger.notice("sync: the record index does not match the store; scanning the store again",
                          metadata: ["store": "\(SyncEngine.name(of: loaded))"])
            try index.rebuild(self)
            leaving = leavingRecords()
            // Records the store turned out to hold are updated, not inserted.
            for i in 0..<fresh.count where !fresh.taken.contains(i) && index[fresh.globalID(i)] != nil {
                let c = fresh.change(i)
                fresh.taken.insert(i)
                winners[c.id] = Winner(entity: c.entity, values: c.values)
                order.append(c.id)
            }
        }
        var objects: [UUID: ManagedObject] = [:]
        func object(_ id: UUID) throws -> ManagedObject? {
            if let o = objects[id] { return o.isDeleted ? nil : o }
            guard var oid = index[id] else { return nil }
            if (try? context.object(with: oid))?.globalID != id {
                try index.rebuild(self)
                guard let fresh = index[id] else { return nil }
                oid = fresh
            }
            let o = try context.object(with: oid)
            objects[id] = o
            return o
        }
        for id in leaving {
            if let o = try object(id) {
                try context.delete(o)
                report.deletedRecords += 1
            }
        }
        var created: Set<UUID> = []
        // Inserted records with nothing left to set (their entity links nothing) are not visited again: the next
        // loop goes over the rest, in the same order. Those of entities nothing can link to are inserted without an
        // object, in the same save (a first pull of such records makes no object at all).
        var finished = 0
        var rest: [UUID] = []
        rest.reserveCapacity(order.count)
        var withoutObjects: [String: (rows: [[StoreValue]], ids: [UUID])] = [:]
        finished += stageFresh(fresh, into: &withoutObjects, gone: gone)
        // Looked up without taking the index's lock per record: nothing in this loop changes it.
        let indexed = index.objects
        for id in order {
            guard !gone(id), indexed.isEmpty || indexed[id] == nil, let w = winners[id], objects[id] == nil else {
                rest.append(id)
                continue
            }
            // Made with its attribute values: the values' loop below then sets only its relationships.
            var values: [StoreValue?] = []
            let shape = shapes.shapes[w.entity]
            if let shape {
                values = Array(repeating: nil, count: shape.entity.attributes.count)
                for a in shape.attributeSlots {
                    guard let v = w.values[a.name] else { continue }
                    guard let value = SyncedSchema.value(of: v.text, type: a.type) else {
                        report.ignoredChanges += 1
                        continue
                    }
                    values[a.index] = value
                }
            }
            if !values.isEmpty, w.members.isEmpty, let shape, shape.insertsWithoutObject {
                func stage(_ s: inout (rows: [[StoreValue]], ids: [UUID])) {
                    s.rows.append(zip(values, shape.entity.newRecordAttributeValues).map { $0 ?? $1 })
                    s.ids.append(id)
                }
                stage(&withoutObjects[w.entity, default: ([], [])])
                finished += 1
                continue
            }
            objects[id] = values.isEmpty ? try context.insert(w.entity, [:], globalID: id, into: loaded)
                : try context.insert(w.entity, attributeValues: values, globalID: id, into: loaded)
            if !values.isEmpty, w.members.isEmpty, shape?.relationships.isEmpty == true {
                finished += 1
            } else {
                created.insert(id)
                rest.append(id)
            }
        }
        for (entity, staged) in withoutObjects {
            try context.insertWithoutObjects(entity, completeAttributeValues: staged.rows, globalIDs: staged.ids, into: loaded)
        }
        logStep("pull: inserts")
        report.insertedRecords += created.count + finished
        var updated = 0
        for id in rest {
            guard let w = winners[id] else { continue }
            if gone(id) {
                // Links added to a record merged away by deduplication go to the record it was merged into, as
                // the merge moved the links it had then.
                let into = state.resolved(id)
                guard state.tombstones[id] == nil, into != id, let o = try object(into) else { continue }
                _ = try apply(w, to: o, id: into, object: object, merging: true, attributesSet: false)
                continue
            }
            guard let o = try object(id) else { continue }
            if try apply(w, to: o, id: id, object: object, merging: false, attributesSet: created.contains(id)) { updated += 1 }
        }
        report.updatedRecords += max(0, updated - created.count)
        // Only entities with a uniqueness constraint can get duplicates; found without hashing each record's name.
        var constrained: Set<String> = []
        if shapes.shapes.values.contains(where: { !$0.entity.uniquenessConstraints.isEmpty }) {
            var last: String?
            for id in order where !gone(id) {
                guard let entity = winners[id]?.entity, entity != last else { continue }
                last = entity
                if shapes.shapes[entity]?.entity.uniquenessConstraints.isEmpty == false { constrained.insert(entity) }
            }
        }
        try deduplicate(entities: constrained, context: context)
        // Records whose hint won, and records whose members changed (the context holds them as changed); none
        // when no synced entity has an ordered to-many whose order syncs as a hint.
        if shapes.shapes.values.contains(where: { !$0.orderHints.isEmpty }) {
            var hinted: [ManagedObject] = []
            for id in order where !gone(id) {
                guard let w = winners[id], let o = try object(id), let shape = shapes.shapes[o.entity.name],
                      w.values.keys.contains(where: shape.isOrderHint) else { continue }
                hinted.append(o)
            }
            try applyOrderHints(hinted + context.updatedObjects + context.insertedObjects)
        }
        logStep("pull: before save")
        prepareStateSnapshot()
        try context.save()
        logStep("pull: save")
        needsCleanup = false
    }

    /// Stages the fresh records of a pull (``FreshRecords``) for insertion without objects, by entity: their values
    /// read straight from their files into rows, the entity's shape looked up once per run of records of one entity.
    /// Returns how many were staged.
    private func stageFresh(_ fresh: FreshRecords, into staged: inout [String: (rows: [[StoreValue]], ids: [UUID])],
                            gone: (UUID) -> Bool) -> Int {
        var count = 0
        var entity = ""
        var shape: SyncedSchema.Shape?
        var rows: [[StoreValue]] = []
        var ids: [UUID] = []
        func flush() {
            guard !ids.isEmpty else { return }
            if staged[entity] == nil {
                staged[entity] = (rows, ids)
            } else {
                staged[entity]?.rows += rows
                staged[entity]?.ids += ids
            }
            rows = []
            ids = []
        }
        rows.reserveCapacity(fresh.count)
        ids.reserveCapacity(fresh.count)
        // The file and entity (by name number) that `slots` was made for.
        var slotsFor = (batch: -1, entity: -1)
        // Per name number of that file: the position in the shape's attribute slots of the attribute of that name,
        // -1 for any other name. A value is put in its row by this, not by looking its name up.
        var slots: [Int] = []
        // The file of the record: taken out of the list once per file, as reading it there per record copied it
        // (and retained and released each of its lists).
        var batch = -1
        guard var file = fresh.files.first else { return 0 }
        for (i, place) in fresh.places.enumerated() {
            if !fresh.taken.isEmpty, fresh.taken.contains(i) { continue }
            if place.batch != batch {
                batch = place.batch
                file = fresh.files[batch]
            }
            let r = file.records[place.change]
            if gone(r.id) { continue }
            if slotsFor != (place.batch, r.entity) || shape == nil {
                let name = file.names[r.entity]
                if name != entity || shape == nil {
                    flush()
                    entity = name
                    shape = shapes.shapes[entity]
                }
                slotsFor = (place.batch, r.entity)
                slots = file.names.map { name in
                    shape?.attributeSlots.firstIndex { $0.name == name } ?? -1
                }
            }
            guard let shape else { continue }
            // Every attribute's value, the defaults first: the row is stored as it is (no array of optionals
            // turned into another array per record). Appended one by one into a new array rather than a copy of
            // the defaults made unique, which costs more per record.
            let blanks = shape.entity.newRecordAttributeValues
            var row: [StoreValue] = []
            row.reserveCapacity(blanks.count)
            for blank in blanks { row.append(blank) }
            if r.isPlain {
                // Each key once: the values found by slot are those the record's map holds.
                for j in r.values {
                    let v = file.values[j]
                    let slot = slots[v.key]
                    guard slot >= 0 else { continue }
                    let a = shape.attributeSlots[slot]
                    guard let value = file.attributeValue(v, type: a.type) else {
                        report.ignoredChanges += 1
                        continue
                    }
                    row[a.index] = value
                }
            } else {
                let values = fresh.change(i).values
                for a in shape.attributeSlots {
                    guard let v = values[a.name] else { continue }
                    guard let value = SyncedSchema.value(of: v.text, type: a.type) else {
                        report.ignoredChanges += 1
                        continue
                    }
                    row[a.index] = value
                }
            }
            rows.append(row)
            ids.append(r.id)
            count += 1
        }
        flush()
        return count
    }

    /// Sets the winning values on one record; returns whether anything was set. Relationship targets this store does
    /// not hold yet are kept in the state for the next pull. `merging`: the values are those of a record merged into
    /// `o`, which takes only its links: members added, and a to-one where it has none. `attributesSet`: `o` was
    /// inserted with the winning attribute values, so only its relationships are set here.
    private func apply(_ w: Winner, to o: ManagedObject, id: UUID, object: (UUID) throws -> ManagedObject?,
                       merging: Bool, attributesSet: Bool) throws -> Bool {
        guard let shape = shapes.shapes[o.entity.name] else { return false }
        // Inserted with its values and nothing to link: nothing left to set.
        if attributesSet, w.members.isEmpty, shape.relationships.isEmpty { return o.hasChanges }
        var waiting = RecordChange(entity: o.entity.name, id: id)
        func target(_ raw: UUID) throws -> ManagedObject? { try object(state.resolved(raw)) }
        func missing(_ raw: UUID) -> Bool {
            return state.tombstones[state.resolved(raw)] == nil
        }
        // By position in the entity, owned values only (order hints are applied once every link of the pull is in
        // place, in applyOrderHints): no key is sorted or looked up by name per record.
        let entity = o.entity
        if !merging, !attributesSet {
            for i in shape.attributes {
                let a = entity.attributes[i]
                guard let v = w.values[a.name] else { continue }
                guard let value = SyncedSchema.value(of: v.text, type: a.type) else {
                    report.ignoredChanges += 1
                    continue
                }
                if try o.value(forKey: a.name) != value { try o.setValue(value, forKey: a.name) }
            }
        }
        for i in shape.relationships {
            let rel = entity.relationships[i]
            let key = rel.name
            guard let v = w.values[key] else { continue }
            if merging {
                if !rel.isToMany, let raw = UUID(uuidString: v.text), let t = try target(raw), t !== o,
                   try o.object(forKey: key) == nil {
                    try o.setObject(t, forKey: key)
                }
                continue
            }
            if !rel.isToMany {
                var t: ManagedObject? = nil
                if let raw = UUID(uuidString: v.text) {
                    t = try target(raw)
                    if t == nil, missing(raw) { waiting.values[key] = v }
                }
                if try o.object(forKey: key) !== t { try o.setObject(t, forKey: key) }
            } else {
                guard let ids = SyncedSchema.ordered(v.text) else { report.ignoredChanges += 1; continue }
                var list: [ManagedObject] = []
                for raw in ids {
                    if let t = try target(raw) { if !list.contains(where: { $0 === t }) { list.append(t) } }
                    else if missing(raw) { waiting.values[key] = v }
                }
                let current = try o.objects(forKey: key)
                if current.count != list.count || zip(current, list).contains(where: { $0 !== $1 }) {
                    try o.setObjects(list, forKey: key)
                }
            }
        }
        for rel in w.members.keys.sorted() where shape.owns(rel) {
            // The relationship is set once with every change of the pull: adding members one by one reads and
            // writes the whole list per member.
            var adds: [ManagedObject] = []
            var removes = Set<ObjectIdentifier>()
            let changes = (w.members[rel] ?? [:]).sorted { $0.key.sortsBefore($1.key) }
            for (raw, m) in changes {
                if merging {
                    if m.present, let t = try target(raw), t !== o { adds.append(t) }
                    continue
                }
                if let t = try target(raw) {
                    if m.present { adds.append(t) } else { removes.insert(ObjectIdentifier(t)) }
                } else if m.present, missing(raw) {
                    waiting.members[rel, default: []].append(m)
                }
            }
            guard !adds.isEmpty || !removes.isEmpty else { continue }
            let current = try o.objects(forKey: rel)
            var list = current.filter { !removes.contains(ObjectIdentifier($0)) }
            var present = Set(list.map(ObjectIdentifier.init))
            for t in adds where present.insert(ObjectIdentifier(t)).inserted { list.append(t) }
            if list.count != current.count || zip(list, current).contains(where: { $0 !== $1 }) {
                try o.setObjects(list, forKey: rel)
            }
        }
        if !merging, !waiting.values.isEmpty || !waiting.members.isEmpty { state.dangling[id.keyString] = waiting }
        return o.hasChanges
    }

    /// Sorts the members of every ordered to-many whose members follow a to-one inverse and that this pull touched
    /// (its hint won, or its members changed),
    /// by its winning order hint, members the hint does not list last by global ID: every peer holding the same
    /// members and the same hint has the same order, whatever order the links arrived in.
    private func applyOrderHints(_ objects: [ManagedObject]) throws {
        var seen = Set<ObjectIdentifier>()
        for o in objects where !o.isDeleted && seen.insert(ObjectIdentifier(o)).inserted {
            guard let shape = shapes.shapes[o.entity.name], !shape.orderHints.isEmpty else { continue }
            for i in shape.orderHints {
                let name = shape.entity.relationships[i].name
                let hint = state.orderHints[o.globalID]?[name].flatMap(SyncedSchema.ordered) ?? []
                var position: [UUID: Int] = [:]
                for (n, id) in hint.enumerated() where position[id] == nil { position[id] = n }
                let members = try o.objects(forKey: name)
                let sorted = members.sorted {
                    let a = position[$0.globalID] ?? Int.max
                    let b = position[$1.globalID] ?? Int.max
                    return a != b ? a < b : $0.globalID.sortsBefore($1.globalID)
                }
                if zip(members, sorted).contains(where: { $0 !== $1 }) { try o.setObjects(sorted, forKey: name) }
            }
        }
    }
}
