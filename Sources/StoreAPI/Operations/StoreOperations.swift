import Foundation
import Logging

/// Store operations on paths, with no coordinator needed: convert (copy, changing the type or not), replace,
/// destroy. ``StoreCoordinator`` adds the same operations for loaded stores.
///
/// Every operation that writes a store stages it beside the destination and moves it into place only when it is
/// complete (see ``AtomicFile``): a failure or a crash leaves the source untouched and the destination either as it
/// was or complete — never partial, never merged.
public struct StoreOperations: Sendable {
    /// Where backends are looked up.
    public let registry: BackendRegistry

    /// Where the operations log (see <doc:OperationLogging>): `nil` logs to swift-log's task-local `Logger.current`.
    public let logger: Logger?

    /// Creates the operations over `registry`, logging to `logger` (by default to the caller's `Logger.current`).
    public init(registry: BackendRegistry = .shared, logger: Logger? = nil) {
        self.registry = registry
        self.logger = logger
    }

    /// Checks that a new store can be placed at `url`: the folder that will hold it exists and is writable.
    ///
    /// Every operation that creates a store makes this check before it writes anything; a tool that builds a store
    /// its own way (as `storectl create` does) makes it first, so that a mistyped folder fails with a clear error
    /// naming the folder instead of a failure deep inside a backend.
    /// - Throws: ``StoreError/directoryUnusable(_:reason:)`` or ``StoreError/readOnly(_:reason:)``.
    public func checkDestinationFolder(of url: URL) throws {
        try AtomicFile.checkDirectory(of: url)
    }

    /// The backend of the store at `url`: the one named by `type`, checked by sniffing, or the sniffed one.
    public func backend(ofStoreAt url: URL, type: String? = nil) throws -> any StoreBackend {
        guard let type else { return try registry.detectBackend(at: url) }
        let backend = try registry.backend(for: type)
        switch backend.sniff(url) {
        case .store: return backend
        case .foreign(let what): throw StoreError.wrongStoreType(url, expected: type, found: what)
        case .none:
            if let other = try? registry.detectBackend(at: url) {
                throw StoreError.wrongStoreType(url, expected: type, found: "a \(other.typeIdentifier) store")
            }
            if url.isFileURL, FileManager.default.fileExists(atPath: url.path) {
                throw StoreError.wrongStoreType(url, expected: type, found: "something else")
            }
            throw StoreError.storeNotFound(url)
        }
    }

    /// Options for ``copyStore(from:sourceType:to:type:options:)``.
    public struct CopyOptions {
        /// Replace a store that exists at the destination (atomically). Without it, an existing destination is
        /// ``StoreError/storeExists(_:)``.
        public var replacingExisting: Bool
        /// Records per page for the streaming transfer.
        public var batchSize: Int
        /// Progress; throw to cancel.
        public var progress: ProgressHandler?
        /// Use the backend's own copy when source and destination types match (default). Turn off to force the
        /// record-by-record transfer.
        public var allowFastCopy: Bool
        /// Sync options to record in the destination's metadata; `nil` keeps the source's.
        public var syncOptions: SyncOptions?
        /// A change to the destination's metadata, applied before the destination is moved into place (backups
        /// stamp themselves this way).
        public var editMetadata: (@Sendable (inout StoreMetadata) -> Void)?
        /// Replace an existing destination even while someone has it open (see ``StoreBackend/isInUse(at:)``);
        /// without it, such a destination is ``StoreError/locked(_:reason:)``.
        public var force: Bool

        /// Creates options.
        public init(replacingExisting: Bool = false, batchSize: Int = 5_000, progress: ProgressHandler? = nil,
                    allowFastCopy: Bool = true, syncOptions: SyncOptions? = nil,
                    editMetadata: (@Sendable (inout StoreMetadata) -> Void)? = nil, force: Bool = false) {
            self.replacingExisting = replacingExisting
            self.batchSize = batchSize
            self.progress = progress
            self.allowFastCopy = allowFastCopy
            self.syncOptions = syncOptions
            self.editMetadata = editMetadata
            self.force = force
        }

