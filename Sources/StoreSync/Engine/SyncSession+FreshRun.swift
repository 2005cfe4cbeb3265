import Foundation
import StoreAPI

extension SyncSession {
    /// The merge of ``FreshRecords`` done on maps taken out of the session for a run of them: what the general merge
    /// does for such a record, without reaching into the session's state (and checking exclusive access to it) per
    /// record. The maps go back to the session before any other change is merged (``putBack(into:)``), so the
    /// general merge always sees the whole state.
    struct FreshRun {
        /// The session's ``SyncState/clocks``, changed here while the run lasts.
        private var clocks: [UUID: [String: HybridLogicalClock]]
        /// The session's ``SyncSession/touchedIDs``.
        private var touched: Set<UUID>
        /// Whether records are listed in ``touched``: not when the session's next write holds every record
        /// (``SyncSession/touchedEveryRecord``).
        private let listsTouched: Bool
        /// The session's ``SyncState/clock``.
        private var clock: HybridLogicalClock
        /// The session's tombstones, read only: nothing in a run deletes.
        private let tombstones: [UUID: HybridLogicalClock]
        /// The clock map of the last record: the values of one push share their stamps, so consecutive records
        /// mostly have equal maps, and one map (copy-on-write) then serves them all instead of one made per record.
        private var shared: [String: HybridLogicalClock] = [:]
        /// The latest stamp of ``shared``.
        private var sharedLatest = HybridLogicalClock.zero
        /// The file position (in the pull) and the key and stamp numbers, in file order, of the values ``shared``
        /// was made of: a record of that file with the same numbers in the same order has the same map, found so
        /// without a name compared or hashed.
        private var sharedFile = -1
        /// See ``sharedFile``.
        private var sharedNumbers: [(key: Int, stamp: Int)] = []

        /// Takes the maps out of `session`, which holds empty ones until ``putBack(into:)``.
        init(taking session: SyncSession) {
            clocks = session.state.clocks
            session.state.clocks = [:]
            touched = session.touchedIDs
            session.touchedIDs = []
            listsTouched = !session.touchedEveryRecord
            clock = session.state.clock
            tombstones = session.state.tombstones
        }

        /// Gives the maps back to `session`.
        consuming func putBack(into session: SyncSession) {
            session.state.clocks = clocks
            session.touchedIDs = touched
            session.state.clock = clock
        }

        /// Merges record `n` of `file` (at `place` in the pull's files) as the general merge would and adds it to
        /// `fresh`, when it is a fresh record: it has values, all stamped, each key once, and no membership, no
        /// deletion, and neither the state nor the store (`indexed`) knows its global ID, nor did an earlier change
        /// of the pull (`winners`). Returns `false`, changing nothing, for any other change. Its entity's shape is the
        /// caller's to check: the entity is inserted without objects and syncs no order hint.
        mutating func add(_ n: Int, of file: PulledChangeFile, at place: FreshRecords.Place,
                          winners: [UUID: Winner], indexed: [UUID: ObjectID], fresh: inout FreshRecords) -> Bool {
            let r = file.records[n]
            guard r.deleted == nil, r.members.isEmpty, !r.values.isEmpty, r.isPlain else { return false }
            let id = r.id
            guard tombstones.isEmpty || tombstones[id] == nil, winners.isEmpty || winners[id] == nil,
                  indexed.isEmpty || indexed[id] == nil else { return false }
            if !sharedMatches(r.values, of: file, at: place.batch) {
                var map = [String: HybridLogicalClock](minimumCapacity: r.values.count)
                var latest = HybridLogicalClock.zero
                sharedNumbers.removeAll(keepingCapacity: true)
                for j in r.values {
                    let v = file.values[j]
                    let stamp = file.stamps[v.stamp]
                    map[file.names[v.key]] = stamp
                    if stamp > latest { latest = stamp }
                    sharedNumbers.append((v.key, v.stamp))
                }
                shared = map
                sharedLatest = latest
                sharedFile = place.batch
            }
            // One lookup both finds that the state knows no stamp of the record and enters its map; a record it
            // knows gets its own map back (``shared`` is only a cache of the last map, so it may stay changed).
            if let known = clocks.updateValue(shared, forKey: id) {
                clocks[id] = known
                return false
            }
            clock = clock.receiving(sharedLatest)
            if listsTouched { touched.insert(id) }
            fresh.add(place)
            return true
        }

        /// Whether ``shared`` was made of the values at `values` in `file` (the pull's file at `batch`): the same
        /// key and stamp numbers in the same order.
        private func sharedMatches(_ values: Range<Int>, of file: PulledChangeFile, at batch: Int) -> Bool {
            guard sharedFile == batch, sharedNumbers.count == values.count else { return false }
            for (k, j) in values.enumerated() {
                let v = file.values[j]
                guard sharedNumbers[k].key == v.key, sharedNumbers[k].stamp == v.stamp else { return false }
            }
            return true
        }
    }
}
