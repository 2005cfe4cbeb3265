import Foundation
import StoreAPI
import XMLBackend
import StoreTestSupport

/// The schema the round-trip tests use: every attribute type, every relationship kind, inheritance.
enum Fixture {
    static let attributeTypes = TestSchemas.everyAttributeType

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

    static let options = StoreOptions(historyTracking: true, timeout: 0.2)
}

/// Opens a store through the backend as the framework does.
func openStore(_ url: URL, creating metadata: StoreMetadata? = nil, options: StoreOptions = Fixture.options) throws -> any PersistentStore {
    try XMLStoreBackend().open(at: url, options: options, creating: metadata)
}

/// Every record of every concrete entity, keyed by record key.
func allRecords(_ store: any PersistentStore) throws -> [RecordKey: Record] {
    Dictionary(uniqueKeysWithValues: try StoreTestSupport.allRecords(of: store).map { ($0.key, $0) })
}

/// The path of the shared corpus, or `nil` (the test then says it skipped).
func corpusDirectory(_ sub: String) -> URL? { PackagePaths.corpus(sub) }
