import Foundation
import StoreAPI
import Synchronization

/// Where each record of a store is, by global ID: built by one scan of the store, then kept current from the store's
/// history (every insert and delete, by any author, is in it), so that applying a pull looks up the records it
/// changes instead of scanning the store each time.
///
/// An entry that no longer names the record (a store changed without history, say) is found when it is used: the
/// record read back has another global ID or is gone, and the index is built again.
final class RecordIndex: Sendable {
    private struct Contents {
        var objects: [UUID: ObjectID] = [:]
        /// The last history token applied; `nil` before the first build.
        var token: Int64?
        var built = false
    }

    private let contents = Mutex(Contents())

    /// Every indexed record.
    var objects: [UUID: ObjectID] { contents.withLock { $0.objects } }

    /// The record stored under `id`, if any.
    subscript(id: UUID) -> ObjectID? { contents.withLock { $0.objects[id] } }

    /// Brings the index up to date with the store's history since it was last brought up to date, building it
    /// first when it has not been.
    func refresh(_ session: SyncSession) throws {
        let (built, token) = contents.withLock { ($0.built, $0.token) }
        guard built else { return try rebuild(session) }
        let transactions = try session.store.history(after: token)
        guard let last = transactions.last?.token else { return }
        let storeID = session.loaded.identifier
        // A pull's own save lists every record it inserted: room for them is made once, not by regrowing the map.
        let inserts = transactions.reduce(0) { $0 + $1.changes.count }
        contents.withLock { c in
            c.objects.reserveCapacity(c.objects.count + inserts)
            for t in transactions {
                for change in t.changes {
                    switch change.kind {
                    case .insert, .update:
                        c.objects[change.globalID] = ObjectID(storeUUID: storeID, entity: change.entity, primaryKey: change.primaryKey)
                    case .delete:
                        c.objects[change.globalID] = nil
                    }
                }
            }
            c.token = last
        }
    }

    /// Scans the store. The history token is read first: a save between the two is applied again by the next
    /// ``refresh(_:)``, which changes nothing. Any token at or below the latest will do as a start, so history is
    /// read from the last one this index or the last push reached, not from the beginning.
    func rebuild(_ session: SyncSession) throws {
        let known = contents.withLock { $0.token } ?? session.state.pushedToken
        let start = try session.store.history(after: known).last?.token ?? known
        var found: [UUID: ObjectID] = [:]
        let storeID = session.loaded.identifier
        try session.forEachRecord { r in found[r.globalID] = ObjectID(storeUUID: storeID, entity: r.entity, primaryKey: r.primaryKey) }
        contents.withLock { $0 = Contents(objects: found, token: start, built: true) }
    }
}
