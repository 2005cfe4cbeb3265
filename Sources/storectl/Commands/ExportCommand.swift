import ArgumentParser
import Foundation
import StoreAPI

struct ExportCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "export",
        abstract: "Write a store's records as NDJSON (one JSON object per line).",
        discussion: """
            Every record is written with its global ID, every stored attribute (null included) and both sides of \
            every relationship as global IDs, so 'storectl import' into a store created from the same schema \
            rebuilds the same records exactly. Primary keys, metadata and history are not part of the format \
            (use 'convert' or 'copy' for a complete copy).

            Output goes to standard output unless --output names a file, which is written atomically.

            Examples:
              storectl export library.sqlite > library.ndjson
              storectl export library.lmdb --output library.ndjson
              storectl export library.sqlite --entity Book --entity Author | head
            """
    )

    @Argument(help: "The store to export.")
    var store: String

    @Option(name: [.short, .long], help: ArgumentHelp("Write to this file instead of standard output.", valueName: "file"))
    var output: String?

    @Option(name: .long, parsing: .singleValue,
            help: ArgumentHelp("Export only this entity (with its sub-entities). Repeatable.", valueName: "name"))
    var entity: [String] = []

    @Option(name: .long, help: ArgumentHelp("The store's type, when detection cannot tell.", valueName: "type"))
    var type: String?

    @Flag(name: .long, help: "Overwrite an existing output file.")
    var force = false

    @OptionGroup var transfer: TransferOptions
    @OptionGroup var common: CommonOptions

    @OptionGroup var coreDataModel: CoreDataModelOption

    func run() throws {
        try runCommand("export", logLevel: common.logLevel) {
            coreDataModel.apply()
            let start = Date()
            let url = StoreArgument.url(store)
            let (_, opened) = try Backends.open(url, type: type, readOnly: true)
            defer { try? opened.close() }
            let bar = ProgressBar("exporting", quiet: common.quiet)
            defer { bar.finish() }
            let exporter = NDJSONExporter(batchSize: transfer.batchSize, entities: entity.isEmpty ? nil : entity, progress: bar.handler)
            let count: Int
            if let output {
                let target = URL(fileURLWithPath: output)
                if !force, FileManager.default.fileExists(atPath: target.path) { throw StoreError.storeExists(target) }
                count = try exporter.export(opened, toFileAt: target)
            } else {
                count = try exporter.export(opened, to: FileHandle.standardOutput)
            }
            bar.finish()
            Console.note("exported \(Console.count(count, "record")) from \(url.displayName) in \(Console.seconds(since: start))", quiet: common.quiet)
        }
    }
}
