import Foundation
import Logging

extension StoreOperations {
    /// Options for ``upgradeStore(at:type:to:options:)``.
    public struct UpgradeOptions {
        /// Records per page for the streaming transfer.
        public var batchSize: Int
        /// Progress; throw to cancel (the store is then left as it was).
        public var progress: ProgressHandler?
        /// Upgrade even while someone has the store open (see ``StoreBackend/isInUse(at:)``); without it, such a
        /// store is ``StoreError/locked(_:reason:)``.
        public var force: Bool
        /// A custom step run on every record after the inferred mapping (see ``RecordMigration``); with one, type
        /// changes the plan cannot convert are left to it instead of refused.
        public var customStep: RecordMigrationStep?

        /// Creates options.
        public init(batchSize: Int = 5_000, progress: ProgressHandler? = nil, force: Bool = false,
                    customStep: RecordMigrationStep? = nil) {
            self.batchSize = batchSize
            self.progress = progress
            self.force = force
            self.customStep = customStep
        }
    }

    /// How the store at `url` would be upgraded to `schema`, without changing anything. Reads only the store's
    /// metadata; the data checks (required values, duplicates) run when the upgrade does.
    ///
    /// - Throws: ``StoreError/migrationRefused(_:problems:)`` naming the store and every change that cannot be
    ///   inferred, or the errors of reading its metadata.
    public func migrationPlan(forStoreAt url: URL, type: String? = nil, to schema: Schema) throws -> SchemaMigrationPlan {
        let backend = try backend(ofStoreAt: url, type: type)
        return try Self.plan(from: backend.readMetadata(at: url), to: schema, url: url)
    }

