import ArgumentParser
import Foundation
import StoreAPI

struct DiffCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "diff",
        abstract: "Compare two stores logically, across store types.",
        discussion: """
            Records are matched by global ID and compared value by value (bit-exact), relationships by the global \
            IDs they point to (in order for ordered relationships). Metadata (store UUID, schema, configuration, \
            custom keys, sync options) and history are compared too, unless --records-only (use it for a store \
            rebuilt with 'import', which has its own UUID and history).

            Exits with 0 when the stores are identical and 1 when they differ, with a summary on standard output: \
            records only in A, only in B, records whose attributes or relationships differ, metadata and history.

            Examples:
              storectl diff library.sqlite library.lmdb
              storectl diff original.sqlite rebuilt.xml --records-only
              storectl diff a.sqlite b.sqlite --json --limit 10
            """
    )

    @Argument(help: "Store A.")
    var a: String

    @Argument(help: "Store B.")
    var b: String

    @Option(name: .customLong("type-a"), help: ArgumentHelp("A's type, when detection cannot tell.", valueName: "type"))
    var typeA: String?

    @Option(name: .customLong("type-b"), help: ArgumentHelp("B's type, when detection cannot tell.", valueName: "type"))
    var typeB: String?

    @Flag(name: .long, help: "Compare records only, not metadata or history.")
    var recordsOnly = false

    @Option(name: .long, help: ArgumentHelp("List at most this many records per kind of difference.", valueName: "n"))
    var limit = 50

    @Flag(name: .long, help: "Print the differences as JSON.")
    var json = false

    @OptionGroup var common: CommonOptions

    func validate() throws {
        guard limit >= 0 else { throw ValidationError("--limit must not be negative") }
    }

    @OptionGroup var coreDataModel: CoreDataModelOption

    func run() throws {
        var identical = true
        try runCommand("diff", logLevel: common.logLevel) {
            coreDataModel.apply()
            let urlA = StoreArgument.url(a)
            let urlB = StoreArgument.url(b)
            let (_, storeA) = try Backends.open(urlA, type: typeA, readOnly: true)
            defer { try? storeA.close() }
            let (_, storeB) = try Backends.open(urlB, type: typeB, readOnly: true)
            defer { try? storeB.close() }
            let comparison = StoreComparison(comparesMetadata: !recordsOnly, comparesHistory: !recordsOnly, listLimit: limit)
            let result = try comparison.compare(storeA, storeB)
            identical = result.isIdentical
            if json {
                try JSONOutput.print(result)
            } else if identical {
                Console.note("\(urlA.displayName) and \(urlB.displayName) are identical (\(Console.count(result.recordsCompared, "record")) compared)", quiet: common.quiet)
            } else {
                Console.output("A: \(urlA.displayName)\nB: \(urlB.displayName)\n" + result.summary)
            }
        }
        if !identical { throw ExitStatus.differences }
    }
}
