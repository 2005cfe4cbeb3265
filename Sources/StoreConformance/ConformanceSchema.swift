import Foundation
import StoreAPI

/// The schema every conformance check runs on. It exercises every attribute type, inheritance with an abstract
/// root, every relationship kind (one-to-one, one-to-many ordered and unordered, many-to-many, inverse-less,
/// self-referential) and every delete rule, plus single and compound uniqueness constraints.
public enum ConformanceSchema {
    /// The schema (validated each time; it is small).
    public static func make() throws -> Schema {
        try Schema(entities: entities, configurations: ["Catalog": ["Work", "Author", "Agent", "Tag"], "Samples": ["Sample"]])
    }

    /// The same schema with one stored attribute added to `Tag`: version hashes differ, so stores written with
    /// ``make()`` must refuse to open with it.
    public static func makeIncompatible() throws -> Schema {
        var defs = entities
        if let i = defs.firstIndex(where: { $0.name == "Tag" }) {
            defs[i].attributes.append(AttributeDescription(name: "color", type: .string))
        }
        return try Schema(entities: defs)
    }

    static var entities: [EntityDescription] {
        [
            EntityDescription(name: "Sample", attributes: [
                AttributeDescription(name: "i16", type: .integer16),
                AttributeDescription(name: "i32", type: .integer32),
                AttributeDescription(name: "i64", type: .integer64),
                AttributeDescription(name: "dec", type: .decimal),
                AttributeDescription(name: "dbl", type: .double),
                AttributeDescription(name: "flt", type: .float),
                AttributeDescription(name: "str", type: .string),
                AttributeDescription(name: "flag", type: .boolean),
                AttributeDescription(name: "when", type: .date),
                AttributeDescription(name: "blob", type: .binary),
                AttributeDescription(name: "uid", type: .uuid),
                AttributeDescription(name: "link", type: .uri),
                AttributeDescription(name: "archived", type: .transformable, valueTransformerName: "NSSecureUnarchiveFromData"),
                AttributeDescription(name: "label", type: .string, defaultValue: "default label"),
                AttributeDescription(name: "count", type: .integer32, isOptional: false, defaultValue: .integer32(7)),
                AttributeDescription(name: "scratch", type: .string, isTransient: true),
            ]),
            EntityDescription(name: "Work", isAbstract: true, attributes: [
                AttributeDescription(name: "title", type: .string, isOptional: false),
                AttributeDescription(name: "isbn", type: .string),
                AttributeDescription(name: "pages", type: .integer32),
                AttributeDescription(name: "rating", type: .double),
                AttributeDescription(name: "published", type: .date),
            ], relationships: [
                RelationshipDescription(name: "author", destination: "Author", inverse: "works"),
                RelationshipDescription(name: "tags", destination: "Tag", inverse: "works", isToMany: true),
                RelationshipDescription(name: "sequel", destination: "Work", inverse: "prequel"),
                RelationshipDescription(name: "prequel", destination: "Work", inverse: "sequel"),
            ], uniquenessConstraints: [["isbn"]]),
            EntityDescription(name: "Book", parent: "Work", attributes: [
                AttributeDescription(name: "format", type: .string, defaultValue: "paperback"),
            ]),
            EntityDescription(name: "Novel", parent: "Book", attributes: [
                AttributeDescription(name: "genre", type: .string),
            ]),
            EntityDescription(name: "Article", parent: "Work", attributes: [
                AttributeDescription(name: "journal", type: .string),
            ]),
            EntityDescription(name: "Author", attributes: [
                AttributeDescription(name: "name", type: .string, isOptional: false),
                AttributeDescription(name: "country", type: .string),
                AttributeDescription(name: "born", type: .integer16),
            ], relationships: [
                RelationshipDescription(name: "works", destination: "Work", inverse: "author", isToMany: true, isOrdered: true, deleteRule: .cascade),
                RelationshipDescription(name: "agent", destination: "Agent", inverse: "client", deleteRule: .nullify),
                RelationshipDescription(name: "favorites", destination: "Tag", isToMany: true, deleteRule: .noAction),
                RelationshipDescription(name: "mentor", destination: "Author", inverse: "students"),
                RelationshipDescription(name: "students", destination: "Author", inverse: "mentor", isToMany: true),
            ], uniquenessConstraints: [["name", "country"]]),
            EntityDescription(name: "Agent", attributes: [
                AttributeDescription(name: "name", type: .string),
            ], relationships: [
                RelationshipDescription(name: "client", destination: "Author", inverse: "agent", deleteRule: .deny),
            ]),
            EntityDescription(name: "Tag", attributes: [
                AttributeDescription(name: "name", type: .string),
            ], relationships: [
                RelationshipDescription(name: "works", destination: "Work", inverse: "tags", isToMany: true),
            ], uniquenessConstraints: [["name"]]),
        ]
    }
}