    /// Upgrades the store at `url` to `schema`: every record the new schema keeps, with its primary key and global
    /// ID, the store UUID, custom metadata, sync options and history, mapped by the inferred
    /// ``SchemaMigrationPlan``.
    ///
    /// A backend that can add what the plan adds where the store is (``InPlaceUpgradingBackend``, as SQLite does with
    /// `ALTER TABLE`) upgrades it in one transaction, without rewriting a record. Otherwise the store is read page by
    /// page through the plan (an atomic store's file is streamed, once per entity) into a
    /// new store of the same type, staged beside it, which then replaces it atomically (as ``replaceStore(at:type:with:sourceType:batchSize:progress:force:)`` does).
    /// Before anything is written, the plan must map every change and the data must fit the new schema; otherwise
    /// ``StoreError/migrationRefused(_:problems:)`` lists every problem and the store is untouched. A failure or a
    /// crash while the new store is staged leaves the old one whole, and running the upgrade again starts over; a
    /// crash while it replaces the old one leaves the old store's files aside, which the next run puts back first.
    /// A store already at `schema`'s version hashes is left as it is.
    ///
    /// - Returns: the plan that was carried out (empty when there was nothing to do).
    @discardableResult
    public func upgradeStore(at url: URL, type: String? = nil, to schema: Schema,
                             options: UpgradeOptions = UpgradeOptions()) throws -> SchemaMigrationPlan {
        try loggedOperation("upgrade store", ["store": url.logValue], logger: logger) {
            try PlacementRecovery.restoreAsideStore(at: url)
            let backend = try backend(ofStoreAt: url, type: type)
            let stored = try backend.readMetadata(at: url)
            let plan = try Self.plan(from: stored, to: schema, url: url, customStep: options.customStep != nil)
            guard Self.needsUpgrade(stored, to: schema) else {
                PlacementRecovery.clearStaging(near: url, backend: backend)
                return plan
            }
            var mapper: MigrationRecordMapper
            do {
                mapper = try MigrationRecordMapper(plan: plan, source: stored.schema, destination: schema, customStep: options.customStep)
            } catch {
                throw StoreError.migrationRefused(url, problems: [.notInferable(entity: "", property: nil, reason: "\(error)")])
            }
            if options.customStep == nil, plan.onlyAdds, let inPlace = backend as? any InPlaceUpgradingBackend {
                if !options.force { try Self.refuseIfInUse(url, backend: backend, action: "upgrade") }
                if try inPlace.upgradeInPlace(at: url, plan: plan, from: stored, to: mapper.metadata(from: stored)) {
                    logger?.debug("upgraded in place", metadata: ["store": url.logValue])
                    return plan
                }
            }
            let batchSize = max(1, options.batchSize)
            _ = try stageAndPlace(at: url, backend: backend, replacing: true, force: options.force) { staged in
                if let atomic = backend.asAtomicStoreBackend, backend.capabilities.contains(.persistent) {
                    // Records a step reads besides its own come from the store loaded once, if a step asks.
                    let lookup = MigrationSourceLookup(opening: {
                        try backend.open(at: url, options: StoreOptions(isReadOnly: true, createIfMissing: false), creating: nil)
                    })
                    defer { lookup.close() }
                    mapper.sourceLookup = lookup
                    let preflight = try MigrationPreflight.run(inFileAt: url, of: atomic, mapper: mapper)
                    let problems = preflight.problems()
                    guard problems.isEmpty else { throw StoreError.migrationRefused(url, problems: problems) }
                    let mapper = try preflight.mapperWithInsertions(stored: stored)
                    // Inserted records sit in their own entities' groups: the one-pass order cannot hold them.
                    for passes in [MigratedFileContents.Passes.one, .perEntity] where passes == .perEntity || mapper.insertions == nil {
                        let contents = MigratedFileContents(backend: atomic, url: url, mapper: mapper, metadata: mapper.metadata(from: stored),
                                                            passes: passes, batchSize: batchSize, progress: options.progress)
                        do {
                            try atomic.writeStore(contents, to: staged)
                            try AtomicFile.fsync(path: staged)
                            return contents.metadata
                        } catch is MigratedFileContents.OutOfOrder {
                            StorePlacement.discard(staged: staged, backend: backend)
                        }
                    }
                }
                let readOnly = StoreOptions(isReadOnly: true, createIfMissing: false)
                let source = try backend.open(at: url, options: readOnly, creating: nil)
                defer { try? source.close() }
                mapper.sourceLookup = MigrationSourceLookup(store: source)
                let preflight = try MigrationPreflight.run(in: source, mapper: mapper, batchSize: batchSize)
                let problems = preflight.problems()
                guard problems.isEmpty else { throw StoreError.migrationRefused(url, problems: problems) }
                let records = MigratingStoreView(base: source, mapper: try preflight.mapperWithInsertions(stored: stored))
                // A source that scans pages upgrades page by page, moving bytes where the plan copies values.
                let view: any PersistentStore = (source as? any PageScanningStore).map { MigratingPageView(view: records, pages: $0) } ?? records
                try Self.write(view, as: backend, to: staged, batchSize: batchSize, progress: options.progress)
                return view.metadata
            }
            return plan
        }
    }

    /// Whether a store with `stored` metadata differs from `schema` (in the store's own hash algorithm).
    static func needsUpgrade(_ stored: StoreMetadata, to schema: Schema) -> Bool {
        !stored.incompatibleEntities(with: schema).isEmpty
    }

    /// The plan from a store's schema to `schema`, with refusals naming the store.
    static func plan(from stored: StoreMetadata, to schema: Schema, url: URL, customStep: Bool = false) throws -> SchemaMigrationPlan {
        do { return try SchemaMigrationPlan(from: stored.schema, to: schema, customStep: customStep) } catch {
            if case .migrationRefused(_, let problems) = error { throw StoreError.migrationRefused(url, problems: problems) }
            throw error
        }
    }

    /// Streams `view` into a new store of `backend`'s type at `staged`.
    static func write(_ view: any PersistentStore, as backend: any StoreBackend, to staged: URL, batchSize: Int,
                      progress: ProgressHandler?) throws {
        let transfer = StoreTransfer(batchSize: batchSize, progress: progress)
        if let atomic = backend.asAtomicStoreBackend {
            try transfer.write(view, metadata: view.metadata, as: atomic, to: staged)
            if backend.capabilities.contains(.persistent) { try AtomicFile.fsync(path: staged) }
            return
        }
        let destination = try backend.open(at: staged, options: StoreOptions(), creating: view.metadata)
        do {
            try transfer.copy(from: view, to: destination)
            try destination.close()
        } catch {
            try? destination.close()
            throw error
        }
    }
}
