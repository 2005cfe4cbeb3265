import Foundation

/// The versions of a model, oldest first, that a store is upgraded through one step at a time (Core Data's staged
/// migration, SwiftData's `SchemaMigrationPlan.stages`).
///
/// A store's place in the chain is found by its version hashes, so an upgrade interrupted between two steps
/// resumes from the version the store reached.
public struct SchemaVersionChain: Sendable {
    /// The versions, oldest first, with a name each (the `.xcdatamodel` version's name for an Xcode bundle).
    public let versions: [(name: String, schema: Schema)]
    /// Custom steps, by the name of the version they upgrade to: each runs on every record of the step into that
    /// version, after its inferred mapping (see ``RecordMigration``).
    public var customSteps: [String: RecordMigrationStep]

    /// A chain of named schemas, oldest first, with custom steps by the name of the version they lead to.
    public init(versions: [(name: String, schema: Schema)], customSteps: [String: RecordMigrationStep] = [:]) {
        self.versions = versions
        self.customSteps = customSteps
    }

    /// The versions of an `.xcdatamodeld` bundle, in version order up to its current version
    /// (``XcodeModelVersions``): versions after the current one are not part of the chain.
    ///
    /// - Throws: ``SchemaError`` naming the bundle or the version that cannot be read.
    public init(xcodeModelBundleAt url: URL) throws {
        let listed = try XcodeModelVersions(bundleAt: url)
        var versions: [(name: String, schema: Schema)] = []
        for v in listed.versions {
            versions.append((v.deletingPathExtension().lastPathComponent, try Schema(xcodeModelAt: v)))
            if v.standardizedFileURL == listed.current.standardizedFileURL { break }
        }
        self.versions = versions
        self.customSteps = [:]
    }

    /// The newest version.
    public var latest: Schema? { versions.last?.schema }

    /// The position of the version a store with `metadata` was written with, by its version hashes; `nil` when
    /// none matches (the store is then upgraded straight to the latest version).
    public func position(of metadata: StoreMetadata) -> Int? {
        versions.lastIndex { metadata.incompatibleEntities(with: $0.schema).isEmpty }
    }
}

extension StoreOperations {
    /// One step of an upgrade through a chain: the version names and the plan carried out.
    public struct UpgradeStep: Sendable {
        /// The version the step started from; `nil` when the store matched no version of the chain.
        public var from: String?
        /// The version the step upgraded to.
        public var to: String
        /// How the records mapped.
        public var plan: SchemaMigrationPlan
    }

    /// Upgrades the store at `url` through `chain`, one version at a time from the one its version hashes match to
    /// the latest, each step as ``upgradeStore(at:type:to:options:)`` does it. A store that matches no version is
    /// upgraded to the latest version directly.
    ///
    /// Custom steps come from the chain's ``SchemaVersionChain/customSteps`` (`options.customStep` is not used).
    /// Before anything is written, every remaining step is planned: a step that cannot be inferred is refused with
    /// ``StoreError/migrationRefused(_:problems:)`` naming the versions. The upgrade is all or nothing: with more
    /// than one step, the steps run on a copy of the store staged beside it (on a server, in a staging schema),
    /// which replaces the store atomically once the last step is done. A step refused for the data it finds (records
    /// without a value for a newly required property, duplicates under a new constraint), a failure, a cancel or a
    /// crash leaves the store whole at the version it had. A store at a version inside the chain (upgraded one step
    /// by other means) continues from there.
    ///
    /// - Returns: the steps carried out (empty when the store is at the latest version).
    @discardableResult
    public func upgradeStore(at url: URL, type: String? = nil, through chain: SchemaVersionChain,
                             options: UpgradeOptions = UpgradeOptions()) throws -> [UpgradeStep] {
        try PlacementRecovery.restoreAsideStore(at: url)
        guard let (backend, steps) = try plannedSteps(forStoreAt: url, type: type, through: chain) else { return [] }
        let run = runner(steps, of: chain, backend: backend, options: options)
        // One step is staged and placed by the step itself.
        guard steps.count > 1 else { return try run(url) }
        return try upgradeStaged(at: url, backend: backend, options: options, placing: true, run)
    }

    /// Rehearses ``upgradeStore(at:type:through:options:)``: runs every step on a copy of the store at `url`, staged
    /// beside it (on a server, in a staging schema), and discards the copy. Unlike
    /// ``migrationPlan(forStoreAt:type:to:)``, which reads only the store's schema, it meets every refusal the
    /// upgrade would — records without a value for a newly required property, duplicates under a new constraint, a
    /// custom step that throws — and every failure, without changing the store. It may run while the store is in
    /// use; it then checks the records as the copy found them.
    ///
    /// - Returns: the steps the upgrade would carry out (empty when the store is at the latest version).
    /// - Throws: what the upgrade would throw, ``StoreError/migrationRefused(_:problems:)`` naming the store.
    @discardableResult
    public func rehearseUpgrade(ofStoreAt url: URL, type: String? = nil, through chain: SchemaVersionChain,
                                options: UpgradeOptions = UpgradeOptions()) throws -> [UpgradeStep] {
        guard let (backend, steps) = try plannedSteps(forStoreAt: url, type: type, through: chain, clearing: false) else { return [] }
        return try upgradeStaged(at: url, backend: backend, options: options, placing: false,
                                 runner(steps, of: chain, backend: backend, options: options))
    }

