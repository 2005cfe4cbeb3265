import Foundation
import StoreAPI

/// One `object` element of a Core Data XML store, as written.
struct RawObject {
    struct Attribute {
        var name: String
        var type: AttributeType
        var typeName: String
        var text: String
        var line: Int
    }

    struct Relationship {
        var name: String
        var minCount: Int
        var maxCount: Int
        var destination: String
        var idrefs: [String]
        var line: Int
        var isToMany: Bool { maxCount != 1 }
    }

    var type: String
    var id: String
    var line: Int
    var attributes: [Attribute] = []
    var relationships: [Relationship] = []
}

/// Reads the objects of a store Core Data wrote (no `storeMetadata`): they are gathered first, because the schema
/// has to be inferred from all of them before the metadata — which must come first — can be delivered.
struct CoreDataStoreImporter {
    let reader: LibXMLReader
    let info: XMLDatabaseInfo

    func read(_ body: (AtomicStoreElement) throws -> Void) throws {
        let r = reader
        var objects: [RawObject] = []
        while try r.nextChildElement(parentDepth: 0) {
            guard r.name == "object" else { throw r.corrupt("unexpected <\(r.name)> in <database>") }
            objects.append(try readObject())
        }
        let (metadata, records) = try CoreDataSchemaInference(url: r.url, info: info, objects: objects).build()
        try body(.metadata(metadata))
        for record in records { try body(.record(record)) }
    }

    private func readObject() throws -> RawObject {
        let r = reader
        guard let type = r.attribute("type"), !type.isEmpty else { throw r.corrupt("<object> without a type") }
        guard let id = r.attribute("id"), !id.isEmpty else { throw r.corrupt("<object> of \(type) without an id") }
        var object = RawObject(type: type, id: id, line: r.line)
        guard !r.isEmptyElement else { return object }
        var names: Set<String> = []
        let depth = r.depth
        while try r.nextChildElement(parentDepth: depth) {
            let line = r.line
            switch r.name {
            case "attribute":
                guard let name = r.attribute("name"), !name.isEmpty else { throw r.corrupt("<attribute> without a name in object '\(id)'") }
                guard names.insert(name).inserted else { throw r.corrupt("property '\(name)' appears twice in object '\(id)'") }
                let typeName = r.attribute("type") ?? ""
                guard let attributeType = XMLStoreFormat.attributeType(named: typeName) else {
                    throw r.corrupt("unknown attribute type '\(typeName)' for attribute '\(name)' of object '\(id)'")
                }
                let text = try XMLHistoryCoding.readEscapableText(r)
                object.attributes.append(.init(name: name, type: attributeType, typeName: typeName, text: text, line: line))
            case "relationship":
                guard let name = r.attribute("name"), !name.isEmpty else { throw r.corrupt("<relationship> without a name in object '\(id)'") }
                guard names.insert(name).inserted else { throw r.corrupt("property '\(name)' appears twice in object '\(id)'") }
                let spec = r.attribute("type") ?? ""
                let counts = spec.split(separator: "/", omittingEmptySubsequences: false).map { Int($0) }
                guard counts.count == 2, let minCount = counts[0], let maxCount = counts[1], minCount >= 0, maxCount >= 0 else {
                    throw r.corrupt("relationship '\(name)' of object '\(id)' has type '\(spec)', not 'min/max'")
                }
                guard let destination = r.attribute("destination"), !destination.isEmpty else {
                    throw r.corrupt("relationship '\(name)' of object '\(id)' has no destination")
                }
                let idrefs = (r.attribute("idrefs") ?? "").split(whereSeparator: { $0 == " " || $0 == "\n" || $0 == "\t" || $0 == "\r" })
                    .map(String.init)
                try r.skipElement()
                object.relationships.append(.init(name: name, minCount: minCount, maxCount: maxCount,
                                                  destination: destination, idrefs: idrefs, line: line))
            default:
                throw r.corrupt("unexpected <\(r.name)> in <object>")
            }
        }
        return object
    }
}
