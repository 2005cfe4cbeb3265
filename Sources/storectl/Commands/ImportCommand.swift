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

            With --upsert, a line whose "id" names a stored record updates it (only the attributes and \
            relationships the line gives; a to-many is replaced by the given list), other lines insert, and a line \
            {"entity":"Book","id":"<UUID>","delete":true} deletes the record: every kind of change can be scripted, \
            and a synced store pushes it on its next sync. Still all or nothing.

            Examples:
              storectl import library.sqlite library.ndjson
              storectl import library.sqlite changes.ndjson --upsert
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

    @Flag(name: .long, help: "Update records whose id exists, delete those of {\"delete\":true} lines, insert the rest.")
    var upsert = false

    @OptionGroup var common: CommonOptions

    func run() throws {
        try runCommand("import", logLevel: common.logLevel) {
            let start = Date()
            let url = StoreArgument.url(store)
            if upsert { return try runUpsert(url, start: start) }
            // A synced store pushes what its history records: an import into one is always recorded.
            let synced = (try? Backends.existing(url, type: type).readMetadata(at: url).syncOptions) != nil
            let historyAuthor = self.historyAuthor ?? (synced ? "storectl import" : nil)
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
            var line = "imported \(Console.count(summary.inserted, "record")) into \(url.displayName)"
            if !perEntity.isEmpty { line += " (\(perEntity.joined(separator: ", ")))" }
            if summary.updated > 0 { line += "; \(Console.count(summary.updated)) stored records gained links" }
            Console.note(line + " in \(Console.seconds(since: start))", quiet: common.quiet)
        }
    }

    private func runUpsert(_ url: URL, start: Date) throws {
        let backend = try Backends.existing(url, type: type)
        let metadata = try backend.readMetadata(at: url)
        let coordinator = StoreCoordinator(schema: metadata.schema, registry: Backends.registry)
        var description = StoreDescription(url: url, type: backend.typeIdentifier, configuration: metadata.configuration)
        description.options.historyTracking = true
        description.options.createIfMissing = false
        let loaded = try coordinator.addStore(description)
        defer { try? coordinator.removeStore(loaded) }
        let data: Data
        if file == "-" { data = FileHandle.standardInput.readDataToEndOfFile() } else {
            do { data = try Data(contentsOf: URL(fileURLWithPath: file)) } catch {
                throw CommandFailure("\(file): cannot read: \(error.localizedDescription)")
            }
        }
        let summary = try UpsertImport(coordinator: coordinator, store: loaded, name: file == "-" ? "<stdin>" : file,
                                       author: historyAuthor ?? "storectl import").run(data)
        try coordinator.removeStore(loaded)
        Console.note("\(url.displayName): \(Console.count(summary.inserted)) inserted, \(Console.count(summary.updated)) updated, "
            + "\(Console.count(summary.deleted)) deleted in \(Console.seconds(since: start))", quiet: common.quiet)
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
