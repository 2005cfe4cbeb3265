import ArgumentParser
import Foundation
import StoreAPI

struct DestroyCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "destroy",
        abstract: "Delete a store: every file it owns (main file, -wal, -shm, lock files, …) and nothing else.",
        discussion: """
            Refuses a path that is not a store (of --type, when given), and a symbolic link.

            Examples:
              storectl destroy old-library.sqlite
              storectl destroy cache.lmdb --type lmdb
            """
    )

    @Argument(help: "The store to delete.")
    var store: String

    @Option(name: .long, help: ArgumentHelp("Only if the store is of this type.", valueName: "type"))
    var type: String?

    @OptionGroup var common: CommonOptions

    func run() throws {
        try runCommand("destroy") {
            let url = URL(fileURLWithPath: store)
            let backend = try Backends.existing(url, type: type)
            let files = backend.ownedFiles(ofStoreAt: url)
            try Backends.operations.destroyStore(at: url, type: backend.typeIdentifier)
            Console.note("destroyed \(url.path) (\(backend.typeIdentifier)): removed \(files.map(\.lastPathComponent).joined(separator: ", "))",
                         quiet: common.quiet)
        }
    }
}
