import ArgumentParser
import Foundation
import StoreAPI

struct RelocateCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "relocate",
        abstract: "Move a store with every file it owns to a new path, crash-safely.",
        discussion: """
            Idempotent and resumable: if only OLD exists the store is copied beside NEW, moved into place and OLD is \
            removed; if only NEW exists there is nothing to do; if both hold the same store (an interrupted \
            relocation), OLD is authoritative and replaces NEW. Two different stores at OLD and NEW are refused.

            Examples:
              storectl relocate ~/Library/app.sqlite /shared/group/app.sqlite
              storectl relocate old/library.lmdb new/library.lmdb
            """
    )

    @Argument(help: "Where the store is now.")
    var old: String

    @Argument(help: "Where it should be.")
    var new: String

    @Option(name: .long, help: ArgumentHelp("The store's type, when detection cannot tell.", valueName: "type"))
    var type: String?

    @OptionGroup var common: CommonOptions

    func run() throws {
        try runCommand("relocate", logLevel: common.logLevel) {
            let from = StoreArgument.url(old)
            let to = StoreArgument.url(new)
            let outcome = try Backends.operations.relocateStore(from: from, to: to, type: type)
            switch outcome {
            case .moved: Console.note("moved \(from.displayName) to \(to.displayName)", quiet: common.quiet)
            case .alreadyDone: Console.note("\(to.displayName) already holds the store; nothing to do", quiet: common.quiet)
            case .resumed: Console.note("finished an interrupted relocation of \(from.displayName) to \(to.displayName)", quiet: common.quiet)
            }
        }
    }
}
