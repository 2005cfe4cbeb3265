import Foundation

/// The store operations, on stores a coordinator has loaded. Each follows the contract of the mission's table:
/// sources are never written, destinations are staged and moved into place whole, identities, metadata, history
/// and sync options are preserved, and no operation starts sync or contacts a remote.
extension StoreCoordinator {
    private var operations: StoreOperations { StoreOperations(registry: registry) }

    /// Moves a loaded store to a new location, changing its type if asked (sqlite → lmdb → xml → …).
    ///
    /// The source's files are left untouched; the destination is created — refused if a store exists there, unless
    /// `replacingExisting` (then the old destination is replaced atomically, never merged). Primary keys, object
    /// IDs, global IDs, the store UUID, custom metadata, history and sync options all carry over. The source is
    /// removed from the coordinator (its objects become invalid) and the destination is added in its place.
    @discardableResult
    public func migrateStore(_ store: LoadedStore, to url: URL, type: String? = nil, replacingExisting: Bool = false,
                             batchSize: Int = 5_000, progress: ProgressHandler? = nil) throws -> LoadedStore {
        return try loggedOperation("migrate store", ["source": store.url?.logValue ?? "in memory", "destination": url.logValue, "type": .string(type ?? store.type)], logger: logger) {
            try checkLoaded(store)
            let type = type ?? store.type
            try operations.copyOpenStore(store.store, sourceBackend: store.backend, to: url, type: type,
                                         options: .init(replacingExisting: replacingExisting, batchSize: batchSize, progress: progress))
            var description = store.storeDescription
            description.url = url
            description.type = type
            description.options.createIfMissing = false
            swap(store, for: nil, reason: "the store was migrated to \(url.path)")
            return try addStore(description)
        }
    }

    /// Makes the store at `destination` an exact copy of the store at `source`, atomically.
    ///
    /// The source is never modified (a missing or invalid source is an error and changes nothing). If the
    /// destination is loaded in this coordinator, it is closed before the swap and reloaded after: objects fetched
    /// from it before fail with ``StoreError/objectInvalidated(_:reason:)``. A destination another process has open
    /// is refused (``StoreError/locked(_:reason:)``) unless `force`.
    @discardableResult
    public func replaceStore(at destination: URL, type: String? = nil, withStoreAt source: URL, sourceType: String? = nil,
                             force: Bool = false) throws -> LoadedStore? {
        return try loggedOperation("replace store", ["destination": destination.logValue, "source": source.logValue], logger: logger) {
            let loaded = store(at: destination)
            let sourceBackend = try operations.backend(ofStoreAt: source, type: sourceType)
            let destinationType = type ?? loaded?.type ?? (try? registry.detectBackend(at: destination))?.typeIdentifier
                ?? sourceBackend.typeIdentifier
            // Stage first, while the destination is still loaded; swap only once the copy is complete.
            let destinationBackend = try registry.backend(for: destinationType)
            let staged = try StorePlacement.stagingLocation(for: destination, backend: destinationBackend)
            do {
                if destinationBackend.keepsFiles { try AtomicFile.checkDirectory(of: destination) }
                _ = try operations.stageCopy(from: source, backend: sourceBackend, to: staged, backend: destinationBackend)
            } catch {
                StorePlacement.discard(staged: staged, backend: destinationBackend)
                throw error
            }
            if let loaded { swap(loaded, for: nil, reason: "the store was replaced") }
            do {
                let existing = try operations.existingStore(at: destination, replacing: true, force: force)
                try StorePlacement.place(staged: staged, at: destination, backend: destinationBackend, replacing: existing)
            } catch {
                StorePlacement.discard(staged: staged, backend: destinationBackend)
                if let loaded { _ = try? addStore(loaded.storeDescription) }
                throw error
            }
            guard let loaded else { return nil }
            var description = loaded.storeDescription
            description.type = destinationType
            return try addStore(description)
        }
    }

    /// Deletes every file of the store at `url` (removing it from the coordinator first if it is loaded) and
    /// nothing else. A path that is not a store of `type`, or that another process has open (unless `force`), is
    /// refused; see ``StoreOperations/destroyStore(at:type:force:)``.
    public func destroyStore(at url: URL, type: String? = nil, force: Bool = false) throws {
        return try loggedOperation("destroy store", ["store": url.logValue], logger: logger) {
            let backend = try operations.backend(ofStoreAt: url, type: type)
            let loaded = store(at: url)
            if let loaded { swap(loaded, for: nil, reason: "the store was destroyed") }
            do {
                try operations.destroyStore(at: url, type: backend.typeIdentifier, force: force)
            } catch {
                // Refused (in use elsewhere, a symbolic link): the store is still there, so it stays loaded.
                if let loaded, backend.sniff(url) == .store { _ = try? addStore(loaded.storeDescription) }
                throw error
            }
        }
    }

    /// Moves the store at `old` to `new` with every sidecar, idempotently (see
    /// ``StoreOperations/relocateStore(from:to:type:)``). A store loaded from `old` is reloaded from `new`.
    @discardableResult
    public func relocateStore(from old: URL, to new: URL, type: String? = nil) throws -> StoreOperations.RelocationOutcome {
        return try loggedOperation("relocate store", ["from": old.logValue, "to": new.logValue], logger: logger, counts: { ["outcome": "\($0)"] }) {
            let loaded = store(at: old)
            if let loaded { swap(loaded, for: nil, reason: "the store was relocated to \(new.path)") }
            let outcome: StoreOperations.RelocationOutcome
            do {
                outcome = try operations.relocateStore(from: old, to: new, type: type)
            } catch {
                if let loaded { _ = try? addStore(loaded.storeDescription) }
                throw error
            }
            if let loaded {
                var description = loaded.storeDescription
                description.url = new
                try addStore(description)
            }
            return outcome
        }
    }

    private func checkLoaded(_ store: LoadedStore) throws {
        guard stores.contains(where: { $0 === store }) else {
            throw StoreError.refused(store.url ?? URL(fileURLWithPath: "/"), reason: "store is not loaded in this coordinator")
        }
    }
}

extension StoreOperations {
    /// Writes a complete copy of the store at `source` at the staging path `staged` (no placement at the final path).
    func stageCopy(from source: URL, backend sourceBackend: any StoreBackend, to staged: URL,
                   backend destinationBackend: any StoreBackend) throws -> StoreMetadata {
        try copyStore(from: source, sourceType: sourceBackend.typeIdentifier, to: staged, type: destinationBackend.typeIdentifier)
    }
}
