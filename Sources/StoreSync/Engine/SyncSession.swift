import Foundation
import Logging
import StoreAPI

/// One run of sync for one store: push, then pull, each remote call with a time limit. It works on a copy of the
/// store's sync state and the caller writes that copy back only when the run succeeded, so a failed run leaves the
/// state as it was and the next run repeats what this one could not finish.
final class SyncSession {
    let loaded: LoadedStore
    let coordinator: StoreCoordinator
    let remote: any SyncRemote
    let calls: RemoteTimeout
    let logger: Logger
    let shapes: SyncedSchema
    var state: SyncState
    var report: SyncReport
    /// Set when records must be removed even if no value won: a deletion arrived, or the store holds a record
    /// under a global ID deleted or merged away elsewhere.
    var needsCleanup = false
    /// What deduplication changed in the last pull, pushed after it like local changes.
    var merges: [MergeChange] = []
    /// Where the store's records are, by global ID (the engine's, kept between runs).
    let index: RecordIndex
    /// Global IDs whose per-record state (clocks, tombstone, order hints) changed since the state was last written.
    var touchedIDs: Set<UUID> = []
    /// Set when the next write of the state must hold every record's state (a snapshot of the log), so that
    /// ``touchedIDs`` need not list the records changed meanwhile: a pull into a state that knew no record
    /// changes every record it then knows, and listing each of them would only repeat the state's own keys.
    var touchedEveryRecord = false
    /// Memberships (`<global ID> <relationship>→<target>`) whose state changed since the state was last written.
    var touchedMembers: Set<String> = []
    /// Where the engine writes the state's per-record log, and where that log stands; `nil` for a store without one.
    var stateLog: (url: URL, position: RecordStateLog.Position?)?
    /// A snapshot of that log being staged while a save runs (``prepareStateSnapshot()``).
    private var preparedSnapshot: PreparedStateSnapshot?
    /// Set by ``noteAttachStart()`` when the store held no synced record as it attached.
    var attachedEmpty: EmptyAttach?
    /// When the last step ``logStep(_:)`` timed ended, and the process's CPU time then.
    private var stepStart = (clock: ContinuousClock.now, cpu: SyncSession.processCPUMilliseconds())

    /// Logs at trace level how long the step that just ended took, in wall-clock and in the process's CPU time
    /// (how a pull divides its time, and how much of it is spent waiting, without a profiler:
    /// `storectl sync --log-level trace`); costs nothing at other levels.
    func logStep(_ step: @autoclosure () -> String) {
        guard logger.logLevel <= .trace else { return }
        let now = (clock: ContinuousClock.now, cpu: Self.processCPUMilliseconds())
        let elapsed = now.clock - stepStart.clock
        let cpu = now.cpu - stepStart.cpu
        stepStart = now
        logger.trace("sync: step done", metadata: [
            "step": "\(step())", "ms": "\(Self.milliseconds(elapsed))", "cpuMs": "\(String(format: "%.1f", cpu))",
        ])
    }

    /// `d` in milliseconds with one decimal, as the trace prints times.
    static func milliseconds(_ d: Duration) -> String {
        String(format: "%.1f", Double(d.components.seconds) * 1000 + Double(d.components.attoseconds) / 1e15)
    }

