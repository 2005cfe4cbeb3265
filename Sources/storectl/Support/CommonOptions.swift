import Foundation
import ArgumentParser
import Logging

/// Options every command shares.
struct CommonOptions: ParsableArguments {
    @Flag(name: [.short, .long], help: "Print nothing but errors: no progress bar, no summary.")
    var quiet = false

    @Option(name: .long, help: ArgumentHelp(
        "Print the framework's log lines at this level and above on standard error (trace, debug, info, notice, warning, error, critical). Default: the STORECTL_LOG_LEVEL environment variable, else warning.",
        valueName: "level"))
    var logLevel: Logger.Level?
}

extension Logger.Level: @retroactive ExpressibleByArgument {}

/// Options of commands that stream records.
struct TransferOptions: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp("Records per page when streaming.", valueName: "n"))
    var batchSize = 5_000

    func validate() throws {
        guard batchSize > 0 else { throw ValidationError("--batch-size must be positive") }
    }
}

/// `--model`, for commands that read stores: the app's Core Data model to read Core Data stores with.
struct CoreDataModelOption: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp(
        "Read Core Data stores with the app's model (an .xcdatamodel, an .xcdatamodeld's current version, or a compiled .mom) instead of the model the store keeps or one inferred from its tables. Its version hashes must be the store's: otherwise the command fails naming each entity that differs. Other store types ignore it.",
        valueName: "path"))
    var model: String?

    /// Makes the registry's `coredata` backend read with the model, when one is given.
    func apply() {
        guard let model else { return }
        Backends.useCoreDataModel(URL(fileURLWithPath: model))
    }
}
