import ArgumentParser
import Foundation
import StoreAPI

struct SchemaCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "schema",
        abstract: "Show a schema: from an Xcode model, a JSON schema file, or a store's own metadata.",
        discussion: """
            Prints entities (with inheritance), attributes, relationships, uniqueness constraints and \
            configurations, and each entity's version hash. --json prints the framework's JSON schema form \
            instead, which converts an Xcode model to JSON (usable with 'storectl create --model').

            Version hashes are Core Data's, in base64 as a Core Data store's metadata holds them \
            (NSStoreModelVersionHashes); every store type records them and a store opens only with a schema whose \
            hashes match. --json adds "versionHashes" (entity → hash), "versionHashesDigest" \
            (NSStoreModelVersionHashesDigest) and "versionChecksum" (NSStoreModelVersionChecksumKey); reading the \
            JSON back ignores them. For a store they are the hashes of the schema shown, which for a Core Data \
            store read from its model cache are the store's own.

            Examples:
              storectl schema Library.xcdatamodeld
              storectl schema Library.xcdatamodeld --json > library-schema.json
              storectl schema library.sqlite
            """
    )

    @Argument(help: "An Xcode model (.xcdatamodeld, .xcdatamodel), a JSON schema file, or a store.")
    var path: String

    @Flag(name: .long, help: "Print the JSON schema form.")
    var json = false

    @OptionGroup var coreDataModel: CoreDataModelOption

    func run() throws {
        try runCommand("schema") {
            coreDataModel.apply()
            let url = StoreArgument.url(path)
            let schema = try SchemaFiles.loadModelOrStore(url)
            if json {
                FileHandle.standardOutput.write(try SchemaWithVersionHashes(schema: schema).jsonData())
                FileHandle.standardOutput.write(Data("\n".utf8))
            } else {
                Console.output(Self.text(schema))
            }
        }
    }

    static func text(_ schema: Schema) -> String {
        var lines: [String] = []
        for e in schema.entities {
            var head = "\(e.name)"
            if let p = e.definition.parent { head += " : \(p)" }
            if e.isAbstract { head += " (abstract)" }
            lines.append(head)
            lines.append("  version hash \(e.versionHash)")
            for a in e.definition.attributes {
                var line = "  \(a.name): \(a.type.rawValue)"
                if a.isOptional { line += "?" }
                if let d = a.defaultValue, !d.isNull { line += " = \(d)" }
                if a.isTransient { line += " (transient)" }
                lines.append(line)
            }
            for r in e.definition.relationships {
                var line = "  \(r.name) → \(r.isToMany ? "[\(r.destination)]" : r.destination)"
                if !r.isToMany && r.isOptional { line += "?" }
                var traits: [String] = []
                if r.isOrdered { traits.append("ordered") }
                if let inv = r.inverse { traits.append("inverse \(inv)") } else { traits.append("no inverse") }
                traits.append("delete: \(r.deleteRule.rawValue)")
                if r.isToMany && (r.minCount > 0 || r.maxCount > 0) { traits.append("count \(r.minCount)…\(r.maxCount > 0 ? "\(r.maxCount)" : "")") }
                if r.isTransient { traits.append("transient") }
                lines.append(line + " (" + traits.joined(separator: ", ") + ")")
            }
            for c in e.definition.uniquenessConstraints { lines.append("  unique (\(c.joined(separator: ", ")))") }
        }
        if !schema.configurations.isEmpty {
            lines.append("")
            lines.append("Configurations:")
            for (name, members) in schema.configurations.sorted(by: { $0.key < $1.key }) {
                lines.append("  \(name): \(members.joined(separator: ", "))")
            }
        }
        let hashes = schema.coreDataVersionHashes
        lines.append("")
        lines.append("Version hashes digest: \(hashes.digest)")
        lines.append("Version checksum:      \(hashes.checksum)")
        return lines.joined(separator: "\n")
    }
}

/// The schema's JSON form with its version hashes beside it, as Core Data's metadata names them. The schema
/// readers ignore the extra keys, so the output still reads back as the schema.
struct SchemaWithVersionHashes: Encodable {
    let schema: Schema

    private enum CodingKeys: String, CodingKey { case versionHashes, versionHashesDigest, versionChecksum }

    func encode(to encoder: any Encoder) throws {
        try schema.encode(to: encoder)
        let hashes = schema.coreDataVersionHashes
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(hashes.base64EntityHashes, forKey: .versionHashes)
        try c.encode(hashes.digest, forKey: .versionHashesDigest)
        try c.encode(hashes.checksum, forKey: .versionChecksum)
    }

    /// Pretty-printed with sorted keys, as ``Schema/jsonData()`` prints the schema alone.
    func jsonData() throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        return try encoder.encode(self)
    }
}
