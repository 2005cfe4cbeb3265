import ArgumentParser
import Foundation
@_spi(BackendKit) import StoreAPI

struct DestroyCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "destroy",
        abstract: "Delete a store: every file it owns (main file, -wal, -shm, lock files, …) and nothing else.",
        discussion: """
            Refuses a path that is not a store (of --type, when given), a store whose path or files are symbolic \
            links (nothing is deleted), and a store another process has open (unless --force).

            Examples:
              storectl destroy old-library.sqlite
              storectl destroy cache.lmdb --type lmdb
              storectl destroy stale.sqlite --force
            """
    )

    @Argument(help: "The store to delete.")
    var store: String

    @Option(name: .long, help: ArgumentHelp("Only if the store is of this type.", valueName: "type"))
    var type: String?

    @Flag(name: .long, help: "Destroy the store even if another process has it open.")
    var force = false

    @OptionGroup var common: CommonOptions

    func run() throws {
        try runCommand("destroy", logLevel: common.logLevel) {
            let url = StoreArgument.url(store)
            // The listing is for the message; the operation itself reports a path that is not a store (after
            // finishing a destroy that was killed once the store had left the path).
            let backend = try? Backends.existing(url, type: type)
            // The sync engine's log and lock beside the store go with it too.
            let lock = StoreCompanionFiles.syncLock(beside: url)
            let files = (backend?.ownedFiles(ofStoreAt: url) ?? []) + StoreCompanionFiles.existing(beside: url)
                + (url.isFileURL && FileManager.default.fileExists(atPath: lock.path) ? [lock] : [])
            try Backends.operations.destroyStore(at: url, type: backend?.typeIdentifier ?? type, force: force)
            let typeName = (backend?.typeIdentifier).map { " (\($0))" } ?? ""
            // A store on a server has no files: its backend dropped it there.
            let removed = files.isEmpty ? "" : ": removed \(files.map(\.lastPathComponent).joined(separator: ", "))"
            Console.note("destroyed \(url.displayName)\(typeName)\(removed)", quiet: common.quiet)
        }
    }
}
