import Foundation
import StoreAPI
import XMLBackend

/// A temporary directory a test creates and removes.
final class TempDirectory {
    let url: URL

    init() throws {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("xmlstore-tests-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    func file(_ name: String) -> URL { url.appendingPathComponent(name) }

    /// Writes `text` to a file named `name` and returns its URL.
    func write(_ text: String, to name: String) throws -> URL {
        let u = file(name)
        try Data(text.utf8).write(to: u)
        return u
    }

    /// The names in the directory, sorted.
    func listing() -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: url.path)) ?? []).sorted()
    }

    deinit { try? FileManager.default.removeItem(at: url) }
}

/// The schema the round-trip tests use: every attribute type, every relationship kind, inheritance.
enum Fixture {
    static let attributeTypes: [(String, AttributeType)] = [
        ("i16", .integer16), ("i32", .integer32), ("i64", .integer64), ("dec", .decimal), ("dbl", .double),
        ("flt", .float), ("str", .string), ("flag", .boolean), ("when", .date), ("blob", .binary), ("ident", .uuid),
        ("link", .uri), ("archived", .transformable),
    ]

    static func schema() throws -> Schema {
        try Schema(entities: [
            EntityDescription(name: "Item", attributes: attributeTypes.map { AttributeDescription(name: $0.0, type: $0.1) }),
            EntityDescription(name: "Author", attributes: [AttributeDescription(name: "name", type: .string)], relationships: [
                RelationshipDescription(name: "books", destination: "Book", inverse: "author", isToMany: true, isOrdered: true),
            ]),
            EntityDescription(name: "Book", attributes: [AttributeDescription(name: "title", type: .string)], relationships: [
                RelationshipDescription(name: "author", destination: "Author", inverse: "books"),
                RelationshipDescription(name: "tags", destination: "Tag", inverse: "books", isToMany: true),
            ]),
            EntityDescription(name: "Tag", attributes: [AttributeDescription(name: "label", type: .string)], relationships: [
                RelationshipDescription(name: "books", destination: "Book", inverse: "tags", isToMany: true),
            ]),
            EntityDescription(name: "Person", attributes: [AttributeDescription(name: "name", type: .string)], relationships: [
                RelationshipDescription(name: "spouse", destination: "Person", inverse: "spouse"),
                RelationshipDescription(name: "parent", destination: "Person", inverse: "children"),
                RelationshipDescription(name: "children", destination: "Person", inverse: "parent", isToMany: true, isOrdered: true),
                RelationshipDescription(name: "pets", destination: "Animal", inverse: "owner", isToMany: true),
            ]),
            EntityDescription(name: "Animal", isAbstract: true, attributes: [AttributeDescription(name: "name", type: .string)], relationships: [
                RelationshipDescription(name: "owner", destination: "Person", inverse: "pets"),
            ]),
            EntityDescription(name: "Dog", parent: "Animal", attributes: [AttributeDescription(name: "barks", type: .boolean)]),
            EntityDescription(name: "Cat", parent: "Animal", attributes: [AttributeDescription(name: "lives", type: .integer16)]),
        ])
    }

    static func metadata(_ schema: Schema, uuid: UUID = UUID()) -> StoreMetadata {
        var m = StoreMetadata(storeType: XMLStoreBackend.typeIdentifier, storeUUID: uuid, schema: schema,
                              custom: ["app": .string("tests"), "n": .integer(3), "nested": .dictionary(["a": .array([.bool(true), .null])])])
        m.configuration = nil
        return m
    }

    /// A record of `entity` with the given attribute and relationship values by name.
    static func record(
        _ schema: Schema, _ entity: String, _ pk: Int64, _ attributes: [String: StoreValue] = [:],
        _ relationships: [String: RelationshipValue] = [:]
    ) -> Record {
        guard let e = schema.entity(named: entity) else { preconditionFailure("fixture entity \(entity)") }
        var r = e.newRecord(primaryKey: pk)
        for (name, value) in attributes {
            guard let i = e.attributeIndex(name) else { preconditionFailure("fixture attribute \(name)") }
            r.attributes[i] = value
        }
        for (name, value) in relationships {
            guard let i = e.relationshipIndex(name) else { preconditionFailure("fixture relationship \(name)") }
            r.relationships[i] = value
        }
        return r
    }

    static let options = StoreOptions(historyTracking: true, timeout: 0.2)
}

/// Opens a store through the backend as the framework does.
func openStore(_ url: URL, creating metadata: StoreMetadata? = nil, options: StoreOptions = Fixture.options) throws -> any PersistentStore {
    try XMLStoreBackend().open(at: url, options: options, creating: metadata)
}

/// Every record of every concrete entity, keyed by record key.
func allRecords(_ store: any PersistentStore) throws -> [RecordKey: Record] {
    var out: [RecordKey: Record] = [:]
    for e in store.metadata.schema.entities where !e.isAbstract {
        for r in try store.fetch(FetchRequest(entity: e.name, includesSubentities: false)) { out[r.key] = r }
    }
    return out
}

/// The path of the shared corpus, or `nil` (the test then says it skipped).
func corpusDirectory(_ sub: String) -> URL? {
    let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    let dir = root.appendingPathComponent("../shared/corpus").appendingPathComponent(sub).standardizedFileURL
    return FileManager.default.fileExists(atPath: dir.path) ? dir : nil
}
