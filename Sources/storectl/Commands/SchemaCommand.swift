import ArgumentParser
import Foundation
import StoreAPI

struct SchemaCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "schema",
        abstract: "Show a schema: from an Xcode model, a JSON schema file, or a store's own metadata.",
        discussion: """
            Prints entities (with inheritance), attributes, relationships, uniqueness constraints and \
            configurations. --json prints the framework's JSON schema form instead, which converts an Xcode model \
            to JSON (usable with 'storectl create --model').

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
            let url = URL(fileURLWithPath: path)
            let schema: Schema
            if SchemaFiles.looksLikeModel(url) || (try? Backends.registry.detectBackend(at: url)) == nil {
                schema = try SchemaFiles.load(url)
            } else {
                schema = try Backends.registry.detectBackend(at: url).readMetadata(at: url).schema
            }
            if json {
                FileHandle.standardOutput.write(try schema.jsonData())
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
        return lines.joined(separator: "\n")
    }
}
