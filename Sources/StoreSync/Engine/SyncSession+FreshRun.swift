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
        /// ``shared``'s entries in a list: a record's few keys are found there by comparing them, not hashing them.
        private var sharedEntries: [(key: String, clock: HybridLogicalClock)] = []
        /// The most keys a record's map is compared with ``sharedEntries`` for; beyond it, ``shared`` is looked up.
        private static let listedKeysLimit = 8

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

        /// Merges `c` (at `place` in the pull's files) as the general merge would and adds it to `fresh`, when it
        /// is a fresh record: its entity (`shape`) is inserted without objects and syncs no order hint, it has
        /// values, all stamped, and no membership, no deletion, and neither the state nor the store (`indexed`)
        /// knows its global ID, nor did an earlier change of the pull (`winners`). Returns `false`, changing
        /// nothing, for any other change.
        mutating func add(_ c: RecordChange, at place: FreshRecords.Place, shape: SyncedSchema.Shape,
                          winners: [UUID: Winner], indexed: [UUID: ObjectID],
                          fresh: inout FreshRecords) -> Bool {
            guard shape.insertsWithoutObject, shape.orderHints.isEmpty, c.deleted == nil, c.members.isEmpty,
                  !c.values.isEmpty else { return false }
            let id = c.id
            guard tombstones.isEmpty || tombstones[id] == nil, winners.isEmpty || winners[id] == nil,
                  indexed.isEmpty || indexed[id] == nil else { return false }
            var latest = clock
            for (_, v) in c.values {
                guard v.clock > .zero else { return false }
                if v.clock > latest { latest = v.clock }
            }
            if !sharedMatches(c.values) {
                shared = c.values.mapValues(\.clock)
                sharedEntries = shared.map { ($0.key, $0.value) }
            }
            // One lookup both finds that the state knows no stamp of the record and enters its map; a record it
            // knows gets its own map back (``shared`` is only a cache of the last map, so it may stay changed).
            if let known = clocks.updateValue(shared, forKey: id) {
                clocks[id] = known
                return false
            }
            clock = clock.receiving(latest)
            if listsTouched { touched.insert(id) }
            fresh.add(place)
            return true
        }

        /// Whether ``shared`` holds exactly the keys of `values`, each with its value's stamp.
        private func sharedMatches(_ values: [String: StampedValue]) -> Bool {
            guard shared.count == values.count else { return false }
            guard values.count <= Self.listedKeysLimit else {
                for (key, v) in values where shared[key] != v.clock { return false }
                return true
            }
            // Keys are unique on both sides: as many of them, each found with its stamp, is the same map.
            values: for (key, v) in values {
                for entry in sharedEntries where entry.key == key {
                    guard entry.clock == v.clock else { return false }
                    continue values
                }
                return false
            }
            return true
        }
    }
}
