import ArgumentParser
import Foundation
import StoreAPI

struct VerifyCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify",
        abstract: "Check a store's integrity: the engine's own check, then schema and relationship consistency.",
        discussion: """
            Runs the backend's integrity check (SQLite's integrity_check, LMDB's structure checks, …), then reads \
            every record: values fit their attributes, required values are present, global IDs are unique, every \
            relationship points to an existing record of the right entity, and both sides of every relationship \
            agree. Exits with 1 and lists the problems when there are any.

            Examples:
              storectl verify library.sqlite
              storectl verify library.lmdb --json
            """
    )

    @Argument(help: "The store to check.")
    var store: String

    @Option(name: .long, help: ArgumentHelp("The store's type, when detection cannot tell.", valueName: "type"))
    var type: String?

    @Flag(name: .long, help: "Print JSON: ok, records and the list of problems.")
    var json = false

    @OptionGroup var common: CommonOptions

    struct Report: Encodable {
        var path: String
        var type: String
        var ok: Bool
        var records: Int
        var problems: [String]
    }

    @OptionGroup var coreDataModel: CoreDataModelOption

    func run() throws {
        var problems: [String] = []
        try runCommand("verify", logLevel: common.logLevel) {
            coreDataModel.apply()
            let url = StoreArgument.url(store)
            let backend = try Backends.existing(url, type: type)
            problems = try backend.checkIntegrity(at: url).map { "engine: \($0)" }
            var records = 0
            do {
                let opened = try backend.open(at: url, options: StoreOptions(isReadOnly: true, createIfMissing: false), creating: nil)
                defer { try? opened.close() }
                let bar = ProgressBar("verifying", quiet: common.quiet || json)
                do {
                    defer { bar.finish() }
                    problems += try StoreVerifier(progress: bar.handler).verify(opened)
                }
                records = try StoreTransfer.countRecords(opened)
            } catch let error as StoreError where !problems.isEmpty {
                // The damage the engine check found is often what stops the records from reading: list it all.
                problems.append("records: cannot be read: \(error)")
            }
            if json {
                try JSONOutput.print(Report(path: url.displayName, type: backend.typeIdentifier, ok: problems.isEmpty, records: records, problems: problems))
            } else if problems.isEmpty {
                Console.note("OK: \(url.displayName) (\(backend.typeIdentifier)), \(Console.count(records, "record")) checked", quiet: common.quiet)
            } else {
                Console.output("\(url.displayName): \(problems.count) problem\(problems.count == 1 ? "" : "s"):")
                for p in problems { Console.output("  " + p) }
            }
        }
        if !problems.isEmpty { throw ExitStatus.differences }
    }
}