        /// Applies ``syncOptions`` and ``editMetadata`` to the metadata a destination gets.
        func adjusted(_ metadata: StoreMetadata, type: String) -> StoreMetadata {
            var m = metadata
            m.storeType = type
            if let syncOptions { m.syncOptions = syncOptions }
            editMetadata?(&m)
            return m
        }

        /// Whether the destination's metadata differs from the source's (so a fast copy needs a metadata rewrite).
        var changesMetadata: Bool { syncOptions != nil || editMetadata != nil }
    }

    /// Creates at `destination` a store of type `destinationType` (the source's type when `nil`) that is the same
    /// logical store as the one at `source`: every record with its primary key and global ID, every relationship
    /// in order, the store UUID, the schema, custom metadata and history.
    ///
    /// The source is opened read-only and never written. The copy is staged beside the destination and moved into
    /// place when complete.
    ///
    /// - Returns: the destination's metadata.
    @discardableResult
    public func copyStore(from source: URL, sourceType: String? = nil, to destination: URL, type destinationType: String? = nil,
                          options: CopyOptions = CopyOptions()) throws -> StoreMetadata {
        return try loggedOperation("copy store", ["source": source.logValue, "destination": destination.logValue, "type": .string(destinationType ?? sourceType ?? "sniffed")], logger: logger) {
            let sourceBackend = try backend(ofStoreAt: source, type: sourceType)
            let destinationBackend = try registry.backend(for: destinationType ?? sourceBackend.typeIdentifier)
            if source.standardizedFileURL == destination.standardizedFileURL {
                throw StoreError.refused(destination, reason: "source and destination are the same path")
            }
            return try stageAndPlace(at: destination, backend: destinationBackend, replacing: options.replacingExisting,
                                     force: options.force) { staged in
                let metadata = try stage(from: source, backend: sourceBackend, to: staged, backend: destinationBackend,
                                         options: options)
                try StoreCompanionFiles.copy(from: source, toStaged: staged)
                return metadata
            }
        }
    }

    /// Copies an open store (a consistent view of what its coordinator sees) to `destination`.
    @discardableResult
    func copyOpenStore(_ source: any PersistentStore, sourceBackend: any StoreBackend, to destination: URL, type destinationType: String,
                       options: CopyOptions) throws -> StoreMetadata {
        let destinationBackend = try registry.backend(for: destinationType)
        if let url = source.url, url.standardizedFileURL == destination.standardizedFileURL {
            throw StoreError.refused(destination, reason: "source and destination are the same path")
        }
        return try stageAndPlace(at: destination, backend: destinationBackend, replacing: options.replacingExisting,
                                 force: options.force) { staged in
            let metadata = try stageOpenStore(source, sourceBackend: sourceBackend, to: staged,
                                              backend: destinationBackend, options: options)
            if let url = source.url { try StoreCompanionFiles.copy(from: url, toStaged: staged) }
            return metadata
        }
    }

    /// Writes the complete copy of an open store at `staged`.
    private func stageOpenStore(_ source: any PersistentStore, sourceBackend: any StoreBackend, to staged: URL,
                                backend destinationBackend: any StoreBackend, options: CopyOptions) throws -> StoreMetadata {
        if options.allowFastCopy, let url = source.url, sourceBackend.typeIdentifier == destinationBackend.typeIdentifier,
           sourceBackend.capabilities.contains(.onlineBackup) {
            try sourceBackend.copyStore(from: url, to: staged)
            return try Self.rewriteMetadataIfNeeded(at: staged, backend: destinationBackend, options: options)
        }
        // A store that can hand out a consistent snapshot is copied from that, so concurrent saves cannot
        // tear the copy.
        let source: any PersistentStore = (source as? MemoryStore)?.detachedCopy() ?? source
        let metadata = options.adjusted(source.metadata, type: destinationBackend.typeIdentifier)
        let transfer = StoreTransfer(batchSize: options.batchSize, progress: options.progress)
        if let atomicDestination = destinationBackend.asAtomicStoreBackend {
            try transfer.write(source, metadata: metadata, as: atomicDestination, to: staged)
            try AtomicFile.fsync(path: staged)
            return metadata
        }
        let to = try destinationBackend.open(at: staged, options: StoreOptions(), creating: metadata)
        do {
            try transfer.copy(from: source, to: to)
            try to.close()
        } catch {
            try? to.close()
            throw error
        }
        return metadata
    }