    /// One step of a chain to carry out: from a version (`nil`: the store's own schema) to the next.
    private struct ChainStep {
        var from: String?
        var to: String
        var schema: Schema
    }

    /// The steps from the store's version to the chain's latest, each planned (so a chain that breaks at its third
    /// step changes nothing), with the store's backend; `nil` when the store is at the latest version (staging an
    /// interrupted upgrade left is then cleared, when `clearing`).
    private func plannedSteps(forStoreAt url: URL, type: String?, through chain: SchemaVersionChain,
                              clearing: Bool = true) throws -> (any StoreBackend, [ChainStep])? {
        guard let latest = chain.versions.last else {
            throw StoreError.invalidArgument("the version chain has no versions")
        }
        let backend = try backend(ofStoreAt: url, type: type)
        let stored = try backend.readMetadata(at: url)
        guard Self.needsUpgrade(stored, to: latest.schema) else {
            if clearing { PlacementRecovery.clearStaging(near: url, backend: backend) }
            return nil
        }
        var steps: [ChainStep] = []
        if let start = chain.position(of: stored) {
            for i in start..<(chain.versions.count - 1) {
                steps.append(ChainStep(from: chain.versions[i].name, to: chain.versions[i + 1].name, schema: chain.versions[i + 1].schema))
            }
        } else {
            steps.append(ChainStep(from: nil, to: latest.name, schema: latest.schema))
        }
        var previous = stored.schema
        for step in steps {
            do {
                _ = try SchemaMigrationPlan(from: previous, to: step.schema, customStep: chain.customSteps[step.to] != nil)
            } catch {
                guard case .migrationRefused(_, let problems) = error else { throw error }
                let label = "\(step.from ?? "the store's schema") → \(step.to)"
                throw StoreError.migrationRefused(url, problems: problems.map {
                    .notInferable(entity: label, property: nil, reason: $0.description)
                })
            }
            previous = step.schema
        }
        return (backend, steps)
    }

    /// Carries out `steps` on the store at a location, one upgrade each, with the chain's custom steps.
    private func runner(_ steps: [ChainStep], of chain: SchemaVersionChain, backend: any StoreBackend,
                        options: UpgradeOptions) -> (URL) throws -> [UpgradeStep] {
        { location in
            var done: [UpgradeStep] = []
            for step in steps {
                var stepOptions = options
                stepOptions.customStep = chain.customSteps[step.to]
                let plan = try upgradeStore(at: location, type: backend.typeIdentifier, to: step.schema, options: stepOptions)
                done.append(UpgradeStep(from: step.from, to: step.to, plan: plan))
            }
            return done
        }
    }

    /// Runs `steps` on a copy of the store at `url` and, when `placing`, places the result over it, so that a chain
    /// refused or failing at a later step leaves the store at the version it had rather than at one between.
    /// Without `placing` (a rehearsal) the copy is discarded and the store, in use or not, is only read.
    private func upgradeStaged(at url: URL, backend: any StoreBackend, options: UpgradeOptions, placing: Bool,
                               _ steps: (URL) throws -> [UpgradeStep]) throws -> [UpgradeStep] {
        let force = options.force
        if placing, !force { try Self.refuseIfInUse(url, backend: backend, action: "upgrade") }
        // Files: a scratch folder under a staging name beside the store, so that a crash leaves only staging the next
        // operation clears, and the store's files inside keep their own names (the steps stage beside them in
        // turn). Otherwise the backend's staging location: a server swaps it in in one transaction, a store kept in
        // the process under the backend's lock.
        let scratch: URL
        let copy: URL
        if backend.keepsFiles {
            try AtomicFile.checkDirectory(of: url)
            if placing {
                // Beside a store in use, staging may be a live writer's save: only an upgrade, which refused that
                // (or was forced), clears it.
                AtomicFile.removeStaleStaging(near: url)
                AtomicFile.removeNestedStaging(near: url)
            }
            scratch = AtomicFile.stagingURL(for: url)
            do {
                try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: false)
            } catch {
                throw StoreError.io(scratch, operation: "creating a folder to stage the upgrade in", reason: "\(error.localizedDescription)")
            }
            copy = scratch.appendingPathComponent(url.lastPathComponent)
        } else {
            scratch = try StorePlacement.stagingLocation(for: url, backend: backend)
            copy = scratch
        }
        func discard() {
            if backend.keepsFiles { try? FileManager.default.removeItem(at: scratch) } else { StorePlacement.discard(staged: copy, backend: backend) }
        }
        do {
            try copyStore(from: url, sourceType: backend.typeIdentifier, to: copy, type: backend.typeIdentifier,
                          options: CopyOptions(batchSize: options.batchSize, progress: options.progress, force: force))
            let done: [UpgradeStep]
            do {
                done = try steps(copy)
            } catch StoreError.migrationRefused(_, let problems) {
                // The copy is the steps' store; the caller's store is the one refused.
                throw StoreError.migrationRefused(url, problems: problems)
            }
            guard placing else {
                discard()
                return done
            }
            let existing = try existingStore(at: url, replacing: true, force: force)
            try StorePlacement.place(staged: copy, at: url, backend: backend, replacing: existing)
            // The folder is empty now, or holds what a step left of its own staging; a server's staging was renamed.
            if backend.keepsFiles { try? FileManager.default.removeItem(at: scratch) }
            return done
        } catch {
            discard()
            throw error
        }
    }
}
