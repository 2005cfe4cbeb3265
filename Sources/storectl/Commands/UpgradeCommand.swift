import ArgumentParser
import Foundation
import StoreAPI

struct UpgradeCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "upgrade",
        abstract: "Upgrade a store to a new version of its model (schema evolution).",
        discussion: """
            The changes are inferred from the store's schema and MODEL: entities and attributes added or removed, \
            optional ↔ required, renames through renaming identifiers (Xcode's Renaming ID), integer and float \
            widening, exact conversions to string, relationships added or removed, to-one → to-many, ordered ↔ \
            unordered, uniqueness constraints added. Anything else is refused before the store is touched, listing \
            every change that cannot be mapped; so are records without a value for a newly required property and \
            duplicates under a new uniqueness constraint.

            Every record the new model keeps is carried with its primary key and global ID, with the store UUID, \
            custom metadata and history. The new store is staged beside the old one and replaces it atomically \
            only when complete. With an .xcdatamodeld, the store is upgraded one version at a time from the version \
            its hashes match up to the bundle's current version, all or nothing: the steps run on a staged copy, \
            so a step refused for the records it finds leaves the store at the version it had.

            --dry-run prints the plan (each change and how it maps) and changes nothing; it reads only the \
            store's schema, so records that do not fit a step (no value for a newly required property, duplicates \
            under a new constraint) are found when the upgrade runs. --check runs the whole upgrade on a copy \
            staged beside the store and discards it: it finds those too, and changes nothing (exit 2 when the \
            upgrade would fail). --json prints the plan as JSON.

            Examples:
              storectl upgrade app.sqlite --model Model.xcdatamodeld --dry-run
              storectl upgrade app.sqlite --model Model.xcdatamodeld --check
              storectl upgrade app.lmdb --model "Model.xcdatamodeld/Model 2.xcdatamodel"
              storectl upgrade app.xml --model schema-v2.json --json
            """
    )

    @Argument(help: "The store to upgrade.")
    var store: String

    @Option(name: .long, help: ArgumentHelp(
        "The new model: an .xcdatamodeld (upgraded through its versions), an .xcdatamodel or the JSON schema form.",
        valueName: "path"))
    var model: String

    @Option(name: .long, help: ArgumentHelp("Store type (default: detected).", valueName: "type"))
    var type: String?

    @Flag(name: .long, help: "Print the plan and change nothing.")
    var dryRun = false

    @Flag(name: .long, help: "Run the upgrade on a staged copy and discard it: every refusal, the records' too; changes nothing.")
    var check = false

    @Flag(name: .long, help: "Print the plan (and what was done) as JSON on standard output.")
    var json = false

    @Flag(name: .long, help: "Upgrade even if another process has the store open.")
    var force = false

    @OptionGroup var transfer: TransferOptions
    @OptionGroup var common: CommonOptions

    /// What `--json` prints.
    private struct Report: Encodable {
        var store: String
        var dryRun: Bool
        /// Whether the steps were run on a staged copy (`--check`), which was then discarded.
        var checked: Bool
        var upgraded: Bool
        var steps: [Step]
    }

    private struct Step: Encodable {
        var from: String?
        var to: String
        var plan: SchemaMigrationPlan
    }

    func run() throws {
        try runCommand("upgrade", logLevel: common.logLevel) {
            let start = Date()
            let url = StoreArgument.url(store)
            let modelURL = URL(fileURLWithPath: model)
            let chain = try Self.chain(modelURL)
            if dryRun || check {
                var steps: [Step]
                if check {
                    let bar = ProgressBar("checking on a copy", quiet: common.quiet || json)
                    defer { bar.finish() }
                    steps = try Backends.operations.rehearseUpgrade(
                        ofStoreAt: url, type: type, through: chain,
                        options: .init(batchSize: transfer.batchSize, progress: bar.handler)
                    ).map { Step(from: $0.from, to: $0.to, plan: $0.plan) }
                } else {
                    let backend = try Backends.existing(url, type: type)
                    steps = try plannedSteps(chain, stored: try backend.readMetadata(at: url), url: url)
                }
                if json {
                    try JSONOutput.print(Report(store: url.displayName, dryRun: true, checked: check, upgraded: false, steps: steps))
                } else {
                    print(Self.text(steps, url: url))
                    if check, !steps.isEmpty {
                        Console.note("check: the upgrade succeeds on a copy of \(url.displayName) (discarded); the store is unchanged",
                                     quiet: common.quiet)
                    }
                }
                return
            }
            let bar = ProgressBar("upgrading", quiet: common.quiet || json)
            let done: [StoreOperations.UpgradeStep]
            do {
                defer { bar.finish() }
                // The operation finds the store itself: after an upgrade killed while placing the new store, only
                // it knows how to put the old one back.
                done = try Backends.operations.upgradeStore(
                    at: url, type: type, through: chain,
                    options: .init(batchSize: transfer.batchSize, progress: bar.handler, force: force))
            }
            let reported = done.map { Step(from: $0.from, to: $0.to, plan: $0.plan) }
            if json {
                try JSONOutput.print(Report(store: url.displayName, dryRun: false, checked: false, upgraded: !done.isEmpty, steps: reported))
            } else if done.isEmpty {
                Console.note("\(url.displayName) is already at the model's version; nothing to do", quiet: common.quiet)
            } else {
                Console.note(Self.text(reported, url: url), quiet: common.quiet)
                let upgradedType = (try? Backends.existing(url, type: type).typeIdentifier) ?? type ?? "?"
                Console.note("upgraded \(url.displayName) (\(upgradedType)) to \(done.last?.to ?? "") in "
                             + "\(Console.seconds(since: start))", quiet: common.quiet)
            }
        }
    }

    /// The steps an upgrade would take, each planned (so a dry run refuses what the upgrade would).
    private func plannedSteps(_ chain: SchemaVersionChain, stored: StoreMetadata, url: URL) throws -> [Step] {
        guard let latest = chain.versions.last else { return [] }
        if stored.incompatibleEntities(with: latest.schema).isEmpty { return [] }
        var steps: [Step] = []
        var previous = stored.schema
        let start = chain.position(of: stored)
        let targets = start.map { Array(chain.versions[($0 + 1)...]) } ?? [latest]
        var from = start.map { chain.versions[$0].name }
        for target in targets {
            let plan: SchemaMigrationPlan
            do { plan = try SchemaMigrationPlan(from: previous, to: target.schema) } catch {
                if case .migrationRefused(_, let problems) = error { throw StoreError.migrationRefused(url, problems: problems) }
                throw error
            }
            steps.append(Step(from: from, to: target.name, plan: plan))
            previous = target.schema
            from = target.name
        }
        return steps
    }

    private static func chain(_ url: URL) throws -> SchemaVersionChain {
        if url.pathExtension.lowercased() == "xcdatamodeld" { return try SchemaVersionChain(xcodeModelBundleAt: url) }
        return SchemaVersionChain(versions: [(url.deletingPathExtension().lastPathComponent, try SchemaFiles.load(url))])
    }

    private static func text(_ steps: [Step], url: URL) -> String {
        if steps.isEmpty { return "\(url.displayName) is already at the model's version; nothing to do" }
        return steps.map { step in
            "\(step.from ?? "store's schema") → \(step.to):\n" + step.plan.description.split(separator: "\n").map { "  " + $0 }
                .joined(separator: "\n")
        }.joined(separator: "\n")
    }
}
