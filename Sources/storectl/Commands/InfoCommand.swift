import ArgumentParser
import CoreDataBackend
import Foundation
@_spi(BackendKit) import StoreAPI

struct InfoCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "info",
        abstract: "Show a store's type, identity, schema, record counts, metadata and files.",
        discussion: """
            Reads the store without writing to it. --json prints the same facts as a JSON object for scripts.

            The format version says which version hashes the store records: 2, Core Data's (see 'storectl \
            schema'); 1, the framework's earlier hash, which stores written before kept and still open with.

            Examples:
              storectl info library.sqlite
              storectl info library.lmdb --json | jq '.entities[] | {name, records}'
            """
    )

    @Argument(help: "The store to describe.")
    var store: String

    @Option(name: .long, help: ArgumentHelp("The store's type, when detection cannot tell.", valueName: "type"))
    var type: String?

    @Flag(name: .long, help: "Print JSON.")
    var json = false

    struct Report: Encodable {
        struct EntityInfo: Encodable {
            var name: String
            var parent: String?
            var abstract: Bool
            var attributes: Int
            var relationships: Int
            /// Records of exactly this entity; for an abstract entity, of its whole hierarchy.
            var records: Int
        }
        struct FileInfo: Encodable {
            var path: String
            /// For a directory, the size of everything in it.
            var size: Int64
            var isDirectory: Bool
        }
        var path: String
        var type: String
        var storeUUID: String
        var formatVersion: Int
        var configuration: String?
        var syncOptions: SyncOptions?
        var custom: [String: MetadataValue]
        var versionHashes: [String: String]
        var records: Int
        var historyTransactions: Int
        var entities: [EntityInfo]
        var files: [FileInfo]
        var totalSize: Int64
        /// For a Core Data store: where the model it was read with comes from.
        var coreDataModel: String?
    }

    @OptionGroup var coreDataModel: CoreDataModelOption

    func run() throws {
        try runCommand("info") {
            coreDataModel.apply()
            let url = StoreArgument.url(store)
            let (backend, opened) = try Backends.open(url, type: type, readOnly: true)
            defer { try? opened.close() }
            let metadata = opened.metadata
            let schema = metadata.schema
            let members = try schema.entities(inConfiguration: metadata.configuration)
            var own: [String: Int] = [:]
            for e in members where !e.isAbstract {
                own[e.name] = try opened.count(FetchRequest(entity: e.name, includesSubentities: false))
            }
            let entities = members.map { e in
                Report.EntityInfo(name: e.name, parent: e.definition.parent, abstract: e.isAbstract,
                                  attributes: e.attributes.count, relationships: e.relationships.count,
                                  records: e.isAbstract ? e.hierarchyNames.reduce(0) { $0 + (own[$1] ?? 0) } : own[e.name] ?? 0)
            }
            // The sync engine's log beside the store belongs to it as much as the backend's files do.
            let files = (backend.ownedFiles(ofStoreAt: url) + StoreCompanionFiles.existing(beside: url)).map {
                Report.FileInfo(path: $0.path, size: Self.size(of: $0), isDirectory: Self.isDirectory($0))
            }
            let report = Report(
                path: url.displayName, type: backend.typeIdentifier, storeUUID: metadata.storeUUID.uuidString,
                formatVersion: metadata.formatVersion, configuration: metadata.configuration, syncOptions: metadata.syncOptions,
                custom: metadata.custom, versionHashes: metadata.versionHashes, records: own.values.reduce(0, +), historyTransactions: try opened.history(after: nil).count,
                entities: entities, files: files, totalSize: Self.totalSize(files),
                coreDataModel: try (backend as? CoreDataStoreBackend).map { try Self.describe($0.modelSource(ofStoreAt: url)) })
            if json { try JSONOutput.print(report) } else { Console.output(Self.text(report)) }
        }
    }

    /// Where a Core Data store's model comes from, in words; for an inferred one, the warning that its version
    /// hashes cannot be the store's.
    static func describe(_ source: CoreDataModelSource) -> String {
        switch source {
        case .modelCache: return "the store's model cache (Z_MODELCACHE)"
        case .embeddedSchema: return "the schema this framework keeps in the store's metadata (it created or upgraded the store)"
        case .appModel(let url): return "\(url.displayName) (its version hashes are the store's)"
        case .inferred(let differing):
            let warning = differing.isEmpty ? "" : "; warning: version hashes differ for \(differing.joined(separator: ", "))"
            return "inferred from the tables (no model cache): names and exact types are guesses\(warning)"
        }
    }

    static func text(_ r: Report) -> String {
        var lines = [
            "Store:       \(r.path)",
            "Type:        \(r.type)",
            "Store UUID:  \(r.storeUUID)",
            "Format:      version \(r.formatVersion)"
                + (r.formatVersion <= StoreMetadata.legacyVersionHashFormatVersion ? " (legacy version hashes)" : ""),
        ]
        if let c = r.configuration { lines.append("Configuration: \(c)") }
        if let s = r.syncOptions { lines.append("Sync:        \(s.remote.absoluteString) (\(s.containerIdentifier), \(s.scope.rawValue))") }
        if let m = r.coreDataModel { lines.append("Model:       \(m)") }
        lines.append("Records:     \(Console.count(r.records)) in \(Console.count(r.entities.filter { !$0.abstract }.count, "entity", plural: "entities"))")
        lines.append("History:     \(Console.count(r.historyTransactions, "transaction"))")
        lines.append("")
        lines.append("Entities:")
        let width = r.entities.map(\.name.count).max() ?? 0
        for e in r.entities {
            var line = "  " + e.name.padding(toLength: width, withPad: " ", startingAt: 0)
            // "record " keeps the next column where "records" puts it.
            line += "  " + Console.count(e.records).leftPadded(to: 10) + (e.records == 1 ? " record " : " records")
            line += "  \(Console.count(e.attributes, "attribute")), \(Console.count(e.relationships, "relationship"))"
            if e.abstract { line += ", abstract" }
            if let p = e.parent { line += ", inherits from \(p)" }
            lines.append(line)
        }
        if !r.custom.isEmpty {
            lines.append("")
            lines.append("Custom metadata:")
            for (k, v) in r.custom.sorted(by: { $0.key < $1.key }) { lines.append("  \(k) = \(Self.shortened(StoreValueText.metadata(v)))") }
        }
        // A store on a server has no files.
        guard !r.files.isEmpty else { return lines.joined(separator: "\n") }
        lines.append("")
        lines.append("Files (\(Console.size(r.totalSize)) in all):")
        for f in r.files { lines.append("  \(f.path)\(f.isDirectory ? "/" : "")  \(Console.size(f.size))") }
        return lines.joined(separator: "\n")
    }

    /// The bytes of the listed files: a directory's size counts only what is in it and not listed itself (a
    /// store's directory and the files in it are listed both).
    static func totalSize(_ files: [Report.FileInfo]) -> Int64 {
        var total: Int64 = 0
        for f in files {
            guard f.isDirectory else { total += f.size; continue }
            let inside = files.filter { !$0.isDirectory && $0.path.hasPrefix(f.path + "/") }
            total += f.size - inside.reduce(0) { $0 + $1.size }
        }
        return total
    }

    static func isDirectory(_ url: URL) -> Bool {
        var isDirectory: ObjCBool = false
        return FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory) && isDirectory.boolValue
    }

    /// The size of a file, or of the regular files inside a directory. Read with `stat`, not FileManager's
    /// attributes, which look up the owner's name through NSS — something a static storectl cannot rely on.
    static func size(of url: URL) -> Int64 {
        var st = stat()
        guard stat(url.path, &st) == 0 else { return 0 }
        guard st.st_mode & S_IFMT == S_IFDIR else { return Int64(st.st_size) }
        var total: Int64 = 0
        for name in (try? FileManager.default.subpathsOfDirectory(atPath: url.path)) ?? [] {
            var entry = stat()
            if lstat(url.appendingPathComponent(name).path, &entry) == 0, entry.st_mode & S_IFMT == S_IFREG {
                total += Int64(entry.st_size)
            }
        }
        return total
    }
}

extension String {
    func leftPadded(to width: Int) -> String {
        count >= width ? self : String(repeating: " ", count: width - count) + self
    }
}

/// Short text forms of values for human-readable output.
enum StoreValueText {
    static func metadata(_ v: MetadataValue) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        guard let data = try? encoder.encode(v), let text = String(data: data, encoding: .utf8) else { return "\(v)" }
        return text
    }
}

extension InfoCommand {
    /// A metadata value as one readable line: long ones (a sync engine's state, an embedded document) are cut, saying
    /// how long they are; `--json` prints them whole.
    static func shortened(_ text: String, limit: Int = 120) -> String {
        guard text.count > limit else { return text }
        return "\(text.prefix(limit - 20))… (\(text.count) characters; --json shows all)"
    }
}