    /// Builds a store at a staging path with `build`, then moves it to `destination` (replacing what is there when
    /// allowed). On any failure the staged files are removed and the destination is as it was.
    func stageAndPlace(at destination: URL, backend destinationBackend: any StoreBackend, replacing: Bool, force: Bool = false,
                       _ build: (URL) throws -> StoreMetadata) throws -> StoreMetadata {
        let persistent = destinationBackend.keepsFiles
        // Before looking at what is there: a store an interrupted placement left aside is the store at this path.
        if persistent { try PlacementRecovery.restoreAsideStore(at: destination) }
        let existing = try existingStore(at: destination, replacing: replacing, force: force)
        if persistent {
            try AtomicFile.checkDirectory(of: destination)
            AtomicFile.removeStaleStaging(near: destination)
            AtomicFile.removeNestedStaging(near: destination)
        }
        let staged = try StorePlacement.stagingLocation(for: destination, backend: destinationBackend)
        do {
            let metadata = try build(staged)
            try StorePlacement.place(staged: staged, at: destination, backend: destinationBackend, replacing: existing)
            return metadata
        } catch {
            StorePlacement.discard(staged: staged, backend: destinationBackend)
            throw error
        }
    }

    /// Makes the store at `destination` an exact copy of the one at `source`, atomically: every old destination file
    /// is gone afterwards, the source is untouched. A missing or invalid source is an error and leaves the
    /// destination as it was. The destination keeps its type unless `destinationType` names another. A destination
    /// someone has open is refused (``StoreError/locked(_:reason:)``) unless `force`.
    @discardableResult
    public func replaceStore(at destination: URL, type destinationType: String? = nil, with source: URL, sourceType: String? = nil,
                             batchSize: Int = 5_000, progress: ProgressHandler? = nil, force: Bool = false) throws -> StoreMetadata {
        let sourceBackend = try backend(ofStoreAt: source, type: sourceType)
        let existingType = (try? registry.detectBackend(at: destination))?.typeIdentifier
        return try copyStore(from: source, sourceType: sourceBackend.typeIdentifier, to: destination,
                             type: destinationType ?? existingType ?? sourceBackend.typeIdentifier,
                             options: CopyOptions(replacingExisting: true, batchSize: batchSize, progress: progress, force: force))
    }

    /// Deletes every file of the store at `url` and nothing else. Refuses a path that is not a store (of `type`,
    /// when given), and deletes nothing when the path or any file the store owns is a symbolic link (deleting
    /// through it could remove files elsewhere; remove the link yourself, or destroy the store at its target).
    /// A store someone has open (``StoreBackend/isInUse(at:)``) is refused with ``StoreError/locked(_:reason:)``
    /// unless `force`. Once nothing is at `url`, staging leftovers for it (of a killed destroy or save) go too.
    public func destroyStore(at url: URL, type: String? = nil, force: Bool = false) throws {
        return try loggedOperation("destroy store", ["store": url.logValue], logger: logger) {
            if url.isFileURL, Self.isSymbolicLink(url) {
                throw StoreError.refused(url, reason: "is a symbolic link; destroy the store it points to instead")
            }
            // After this destroy, or when an earlier one was killed after the store left its path (a backend may move
            // its files aside under a staging name before deleting them) and this one finds no store.
            defer { if url.isFileURL { AtomicFile.removeStaleStagingIfVacant(near: url) } }
            let backend = try backend(ofStoreAt: url, type: type)
            if url.isFileURL { try Self.refuseSymbolicLinks(ofStoreAt: url, backend: backend) }
            if !force { try Self.refuseIfInUse(url, backend: backend, action: "destroy") }
            try backend.destroyStore(at: url, force: force)
            StoreCompanionFiles.remove(beside: url)
        }
    }

