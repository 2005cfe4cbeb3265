import ArgumentParser
import Foundation
import StoreAPI

struct ReplaceCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "replace",
        abstract: "Make a store an exact copy of another, atomically (restore a backup).",
        discussion: """
            DST becomes the same logical store as SRC: every old file of DST is gone afterwards, SRC is untouched. \
            The new store is staged and swapped in only when complete; a missing or invalid SRC is an error and \
            leaves DST as it was. DST keeps its type unless --type names another (SRC's type is used when DST does \
            not exist yet). A DST another process has open is refused unless --force.

            Examples:
              storectl replace library.sqlite --with backups/library-2024-05-01.sqlite
              storectl replace library.sqlite --with library.xml
            """
    )

    @Argument(help: "The store to replace.")
    var destination: String

    @Option(name: .long, help: ArgumentHelp("The store to copy from.", valueName: "src"))
    var with: String

    @Option(name: .long, help: ArgumentHelp("Destination type (default: DST's current type).", valueName: "type"))
    var type: String?

    @Option(name: .long, help: ArgumentHelp("Source type (default: detected).", valueName: "type"))
    var from: String?

    @Flag(name: .long, help: "Replace DST even if another process has it open.")
    var force = false

    @OptionGroup var transfer: TransferOptions
    @OptionGroup var common: CommonOptions

    func run() throws {
        try runCommand("replace", logLevel: common.logLevel) {
            let start = Date()
            let dst = StoreArgument.url(destination)
            let src = StoreArgument.url(with)
            _ = try Backends.existing(src, type: from)
            let bar = ProgressBar("replacing", quiet: common.quiet)
            let metadata: StoreMetadata
            do {
                defer { bar.finish() }
                metadata = try Backends.operations.replaceStore(at: dst, type: type, with: src, sourceType: from,
                                                                batchSize: transfer.batchSize, progress: bar.handler, force: force)
            }
            Console.note("replaced \(dst.displayName) (\(metadata.storeType)) with \(src.displayName) in \(Console.seconds(since: start))", quiet: common.quiet)
        }
    }
}
