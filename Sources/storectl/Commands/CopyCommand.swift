import ArgumentParser
import Foundation
import StoreAPI

struct CopyCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "copy",
        abstract: "Back up a store: a same-type copy with the engine's fast path.",
        discussion: """
            Uses the backend's own copy (SQLite's backup API, LMDB's environment copy, a file copy for XML), which \
            includes every sidecar's data (a SQLite WAL is never lost). The copy is staged and moved into place \
            complete; an existing destination is refused unless --force. Use 'convert' to change the type.

            Examples:
              storectl copy library.sqlite backups/library-2024-05-01.sqlite
              storectl copy library.lmdb library-backup.lmdb --force
            """
    )

    @Argument(help: "The store to copy.")
    var source: String

    @Argument(help: "The destination path.")
    var destination: String

    @Option(name: .long, help: ArgumentHelp("The source's type, when detection cannot tell.", valueName: "type"))
    var type: String?

    @Flag(name: .long, help: "Replace a store that exists at the destination.")
    var force = false

    @OptionGroup var transfer: TransferOptions
    @OptionGroup var common: CommonOptions

    func run() throws {
        try runCommand("copy", logLevel: common.logLevel) {
            let start = Date()
            let src = StoreArgument.url(source)
            let dst = StoreArgument.url(destination)
            let backend = try Backends.existing(src, type: type)
            // A copy named like its source is that type's (a Core Data `App.sqlite` backed up as `Backup.sqlite`).
            if dst.pathExtension.lowercased() != src.pathExtension.lowercased(),
               let suggested = Backends.registry.backend(forExtensionOf: dst), suggested.typeIdentifier != backend.typeIdentifier {
                throw CommandFailure("\(dst.displayName): the extension suggests a \(suggested.typeIdentifier) store, but copy keeps the type (\(backend.typeIdentifier)); use 'storectl convert' to change it")
            }
            let result = try Transfers.copy(from: src, type: backend.typeIdentifier, to: dst, type: backend.typeIdentifier,
                                            force: force, batchSize: transfer.batchSize, allowFastCopy: true,
                                            label: "copying", quiet: common.quiet)
            Console.note("copied \(src.displayName) to \(dst.displayName) (\(backend.typeIdentifier))\(result) in \(Console.seconds(since: start))", quiet: common.quiet)
        }
    }
}
