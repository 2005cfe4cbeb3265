import ArgumentParser

/// Options every command shares.
struct CommonOptions: ParsableArguments {
    @Flag(name: [.short, .long], help: "Print nothing but errors: no progress bar, no summary.")
    var quiet = false
}

/// Options of commands that stream records.
struct TransferOptions: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp("Records per page when streaming.", valueName: "n"))
    var batchSize = 5_000

    func validate() throws {
        guard batchSize > 0 else { throw ValidationError("--batch-size must be positive") }
    }
}
