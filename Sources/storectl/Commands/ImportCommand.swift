import ArgumentParser
import Foundation
import StoreAPI

struct ImportCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "import",
        abstract: "Add the records of an NDJSON file to a store, all or nothing.",
        discussion: """
            One JSON object per line, for example (wrapped here):
              {"entity":"Book","id":"<UUID>","attributes":{"title":"Dune",
               "pages":412},"relationships":{"author":"<UUID>","tags":["<UUID>"]}}
            Dates are ISO 8601, binary data base64, decimals strings, to-many relationships arrays of ids (in order \
            for ordered relationships). "id" may be left out (a new global ID is generated); relationships may be \
            given from either side, and may name records already in the store.

            The whole file is checked first; every problem is reported with its line number and nothing is written. \
            Otherwise all records are written in one transaction.

            Examples:
              storectl import library.sqlite library.ndjson
              generate-records | storectl import library.sqlite -
              storectl import library.lmdb more.ndjson --history-author nightly
            """
    )

    @Argument(help: "The store to add records to.")
    var store: String

    @Argument(help: "The NDJSON file ('-' for standard input).")
    var file: String

    @Option(name: .long, help: ArgumentHelp("The store's type, when detection cannot tell.", valueName: "type"))
    var type: String?

    @Option(name: .long, help: ArgumentHelp("Record the import as a history transaction by this author.", valueName: "name"))
    var historyAuthor: String?

    @OptionGroup var common: CommonOptions

    func run() throws {
        try runCommand("import", logLevel: common.logLevel) {
            let start = Date()
            let url = URL(fileURLWithPath: store)
            let (_, opened) = try Backends.open(url, type: type, readOnly: false)
            let summary: NDJSONImporter.Summary
            do {
                let bar = ProgressBar("importing", quiet: common.quiet)
                defer { bar.finish() }
                summary = try Self.importRecords(from: file, into: opened, historyAuthor: historyAuthor, progress: bar.handler)
                try opened.close()
            } catch {
                try? opened.close()
                throw error
            }
            let perEntity = summary.insertedByEntity.sorted { $0.key < $1.key }.map { "\($0.key): \(Console.count($0.value))" }
            var line = "imported \(Console.count(summary.inserted)) records into \(url.path)"
            if !perEntity.isEmpty { line += " (\(perEntity.joined(separator: ", ")))" }
            if summary.updated > 0 { line += "; \(Console.count(summary.updated)) stored records gained links" }
            Console.note(line + " in \(Console.seconds(since: start))", quiet: common.quiet)
        }
    }

    static func importRecords(from file: String, into store: any PersistentStore, historyAuthor: String?,
                              progress: @escaping ProgressHandler) throws -> NDJSONImporter.Summary {
        let importer = NDJSONImporter(historyAuthor: historyAuthor, progress: progress)
        if file == "-" {
            return try importer.importRecords(from: FileHandle.standardInput, named: "<stdin>", into: store)
        }
        return try importer.importRecords(fromFileAt: URL(fileURLWithPath: file), into: store)
    }
}
