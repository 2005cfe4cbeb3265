import ArgumentParser
import Foundation
import StoreAPI

struct CreateCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "create",
        abstract: "Create a new store from a schema, optionally filled from an NDJSON file.",
        discussion: """
            The schema is an Xcode model (.xcdatamodeld, .xcdatamodel), the framework's JSON schema form (see \
            'storectl schema --json'), or an existing store, whose schema the new one gets (a new sync peer, an \
            empty store of another type). The store type comes from the store's extension unless --type names one.

            The store is built beside its destination and moved into place only when it is complete, so a failed \
            import leaves nothing behind.

            Examples:
              storectl create library.sqlite --model Library.xcdatamodeld
              storectl create library.lmdb --model schema.json --import library.ndjson
              storectl create desktop.lmdb --model laptop.sqlite
              storectl create data.db --type sqlite --model Model.xcdatamodel \\
                  --metadata owner=alice --metadata version=3
              storectl create library.sqlite --model Library.xcdatamodeld --force
            """
    )

    @Argument(help: "Path of the new store.")
    var store: String

    @Option(name: [.customLong("model"), .customLong("schema"), .customShort("m")],
            help: ArgumentHelp("The schema: an Xcode model, a JSON schema file, or a store whose schema to take.", valueName: "path"))
    var model: String

    @Option(name: .long, help: ArgumentHelp("Store type (default: from the store's extension).", valueName: "type"))
    var type: String?

    @Option(name: .long, help: ArgumentHelp("Hold only this configuration's entities.", valueName: "name"))
    var configuration: String?

    @Option(name: [.customLong("import"), .customShort("i")],
            help: ArgumentHelp("Fill the new store from this NDJSON file.", valueName: "file"))
    var importFile: String?

    @Option(name: .long, parsing: .singleValue,
            help: ArgumentHelp("Custom metadata key=value (value read as JSON when valid, else a string). Repeatable.",
                               valueName: "key=value"))
    var metadata: [String] = []

    @Flag(name: .long, help: "Replace a store that already exists at the path.")
    var force = false

    @OptionGroup var common: CommonOptions

    func run() throws {
        try runCommand("create", logLevel: common.logLevel) {
            let start = Date()
            let url = StoreArgument.url(store)
            let schema = try SchemaFiles.loadModelOrStore(StoreArgument.url(model))
            if let configuration { _ = try schema.entities(inConfiguration: configuration) }
            let backend = try Backends.forNewStore(at: url, type: type, option: "--type")
            let custom = try MetadataArguments.parse(metadata)
            let local = url.isFileURL
            if !force, (local && FileManager.default.fileExists(atPath: url.path)) || (try? Backends.registry.detectBackend(at: url)) != nil {
                throw StoreError.storeExists(url)
            }
            if local { try Backends.operations.checkDestinationFolder(of: url) }
            // Build the store in a work directory beside the destination (under the store's own name, so the
            // backend treats it as any store), then place it with the operations' staged, atomic copy. A store on a
            // server is built as an SQLite store in a temporary directory, and converted onto the server the same way.
            let workBackend = local ? backend : try Backends.registry.backend(for: "sqlite")
            let meta = StoreMetadata(storeType: workBackend.typeIdentifier, schema: schema, configuration: configuration, custom: custom)
            let workspace = try local ? Self.workspace(for: url) : Self.temporaryWorkspace()
            let staged = workspace.appendingPathComponent(local ? url.lastPathComponent : "staged.sqlite")
            var summary: NDJSONImporter.Summary?
            defer { try? FileManager.default.removeItem(at: workspace) }
            let store = try workBackend.open(at: staged, options: StoreOptions(), creating: meta)
            do {
                if let importFile {
                    let bar = ProgressBar("importing", quiet: common.quiet)
                    defer { bar.finish() }
                    summary = try ImportCommand.importRecords(from: importFile, into: store, historyAuthor: nil, progress: bar.handler)
                }
                try store.close()
            } catch {
                try? store.close()
                throw error
            }
            try Backends.operations.copyStore(from: staged, sourceType: workBackend.typeIdentifier, to: url, type: backend.typeIdentifier,
                                              options: .init(replacingExisting: force))
            var line = "created \(url.displayName) (\(backend.typeIdentifier), \(schema.entities.count) entities, store UUID \(meta.storeUUID.uuidString))"
            if let summary { line += " with \(Console.count(summary.inserted, "record"))" }
            Console.note(line + " in \(Console.seconds(since: start))", quiet: common.quiet)
        }
    }

    static let workspacePrefix = ".storectl-create-"

    /// A fresh work directory in the temporary directory, for a store built here and placed on a server. (Nothing
    /// names it after the store, so one that an interrupted `create` left is not found again: the system's
    /// temporary-file cleanup removes it.)
    static func temporaryWorkspace() throws -> URL {
        let workspace = FileManager.default.temporaryDirectory
            .appendingPathComponent(workspacePrefix + UUID().uuidString + ".d", isDirectory: true)
        do {
            try FileManager.default.createDirectory(at: workspace, withIntermediateDirectories: false)
        } catch {
            throw StoreError.io(workspace, operation: "creating a work directory", reason: error.localizedDescription)
        }
        return workspace
    }

    /// A fresh work directory beside `url`, after removing those an interrupted `create` of the same path left.
    static func workspace(for url: URL) throws -> URL {
        let directory = url.deletingLastPathComponent()
        let suffix = "-" + url.lastPathComponent + ".d"
        for entry in (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
        where entry.hasPrefix(workspacePrefix) && entry.hasSuffix(suffix) {
            try? FileManager.default.removeItem(at: directory.appendingPathComponent(entry))
        }
        let workspace = directory.appendingPathComponent(workspacePrefix + UUID().uuidString + suffix, isDirectory: true)
        do {
            try FileManager.default.createDirectory(at: workspace, withIntermediateDirectories: false)
        } catch {
            throw StoreError.io(workspace, operation: "creating a work directory", reason: error.localizedDescription)
        }
        return workspace
    }
}