    static func rewriteMetadataIfNeeded(at staged: URL, backend: any StoreBackend, options: CopyOptions) throws -> StoreMetadata {
        let stored = try backend.readMetadata(at: staged)
        guard options.changesMetadata else { return stored }
        let adjusted = options.adjusted(stored, type: backend.typeIdentifier)
        try backend.writeMetadata(adjusted, at: staged)
        return adjusted
    }

    /// What exists at a destination: nothing (`nil`), a store that may be replaced, or an error.
    func existingStore(at destination: URL, replacing: Bool, force: Bool = false) throws -> (any StoreBackend)? {
        let occupied = destination.isFileURL && FileManager.default.fileExists(atPath: destination.path)
        let found = try? registry.detectBackend(at: destination)
        guard occupied || found != nil else { return nil }
        guard replacing else { throw StoreError.storeExists(destination) }
        guard let found else {
            throw StoreError.refused(destination, reason: "exists and is not a store; not replacing it")
        }
        if !force { try Self.refuseIfInUse(destination, backend: found, action: "replace") }
        return found
    }

    /// Writes the complete copy at `staged`.
    private func stage(from source: URL, backend sourceBackend: any StoreBackend, to staged: URL, backend destinationBackend: any StoreBackend,
                       options: CopyOptions) throws -> StoreMetadata {
        let transfer = StoreTransfer(batchSize: options.batchSize, progress: options.progress)
        if options.allowFastCopy, sourceBackend.typeIdentifier == destinationBackend.typeIdentifier,
           sourceBackend.capabilities.contains(.fastCopy) {
            do {
                try sourceBackend.copyStore(from: source, to: staged)
                return try Self.rewriteMetadataIfNeeded(at: staged, backend: destinationBackend, options: options)
            } catch StoreError.unsupported {
                // fall through to the streaming transfer
            }
        }
        let readOnly = StoreOptions(isReadOnly: true, createIfMissing: false)
        if let atomicSource = sourceBackend.asAtomicStoreBackend {
            let metadata = options.adjusted(try sourceBackend.readMetadata(at: source), type: destinationBackend.typeIdentifier)
            if let atomicDestination = destinationBackend.asAtomicStoreBackend {
                let from = try sourceBackend.open(at: source, options: readOnly, creating: nil)
                defer { try? from.close() }
                try transfer.write(from, metadata: metadata, as: atomicDestination, to: staged)
                try AtomicFile.fsync(path: staged)
                return metadata
            }
            try Self.fill(destinationBackend, at: staged, metadata: metadata) { to in
                try transfer.copy(streamingFrom: source, of: atomicSource, to: to)
            }
            return metadata
        }
        // The source is opened before anything is read from it, and its metadata taken from the open store: a
        // separate read of the metadata first would open the store's files and decode its schema (for a Core Data
        // store, its model) a second time.
        let from = try sourceBackend.open(at: source, options: readOnly, creating: nil)
        defer { try? from.close() }
        let metadata = options.adjusted(from.metadata, type: destinationBackend.typeIdentifier)
        if let atomicDestination = destinationBackend.asAtomicStoreBackend {
            try transfer.write(from, metadata: metadata, as: atomicDestination, to: staged)
            try AtomicFile.fsync(path: staged)
            return metadata
        }
        try Self.fill(destinationBackend, at: staged, metadata: metadata) { to in
            try transfer.copy(from: from, to: to)
        }
        return metadata
    }

    /// Creates the store at `staged` with `metadata`, runs `body` on it and closes it (also when `body` throws).
    private static func fill(
        _ backend: any StoreBackend, at staged: URL, metadata: StoreMetadata, _ body: (any PersistentStore) throws -> Void
    ) throws {
        let to = try backend.open(at: staged, options: StoreOptions(), creating: metadata)
        do {
            try body(to)
            try to.close()
        } catch {
            try? to.close()
            throw error
        }
    }
}
