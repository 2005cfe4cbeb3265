import ArgumentParser
import Foundation
import StoreAPI

struct ConvertCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "convert",
        abstract: "Copy a store into a store of another (or the same) type: every record, identity, metadata and history.",
        discussion: """
            The destination is the same logical store: primary keys, global IDs, relationships and their order, \
            the store UUID, the schema, custom metadata and history are all kept. It is written in pages (bounded \
            memory), staged beside the destination and moved into place only when complete; the source is only read.

            The destination type comes from DST's extension unless --to names it; the source type is detected \
            (--from checks it, or names it when detection cannot tell). An existing destination is refused unless \
            --force, which replaces it atomically.

            Examples:
              storectl convert library.sqlite library.lmdb
              storectl convert library.lmdb library.xml
              storectl convert library.xml backup.db --to sqlite --force
              storectl convert data.bin library.sqlite --from lmdb
            """
    )

    @Argument(help: "The source store.")
    var source: String

    @Argument(help: "The destination path.")
    var destination: String

    // `--type` as well, the name `create` uses: `convert app.lmdb New.sqlite --type coredata` reads naturally.
    @Option(name: [.customLong("to"), .customLong("type")],
            help: ArgumentHelp("Destination type (default: from DST's extension); --type is the same.", valueName: "type"))
    var to: String?

    @Option(name: .long, help: ArgumentHelp("Source type (default: detected).", valueName: "type"))
    var from: String?

    @Flag(name: .long, help: "Replace a store that exists at the destination.")
    var force = false

    @OptionGroup var transfer: TransferOptions
    @OptionGroup var common: CommonOptions

    @OptionGroup var coreDataModel: CoreDataModelOption

    func run() throws {
        try runCommand("convert", logLevel: common.logLevel) {
            coreDataModel.apply()
            let start = Date()
            let src = StoreArgument.url(source)
            let dst = StoreArgument.url(destination)
            let sourceBackend = try Backends.existing(src, type: from)
            let destinationType = try to ?? Backends.forNewStore(at: dst, type: nil, option: "--to").typeIdentifier
            _ = try Backends.registry.backend(for: destinationType)
            let result = try Transfers.copy(from: src, type: sourceBackend.typeIdentifier, to: dst, type: destinationType,
                                            force: force, batchSize: transfer.batchSize, allowFastCopy: true,
                                            label: "converting", quiet: common.quiet)
            Console.note("converted \(src.displayName) (\(sourceBackend.typeIdentifier)) to \(dst.displayName) (\(destinationType))\(result) in \(Console.seconds(since: start))",
                         quiet: common.quiet)
        }
    }
}

/// The copy step convert, copy and replace share.
enum Transfers {
    /// Copies with the operations' staged copy and a progress bar; returns " — N records" when the count is known.
    static func copy(from src: URL, type sourceType: String, to dst: URL, type destinationType: String, force: Bool,
                     batchSize: Int, allowFastCopy: Bool, label: String, quiet: Bool) throws -> String {
        let bar = ProgressBar(label, quiet: quiet)
        defer { bar.finish() }
        try Backends.operations.copyStore(
            from: src, sourceType: sourceType, to: dst, type: destinationType,
            options: .init(replacingExisting: force, batchSize: batchSize, progress: bar.handler, allowFastCopy: allowFastCopy))
        return bar.recordsDone > 0 ? ": \(Console.count(bar.recordsDone, "record"))" : ""
    }
}
