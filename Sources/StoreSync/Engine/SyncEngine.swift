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
/// Saves never wait on sync: only ``sync()`` talks to the remote, each call within ``timeout``. A failed sync
/// leaves the store as it was and reports why; the next one repeats what was not done. The state (peer identity,
/// cursor, clocks) is kept in the store's metadata, so store operations carry it; a copy of the store elsewhere
/// becomes a new peer on its first sync. See <doc:Sync> for what is guaranteed and what is not.
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
    /// ``SyncError/timedOut(_:seconds:)``.
    public nonisolated let timeout: Double
    private let logger: Logger

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
    public func sync() async throws -> SyncReport {
        let calls = RemoteTimeout(seconds: timeout, remoteName: remote.displayName)
        let remote = self.remote
        let identity = try await calls.run { try await remote.identity() }
        let metadata = store.store.metadata
        let here = Self.location(of: store)
        var report = SyncReport(peer: UUID(), remote: remote.displayName)
        var state: SyncState
        let stored = try SyncState.read(from: metadata, store: Self.name(of: store))
        // The state grows with the synced records: a step that changed nothing does not rewrite it.
        var saved = metadata.syncOptions == options ? stored : nil
        func persist(_ state: SyncState) throws {
            guard state != saved else { return }
            try save(state)
            saved = state
        }
        if let stored {
            state = stored
            if let known = state.remoteIdentity, known != identity {
                throw SyncError.remoteIdentityChanged(store: Self.name(of: store), expected: known, found: identity)
            }
        } else {
            state = SyncState(peer: UUID(), location: here, storeUUID: metadata.storeUUID)
            state.remoteIdentity = identity
            report.attached = true
        }
        report.peer = state.peer
        let session = SyncSession(loaded: store, coordinator: coordinator, remote: remote, calls: calls,
                                  logger: logger, state: state, report: report)
        if state.location != here || state.storeUUID != metadata.storeUUID {
            if state.storeUUID != metadata.storeUUID || isCopy(of: state.location, storeUUID: metadata.storeUUID) {
                logger.notice("sync: the store is a copy of another replica; it becomes a new peer",
                              metadata: ["store": "\(Self.name(of: store))"])
                session.becomeNewPeer()
            }
            session.state.location = here
            session.state.storeUUID = metadata.storeUUID
        }
        if !session.state.baselinePushed {
            try await session.pull()
            try persist(session.state)
            try await session.pushBaseline()
            try await session.pushHistory()
            try persist(session.state)
        } else {
            try await session.pushHistory()
            try persist(session.state)
            try await session.pull()
        }
        if !session.merges.isEmpty {
            try persist(session.state)
            try await session.pushMerges()
        }
        if session.needsCleanup { try session.apply([]) }
        if session.state != saved || session.report.pulledFiles > 0 || session.report.pushedFiles > 0 {
            session.state.lastSync = Date()
        }
        try persist(session.state)
        session.report.peer = session.state.peer
        let done = session.report
        logger.info("sync finished", metadata: [
            "store": "\(Self.name(of: store))", "remote": "\(remote.displayName)", "peer": "\(done.peer)",
            "pushedRecords": "\(done.pushedRecords)", "pulledFiles": "\(done.pulledFiles)",
            "inserted": "\(done.insertedRecords)", "updated": "\(done.updatedRecords)", "deleted": "\(done.deletedRecords)",
            "merged": "\(done.mergedDuplicates)",
        ])
        return done
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
    public static func detach(_ store: any PersistentStore) throws {
        var metadata = store.metadata
        metadata.custom[SyncState.key] = nil
        metadata.syncOptions = nil
        try store.save(StoreChanges(metadata: metadata))
    }

    private func save(_ state: SyncState) throws {
        var metadata = store.store.metadata
        metadata.custom[SyncState.key] = try state.encoded()
        metadata.syncOptions = options
        try store.store.save(StoreChanges(metadata: metadata))
    }

    /// Whether the replica the state was made for is still where it was: a store with the same UUID at the old path
    /// on this machine, or any other machine (a backup restored elsewhere).
    private func isCopy(of location: String, storeUUID: UUID) -> Bool {
        guard let bar = location.firstIndex(of: "|") else { return true }
        guard String(location[..<bar]) == Self.hostName else { return true }
        let path = String(location[location.index(after: bar)...])
        guard path.hasPrefix("/") else { return true }
        let old = URL(fileURLWithPath: path)
        guard FileManager.default.fileExists(atPath: old.path) else { return false }
        guard let backend = try? coordinator.registry.detectBackend(at: old),
              let metadata = try? backend.readMetadata(at: old)
        else { return false }
        return metadata.storeUUID == storeUUID
    }

    static func location(of store: LoadedStore) -> String {
        guard let url = store.url, url.isFileURL else { return "\(hostName)|memory:\(store.identifier.uuidString)" }
        return "\(hostName)|\(url.standardizedFileURL.path)"
    }

    static func name(of store: LoadedStore) -> String { store.url?.path ?? "in-memory store \(store.identifier)" }

    static let hostName: String = {
        var buffer = [CChar](repeating: 0, count: 256)
        guard gethostname(&buffer, buffer.count - 1) == 0 else { return "localhost" }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }()
}