    /// The CPU time every thread of the process has used so far, in milliseconds.
    private static func processCPUMilliseconds() -> Double {
        var t = timespec()
        guard clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t) == 0 else { return 0 }
        return Double(t.tv_sec) * 1000 + Double(t.tv_nsec) / 1e6
    }

    /// A store that held no synced record as it attached, and its history token then.
    struct EmptyAttach {
        var token: Int64?
    }

    /// A record a merge deleted or relinked.
    struct MergeChange {
        var id: UUID
        var entity: String
        var primaryKey: Int64
        /// The relationships that changed; `nil` with ``deleted``.
        var keys: Set<String>?
        var deleted: Bool
    }

    /// Records per change file: small enough to write and read in one piece, large enough that an initial push of
    /// a big store is a manageable number of files.
    static let recordsPerFile = 2_000

    /// Change files per remote request (a fetch or a put of several): few requests for a big push or pull, each
    /// small enough to finish well within the call time limit.
    static let filesPerRequest = 16

    init(loaded: LoadedStore, coordinator: StoreCoordinator, remote: any SyncRemote, calls: RemoteTimeout, logger: Logger,
         state: SyncState, report: SyncReport, index: RecordIndex) {
        self.index = index
        self.loaded = loaded
        self.coordinator = coordinator
        self.remote = remote
        self.calls = calls
        self.logger = logger
        self.shapes = SyncedSchema(schema: coordinator.schema, entityNames: loaded.entityNames)
        self.state = state
        self.report = report
    }

    var store: any PersistentStore { loaded.store }

    /// What a write of the state wrote: the log and revision the metadata names, and where the log now stands.
    struct Written {
        var recordLog: UUID?
        var revision: Int64?
        var logPosition: RecordStateLog.Position?
    }

    /// Notes that the state was written (nothing when `nil`: nothing was).
    func written(_ log: Written?) {
        guard let log else { return }
        (state.recordLog, state.revision) = (log.recordLog, log.revision)
        stateLog?.position = log.logPosition
        touchedIDs = []
        touchedMembers = []
        touchedEveryRecord = false
    }

    /// Starts staging the snapshot of the log that the next write of the state will write, when it writes one:
    /// called before a save, whose time it then overlaps. Nothing when one is staged already.
    func prepareStateSnapshot() {
        guard let log = stateLog, preparedSnapshot == nil,
              case .snapshot(let existing) = RecordStateLog.nextWrite(position: log.position, state: state,
                                                                     everyRecord: touchedEveryRecord, touched: true)
        else { return }
        preparedSnapshot = PreparedStateSnapshot(for: log.url, id: existing ?? UUID(), revision: (state.revision ?? 0) + 1,
                                                 state: state)
    }

    /// The staged snapshot, given to whoever uses or removes it.
    func takePreparedSnapshot() -> PreparedStateSnapshot? {
        defer { preparedSnapshot = nil }
        return preparedSnapshot
    }

    /// Notes that the per-record state of `id` changed, for the next write (``touchedIDs``).
    func touch(_ id: UUID) {
        if !touchedEveryRecord { touchedIDs.insert(id) }
    }

    /// Merges one membership change into the state (``SyncState/mergeMember(_:_:_:)``), noting it for the next write.
    func mergeMember(_ id: UUID, _ key: String, _ m: MemberChange) -> Bool? {
        let present = state.mergeMember(id, key, m)
        if present != nil {
            touch(id)
            touchedMembers.insert(SyncState.member(id, key))
        }
        return present
    }

    /// Global IDs of records by hierarchy root and primary key, read a batch at a time.
    func globalIDs(root: String, keys: Set<Int64>, cache: inout [String: [Int64: UUID]]) throws -> [Int64: UUID] {
        let missing = keys.filter { cache[root]?[$0] == nil }
        if !missing.isEmpty {
            for r in try store.records(withKeys: Array(missing), root: root) { cache[root, default: [:]][r.primaryKey] = r.globalID }
        }
        return cache[root] ?? [:]
    }

    /// Every record of the synced entities, a page at a time.
    func forEachRecord(_ body: (Record) throws -> Void) throws {
        for name in shapes.concrete { try forEachRecord(of: name, body) }
    }

    /// Every record of one concrete entity, a page at a time.
    func forEachRecord(of name: String, _ body: (Record) throws -> Void) throws {
        var after: Int64? = nil
        while true {
            let page = try store.scan(entity: name, after: after, limit: 1_000)
            for r in page { try body(r) }
            guard let last = page.last, page.count == 1_000 else { break }
            after = last.primaryKey
        }
    }
}
