import Foundation
import StoreAPI

/// Two versions of a small library model, for schema-evolution tests: v2 is what an app's next release makes of
/// v1 with every change lightweight migration infers.
public enum EvolutionSchemas {
    /// Author(name, age: Int16, rating: Float, code: Int32, books ↔ Book.author), Book(title, pages: Int16,
    /// isbn?, author), Note(text): the store's first version.
    public static func v1() throws -> Schema {
        try Schema(entities: [
            EntityDescription(name: "Author", attributes: [
                AttributeDescription(name: "name", type: .string, isOptional: false),
                AttributeDescription(name: "age", type: .integer16),
                AttributeDescription(name: "rating", type: .float),
                AttributeDescription(name: "code", type: .integer32),
            ], relationships: [
                RelationshipDescription(name: "books", destination: "Book", inverse: "author", isToMany: true),
            ]),
            EntityDescription(name: "Book", attributes: [
                AttributeDescription(name: "title", type: .string),
                AttributeDescription(name: "pages", type: .integer16),
                AttributeDescription(name: "isbn", type: .string),
            ], relationships: [
                RelationshipDescription(name: "author", destination: "Author", inverse: "books"),
            ]),
            EntityDescription(name: "Note", attributes: [AttributeDescription(name: "text", type: .string)]),
        ])
    }

    /// v1 with: Author.name renamed `fullName` (renaming identifier `name`), `age` widened to Int64, `rating` to
    /// Double, `code` converted to String, a new optional `country` with a default; Book renamed `Title`
    /// (renaming identifier `Book`), `pages` widened to Int32, `title` made required with a default, `author`
    /// to-one → to-many (`authors`, ordered, renaming identifier `author`); Note removed; Publisher added.
    public static func v2() throws -> Schema {
        try Schema(entities: [
            EntityDescription(name: "Author", attributes: [
                AttributeDescription(name: "fullName", type: .string, isOptional: false, renamingIdentifier: "name"),
                AttributeDescription(name: "age", type: .integer64),
                AttributeDescription(name: "rating", type: .double),
                AttributeDescription(name: "code", type: .string),
                AttributeDescription(name: "country", type: .string, defaultValue: .string("unknown")),
            ], relationships: [
                RelationshipDescription(name: "books", destination: "Title", inverse: "authors", isToMany: true),
            ]),
            EntityDescription(name: "Title", attributes: [
                AttributeDescription(name: "title", type: .string, isOptional: false, defaultValue: .string("untitled")),
                AttributeDescription(name: "pages", type: .integer32),
                AttributeDescription(name: "isbn", type: .string),
            ], relationships: [
                RelationshipDescription(name: "authors", destination: "Author", inverse: "books", isToMany: true,
                                        isOrdered: true, renamingIdentifier: "author"),
            ], renamingIdentifier: "Book"),
            EntityDescription(name: "Publisher", attributes: [AttributeDescription(name: "name", type: .string)]),
        ])
    }

    /// v1 with one more change: `transform` applied to the entity named `entity`.
    public static func v1(changing entity: String, _ transform: (inout EntityDescription) -> Void) throws -> Schema {
        let base = try v1()
        return try Schema(entities: base.definitions.map { d in
            var d = d
            if d.name == entity { transform(&d) }
            return d
        })
    }

    /// v1 with Author.age widened to Int32: a version between v1 and the next, for chains of upgrades.
    public static func v1WiderAge() throws -> Schema {
        try v1(changing: "Author") { a in a.attributes[1].type = .integer32 }
    }

    /// `schema` with Book.isbn required: a step the plan infers and only the records refuse (books without an isbn).
    public static func requiringISBN(after schema: Schema) throws -> Schema {
        try Schema(entities: schema.definitions.map { d in
            var d = d
            if d.name == "Book" { d.attributes[2].isOptional = false }
            return d
        })
    }
}
