import Foundation
import Logging
import StoreAPI
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Syncs one loaded store with the other replicas of its dataset through a ``SyncRemote``.
///
/// ```swift
/// var description = StoreDescription(url: URL(filePath: "app.sqlite"), type: "sqlite")
/// description.options.historyTracking = true
/// description.syncOptions = SyncOptions(remote: URL(filePath: "/Volumes/Shared/sync"), containerIdentifier: "library")
/// let store = try coordinator.addStore(description)
/// let engine = try SyncEngine(store: store, coordinator: coordinator)
/// let report = try await engine.sync()      // push local changes, pull and apply the others'
/// ```
///
/// A sync pushes the store's local changes since the last push (read from its history: the store's description
/// must turn on ``StoreOptions/historyTracking``), then pulls the change files of other peers and applies them in
/// one save whose history author is ``historyAuthor``, so they are never pushed back. The first sync pulls first,
/// then pushes the records the store already held that the remote does not have: existing data is pushed exactly
/// once, and a second device holding the same records (same global IDs) pushes nothing and duplicates nothing.
///
/// Saves never wait on sync: only ``sync()`` talks to the remote, each call within ``timeout`` and on a thread of its
/// own. A failed sync leaves the store as it was and reports why; the next one repeats what was not done. The state
/// (peer identity, cursor) is kept in the store's metadata, so store operations carry it, and for a file store its
/// per-record part (clocks, tombstones) in a log beside the store that each sync appends what it changed to; a copy
/// of the store elsewhere becomes a new peer on its first sync. See <doc:Sync> for what is guaranteed and what is
/// not.
public actor SyncEngine {
    /// The history author of the saves that apply pulled changes.
    public static let historyAuthor = "storesync"

    /// The store that syncs.
    public nonisolated let store: LoadedStore
    /// The coordinator the store is loaded in; pulled changes are applied through a context of it.
    public nonisolated let coordinator: StoreCoordinator
    /// Where changes are exchanged.
    public nonisolated let remote: any SyncRemote
    /// The store's sync options: from its description, or those stored with it.
    public nonisolated let options: SyncOptions
    /// Seconds a ``sync()`` waits for each answer of the remote before it gives up with
    /// ``SyncError/timedOut(_:seconds:)``, and for another sync of the same store (another process's, or another
    /// engine's) to finish before it gives up with ``SyncError/syncInProgress(store:pid:waited:)``.
    public nonisolated let timeout: Double
    private let logger: Logger
    /// The metadata text of the state as last read or written: a sync compares the text instead of decoding (and
    /// reading the log of) a state that grows with the synced records.
    private var cachedText: String?
    /// That state without its per-record maps: what a sync compares its state with to find whether it changed.
    private var cachedHead: SyncState?
    /// That whole state, between syncs only. A sync takes it and gives it back when it succeeds: were it kept here
    /// meanwhile, the sync's first change of a record would copy the per-record maps that both then share.
    private var cachedState: SyncState?
    /// Where the log beside a file store ends, once read or written here; `nil`: the next write starts a new log.
    private var logPosition: RecordStateLog.Position?
    /// Where the store's records are, by global ID, kept between syncs.
    private let index = RecordIndex()

    /// An engine for `store`, whose description (or metadata) has sync options and whose description tracks
    /// history. `remote` defaults to the one the options' URL names (``SyncRemotes/remote(for:)``).
    public init(store: LoadedStore, coordinator: StoreCoordinator, remote: (any SyncRemote)? = nil, timeout: Double = 30,
                logger: Logger = Logger(label: "org.storekitswift.sync")) throws {
        let name = Self.name(of: store)
        guard let options = store.storeDescription.syncOptions ?? store.store.metadata.syncOptions else {
            throw SyncError.notSyncable(store: name, reason: "neither its description nor the store has sync options")
        }
        guard store.storeDescription.options.historyTracking else {
            throw SyncError.notSyncable(store: name, reason: "its description does not turn on historyTracking, so its "
                + "local changes cannot be found")
        }
        guard !store.storeDescription.options.isReadOnly else {
            throw SyncError.notSyncable(store: name, reason: "it is loaded read-only")
        }
        self.store = store
        self.coordinator = coordinator
        self.options = options
        self.remote = try remote ?? SyncRemotes.remote(for: options)
        self.timeout = timeout
        self.logger = logger
    }

    /// Pushes local changes, then pulls and applies other peers' changes in one save. Throws, with the store
    /// unchanged by the part that failed, when the remote fails, does not answer in time, or now holds another
    /// dataset than the one this store synced with.
    ///
    /// The syncs of one store take turns, across processes too: a sync first waits (up to ``timeout``) for any
    /// other sync of the store to finish, so that none sets back the cursor or record clocks another wrote.
    public func sync() async throws -> SyncReport {
        let lock = try await SyncLock.acquire(for: store, timeout: timeout)
        defer { lock.release() }
        return try await syncHoldingLock()
    }

    private func syncHoldingLock() async throws -> SyncReport {
        let calls = RemoteTimeout(seconds: timeout, remoteName: remote.displayName)
        let remote = self.remote
        let identity = try await calls.run { try await remote.identity() }
        let metadata = store.store.metadata
        let here = Self.location(of: store)
        var report = SyncReport(peer: UUID(), remote: remote.displayName)
        if let idle = try await idleReport(metadata: metadata, identity: identity, here: here, calls: calls) { return idle }
        // A step that changed nothing does not rewrite the state.
        var forceWrite = metadata.syncOptions != options
        func persist(_ state: SyncState, _ touchedIDs: Set<UUID>, _ touchedMembers: Set<String>,
                     everyRecord: Bool, prepared: PreparedStateSnapshot?) throws -> SyncSession.Written? {
            guard forceWrite || hasChanges(state, touchedIDs, touchedMembers, everyRecord: everyRecord) else {
                prepared?.discard()
                return nil
            }
            defer { forceWrite = false }
            return try write(state, touchedIDs, touchedMembers, everyRecord: everyRecord, prepared: prepared)
        }
        let session: SyncSession
        do {
            // Scoped: once the session holds the state, nothing else does (see cachedState).
            var state: SyncState
            if let stored = try readState(metadata) {
                if let known = stored.remoteIdentity, known != identity {
                    throw SyncError.remoteIdentityChanged(store: Self.name(of: store), expected: known, found: identity)
                }
                state = stored
            } else {
                state = SyncState(peer: UUID(), location: here, storeUUID: metadata.storeUUID)
                state.remoteIdentity = identity
                report.attached = true
            }
            report.peer = state.peer
            cachedState = nil
            session = SyncSession(loaded: store, coordinator: coordinator, remote: remote, calls: calls,
                                  logger: logger, state: state, report: report, index: index)
        }
        // A snapshot of the state's log staged during the sync and not used by the time it ends is removed.
        defer { session.takePreparedSnapshot()?.discard() }
        session.stateLog = logURL.map { (url: $0, position: logPosition) }
        let old = (location: session.state.location, storeUUID: session.state.storeUUID)
        if old.location != here || old.storeUUID != metadata.storeUUID {
            if old.storeUUID != metadata.storeUUID || isCopy(of: old.location, storeUUID: metadata.storeUUID) {
                logger.notice("sync: the store is a copy of another replica; it becomes a new peer",
                              metadata: ["store": "\(Self.name(of: store))"])
                session.becomeNewPeer()
            }
            session.state.location = here
            session.state.storeUUID = metadata.storeUUID
        }
        if !session.state.baselinePushed {
            try session.noteAttachStart()
            try await session.pull()
            session.written(try persist(session.state, session.touchedIDs, session.touchedMembers,
                                        everyRecord: session.touchedEveryRecord, prepared: session.takePreparedSnapshot()))
            session.logStep("state write")
            try await session.pushBaseline()
            try await session.pushHistory()
            session.logStep("push")
            session.written(try persist(session.state, session.touchedIDs, session.touchedMembers,
                                        everyRecord: session.touchedEveryRecord, prepared: session.takePreparedSnapshot()))
            session.logStep("state write")
        } else {
            try await session.pushHistory()
            session.logStep("push")
            session.written(try persist(session.state, session.touchedIDs, session.touchedMembers,
                                        everyRecord: session.touchedEveryRecord, prepared: session.takePreparedSnapshot()))
            session.logStep("state write")
            try await session.pull()
        }
        if !session.merges.isEmpty {
            session.written(try persist(session.state, session.touchedIDs, session.touchedMembers,
                                        everyRecord: session.touchedEveryRecord, prepared: session.takePreparedSnapshot()))
            try await session.pushMerges()
        }
        if session.needsCleanup { try session.apply([]) }
        // Acknowledged once the pull it covers is saved, so the remote never purges what this store has not kept.
        var acknowledge: SyncCursor?
        if remote is any PurgeableSyncRemote, let cursor = session.state.cursor, cursor != session.state.acknowledged {
            acknowledge = cursor
        }
        if hasChanges(session.state, session.touchedIDs, session.touchedMembers, everyRecord: session.touchedEveryRecord)
            || session.report.pulledFiles > 0 || session.report.pushedFiles > 0 {
            session.state.lastSync = Date()
        }
        session.written(try persist(session.state, session.touchedIDs, session.touchedMembers,
                                    everyRecord: session.touchedEveryRecord, prepared: session.takePreparedSnapshot()))
        session.logStep("state write")
        if let cursor = acknowledge, let purgeable = remote as? any PurgeableSyncRemote {
            // What was pushed and pulled stands either way: a failed acknowledgement only holds purges back, and the
            // next sync sends it again.
            let peer = session.state.peer
            do {
                try await calls.run { try await purgeable.acknowledge(cursor, peer: peer) }
                session.state.acknowledged = cursor
                session.written(try persist(session.state, session.touchedIDs, session.touchedMembers,
                                            everyRecord: session.touchedEveryRecord, prepared: session.takePreparedSnapshot()))
                session.logStep("acknowledge and state write")
            } catch {
                logger.warning("sync: could not acknowledge the cursor; purges wait for the next sync",
                               metadata: ["remote": "\(remote.displayName)", "error": "\(error)"])
            }
        }
        session.report.peer = session.state.peer
        // What the last write wrote (a write that found nothing changed wrote nothing).
        cachedState = session.state
        let done = session.report
        // Every sync that moved something is logged at info; a routine one with nothing to do only at debug.
        let level: Logger.Level = done.pushedFiles + done.pulledFiles + done.mergedDuplicates + done.deletedRecords > 0
            || done.attached || done.becameNewPeer || done.rebaselined ? .info : .debug
        logger.log(level: level, "sync finished", metadata: [
            "store": "\(Self.name(of: store))", "remote": "\(remote.displayName)", "peer": "\(done.peer)",
            "pushedRecords": "\(done.pushedRecords)", "pulledFiles": "\(done.pulledFiles)",
            "inserted": "\(done.insertedRecords)", "updated": "\(done.updatedRecords)", "deleted": "\(done.deletedRecords)",
            "merged": "\(done.mergedDuplicates)",
        ])
        return done
    }

    /// The report of a sync with nothing to do, found from the small part of the state alone (no local change since
    /// the last push, no file after the cursor, nothing waiting, nothing to acknowledge); `nil` when there is work,
    /// which then reads the whole state. The whole state grows with the synced records, so an idle sync never
    /// decodes it.
    private func idleReport(metadata: StoreMetadata, identity: String, here: String,
                            calls: RemoteTimeout) async throws -> SyncReport? {
        guard metadata.syncOptions == options, case .string(let text)? = metadata.custom[SyncState.key],
              let head = (cachedText == text ? cachedHead.map(SyncState.Head.init) : nil) ?? SyncState.Head.read(text),
              head.remoteIdentity == identity, head.location == here,
              head.storeUUID == metadata.storeUUID, head.baselinePushed, head.dangling.isEmpty,
              !(remote is any PurgeableSyncRemote) || head.acknowledged == head.cursor,
              try store.store.history(after: head.pushedToken).isEmpty
        else { return nil }
        let remote = self.remote
        let cursor = head.cursor
        let listing = try await calls.run { try await remote.list(after: cursor) }
        guard listing.names.isEmpty, listing.cursor == head.cursor else { return nil }
        logger.debug("sync: nothing to do", metadata: ["store": "\(Self.name(of: store))", "remote": "\(remote.displayName)"])
        return SyncReport(peer: head.peer, remote: remote.displayName)
    }

    /// Syncs, then purges the remote's history that every peer has applied: writes a baseline of this store's synced
    /// state (every record's values with the stamps they won with, and the tombstones) for peers that attach later
    /// or fell behind, then deletes the files at or below the lowest acknowledged cursor. Returns how many files
    /// were deleted. The remote must be a ``PurgeableSyncRemote``.
    public func purgeHistory() async throws -> Int {
        guard let purgeable = remote as? any PurgeableSyncRemote else {
            throw SyncError.unsupportedRemote(remote.displayName, reason: "this remote keeps no acknowledgements, so its "
                + "history cannot be purged safely")
        }
        let lock = try await SyncLock.acquire(for: store, timeout: timeout)
        defer { lock.release() }
        _ = try await syncHoldingLock()
        guard let state = try readState(store.store.metadata),
              let cursor = state.cursor
        else { return 0 }
        let calls = RemoteTimeout(seconds: timeout, remoteName: remote.displayName)
        let session = SyncSession(loaded: store, coordinator: coordinator, remote: remote, calls: calls, logger: logger,
                                  state: state, report: SyncReport(peer: state.peer, remote: remote.displayName), index: index)
        try await session.pushSnapshot()
        session.written(try write(session.state, session.touchedIDs, session.touchedMembers,
                                  everyRecord: session.touchedEveryRecord, prepared: nil))
        let purged = try await calls.run { try await purgeable.purge(upTo: cursor) }
        logger.info("sync: purged history", metadata: ["store": "\(Self.name(of: store))", "remote": "\(remote.displayName)",
                                                      "files": "\(purged)", "baselineRecords": "\(session.report.pushedRecords)"])
        return purged
    }

    /// Where the store stands, from its metadata; does not contact the remote.
    public nonisolated func status() throws -> SyncStatus {
        try Self.status(of: store.store, options: options)
    }

    /// Where a store stands with sync, from its metadata and history; does not contact the remote.
    public static func status(of store: any PersistentStore, options: SyncOptions?) throws -> SyncStatus {
        let state = try SyncState.read(from: store.metadata, store: store.url?.path ?? "in-memory store")
        let options = options ?? store.metadata.syncOptions
        let pending = try store.history(after: state?.pushedToken).filter { $0.author != historyAuthor }.count
        return SyncStatus(remote: options?.remote, container: options?.containerIdentifier, isAttached: state != nil,
                          peer: state?.peer, remoteIdentity: state?.remoteIdentity, pendingTransactions: pending,
                          pushedFiles: state?.sequence ?? 0, lastSync: state?.lastSync)
    }

    /// Forgets the store's sync state and stored sync options, in one save. Its records stay; a later sync
    /// attaches it again as a new peer, to this remote or another.
    ///
    /// It takes the store's sync lock, as a sync does, waiting up to `timeout` seconds for a running sync to finish
    /// (``SyncError/syncInProgress(store:pid:waited:)`` after that): a sync that ended after the detach would write
    /// its state back and leave the store attached.
    public static func detach(_ store: any PersistentStore, timeout: Double = 60) throws {
        let lock = try SyncLock.acquireBlocking(for: store, timeout: timeout)
        defer { lock.release() }
        var metadata = store.metadata
        metadata.custom[SyncState.key] = nil
        metadata.syncOptions = nil
        try store.save(StoreChanges(metadata: metadata))
        // The log is read only when the metadata names it; removing it afterwards is tidiness, not correctness, and
        // so is removing the lock file while it is held (SyncLock.removeFile).
        if let url = store.url, url.isFileURL {
            try? FileManager.default.removeItem(at: RecordStateLog.url(beside: url))
            SyncLock.removeFile(beside: url)
        }
    }

    /// The whole state as stored (for tests).
    func currentState() throws -> SyncState? { try readState(store.store.metadata) }

    /// Where the log of this store's per-record state lives: beside a file store; `nil` for other stores, whose
    /// metadata holds the whole state.
    private var logURL: URL? {
        guard let url = store.url, url.isFileURL, FileManager.default.fileExists(atPath: url.path) else { return nil }
        return RecordStateLog.url(beside: url)
    }

    /// Whether the session changed the state since it was last written.
    /// `everyRecord`: every record's state is to be written (``SyncSession/touchedEveryRecord``).
    private func hasChanges(_ state: SyncState, _ touchedIDs: Set<UUID>, _ touchedMembers: Set<String>,
                            everyRecord: Bool) -> Bool {
        // Every change of the per-record maps is in the touched sets or the flag; the rest is compared.
        if everyRecord || !touchedIDs.isEmpty || !touchedMembers.isEmpty { return true }
        guard let cachedHead else { return true }
        return Self.head(of: state) != cachedHead
    }

    /// Writes the session's state: for a file store, first a frame of what changed to the log beside it, then the
    /// rest of the state, naming the frame's revision, to the store's metadata (so that a crash between the two
    /// leaves a frame the metadata does not name, which the next read leaves out); for other stores, the whole
    /// state to the metadata.
    /// Returns the log and revision the metadata now names.
    /// `everyRecord`: the touched sets may not list every change, and a snapshot is written
    /// (``SyncSession/touchedEveryRecord``).
    /// `prepared`: a snapshot staged for this write (``PreparedStateSnapshot``), put in the log's place when it
    /// holds what the write would write, and removed otherwise.
    private func write(_ session: SyncState, _ touchedIDs: Set<UUID>, _ touchedMembers: Set<String>,
                       everyRecord: Bool, prepared: PreparedStateSnapshot?) throws -> SyncSession.Written {
        var state = session
        if let url = logURL {
            let revision = (state.revision ?? 0) + 1
            switch RecordStateLog.nextWrite(position: logPosition, state: state, everyRecord: everyRecord,
                                            touched: !touchedIDs.isEmpty || !touchedMembers.isEmpty) {
            case .snapshot(let existing):
                if let prepared, prepared.url == url, prepared.matches(state, id: existing, revision: revision) {
                    logPosition = try prepared.commit()
                } else {
                    prepared?.discard()
                    logPosition = try RecordStateLog.writeSnapshot(at: url, id: existing ?? UUID(), revision: revision, state: state)
                }
                state.recordLog = logPosition?.id
                state.revision = revision
            case .append(let position):
                prepared?.discard()
                logPosition = try RecordStateLog.append(at: url, position: position, revision: revision,
                                                        ids: touchedIDs, members: touchedMembers, state: state)
                state.revision = revision
            case .nothing:
                prepared?.discard()
            }
        } else {
            prepared?.discard()
            state.recordLog = nil
            state.revision = nil
        }
        try save(state)
        return SyncSession.Written(recordLog: state.recordLog, revision: state.revision, logPosition: logPosition)
    }

    private func save(_ state: SyncState) throws {
        var metadata = store.store.metadata
        let value = try state.encoded()
        metadata.custom[SyncState.key] = value
        metadata.syncOptions = options
        try store.store.save(StoreChanges(metadata: metadata))
        if case .string(let text) = value {
            cachedText = text
            cachedHead = Self.head(of: state)
        }
    }

    /// The whole state: decoded from the metadata, with the per-record maps from the log it names, unless the
    /// metadata is what this engine last read or wrote. A log that cannot give the revision the metadata names
    /// (the store was moved or copied without it, or it was lost) is looked for where the state was made; when it
    /// is not there either, the state forgets what it knew of records and the remote (``SyncState/forgetRecords()``)
    /// and the next sync reads the remote from the start, pushing only what it does not have.
    private func readState(_ metadata: StoreMetadata) throws -> SyncState? {
        guard case .string(let text) = metadata.custom[SyncState.key] else {
            return try SyncState.read(from: metadata, store: Self.name(of: store))
        }
        if cachedText == text, let cachedState { return cachedState }
        guard var state = try SyncState.read(from: metadata, store: Self.name(of: store)) else { return nil }
        logPosition = nil
        if let id = state.recordLog {
            let revision = state.revision ?? 0
            if let url = logURL, let position = RecordStateLog.read(at: url, id: id, revision: revision, into: &state) {
                logPosition = position
            } else if let old = Self.logURL(whereStateWasMade: state.location), old != logURL,
                      RecordStateLog.read(at: old, id: id, revision: revision, into: &state) != nil {
                // Read where the state was made (a moved, converted or copied store); written here from now on.
            } else {
                logger.notice("sync: the store's per-record sync state is missing; reading the remote from its start",
                              metadata: ["store": "\(Self.name(of: store))"])
                state.forgetRecords()
            }
        }
        cachedText = text
        cachedHead = Self.head(of: state)
        cachedState = state
        return state
    }

    /// The state without its per-record maps.
    private static func head(of state: SyncState) -> SyncState {
        var head = state
        head.clearRecords()
        return head
    }

    /// The log beside the store a location (`host|path`) names, on this host.
    private static func logURL(whereStateWasMade location: String) -> URL? {
        guard let bar = location.firstIndex(of: "|"), String(location[..<bar]) == hostName else { return nil }
        let path = String(location[location.index(after: bar)...])
        guard path.hasPrefix("/") else { return nil }
        return RecordStateLog.url(beside: URL(fileURLWithPath: path))
    }

    /// Whether the replica the state was made for is still where it was: a store with the same UUID at the old path
    /// on this machine or at the old server URL, or any other machine (a backup restored elsewhere).
    private func isCopy(of location: String, storeUUID: UUID) -> Bool {
        guard let bar = location.firstIndex(of: "|") else { return true }
        let rest = String(location[location.index(after: bar)...])
        let old: URL
        if location[..<bar] == Self.serverPrefix {
            // A store on a server is the same store from every machine; it moved when its URL changed.
            guard let url = URL(string: rest), url.scheme != nil else { return true }
            old = url
        } else {
            guard String(location[..<bar]) == Self.hostName else { return true }
            guard rest.hasPrefix("/") else { return true }
            old = URL(fileURLWithPath: rest)
            guard FileManager.default.fileExists(atPath: old.path) else { return false }
        }
        guard let backend = try? coordinator.registry.detectBackend(at: old),
              let metadata = try? backend.readMetadata(at: old)
        else { return false }
        return metadata.storeUUID == storeUUID
    }

    /// Where a store is: `host|path` for a file, `server|URL` (without password) for a store on a server, which is
    /// the same store whichever machine syncs it.
    static func location(of store: LoadedStore) -> String { location(url: store.url, identifier: store.identifier) }

    static func location(url: URL?, identifier: UUID) -> String {
        guard let url else { return "\(hostName)|memory:\(identifier.uuidString)" }
        guard url.isFileURL else { return "\(serverPrefix)|\(SyncRemotes.displayName(of: url))" }
        return "\(hostName)|\(url.standardizedFileURL.path)"
    }

    private static let serverPrefix = "server"

    static func name(of store: LoadedStore) -> String { name(url: store.url, identifier: store.identifier) }

    static func name(url: URL?, identifier: UUID) -> String {
        guard let url else { return "in-memory store \(identifier)" }
        return url.isFileURL ? url.path : SyncRemotes.displayName(of: url)
    }

    static let hostName: String = {
        var buffer = [CChar](repeating: 0, count: 256)
        guard gethostname(&buffer, buffer.count - 1) == 0 else { return "localhost" }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }()
}
