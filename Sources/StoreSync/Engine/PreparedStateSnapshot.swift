import Dispatch
import Foundation
import StoreAPI
import Synchronization

/// A snapshot of the sync state's per-record log, staged on another thread while a pull's save runs: a first pull
/// of many records writes every record's state to the log, and encoding and writing it beside the save, instead of
/// after it, takes it off the pull's path. The staged file takes the log's place only when the engine writes the
/// state, after the save, and only if the state's per-record maps are still the ones it was made from; otherwise it
/// is removed and the state written as without it. Nothing of the log changes before then, so a failed save or a
/// crash leaves the log as it was.
final class PreparedStateSnapshot: Sendable {
    /// The log this snapshot is for.
    let url: URL
    /// The log identity and revision it was written with.
    let id: UUID
    let revision: Int64
    /// The state's ``SyncState/recordMapChanges`` when it was made.
    let recordMapChanges: Int
    private let staged = Mutex<Result<RecordStateLog.StagedSnapshot, any Error>?>(nil)
    private let done = DispatchGroup()

    /// Starts staging `state`'s per-record maps as log `id` at `revision`, for the log at `url`.
    init(for url: URL, id: UUID, revision: Int64, state: SyncState) {
        self.url = url
        self.id = id
        self.revision = revision
        self.recordMapChanges = state.recordMapChanges.count
        done.enter()
        DispatchQueue.global().async { [self] in
            let outcome = Result { try RecordStateLog.stageSnapshot(for: url, id: id, revision: revision, state: state) }
            staged.withLock { $0 = outcome }
            done.leave()
        }
    }

    /// Whether this snapshot holds what writing `state` at `revision` to the log `id` (`nil`: a new log) would.
    func matches(_ state: SyncState, id: UUID?, revision: Int64) -> Bool {
        self.revision == revision && recordMapChanges == state.recordMapChanges.count && (id == nil || id == self.id)
    }

    /// Waits for the staging to finish and puts the snapshot in the log's place; throws what staging it threw.
    func commit() throws -> RecordStateLog.Position {
        guard let outcome = finished() else {
            throw StoreError.io(url, operation: "writing the sync state log", reason: "the staged snapshot was used already")
        }
        return try RecordStateLog.commit(outcome.get(), to: url)
    }

    /// Waits for the staging to finish and removes what it wrote.
    func discard() {
        if case .success(let snapshot)? = finished() { try? FileManager.default.removeItem(at: snapshot.staging) }
    }

    /// What the staging came to, once it finished; taken, so that it is committed or removed once.
    private func finished() -> Result<RecordStateLog.StagedSnapshot, any Error>? {
        done.wait()
        return staged.withLock { value in
            defer { value = nil }
            return value
        }
    }
}
