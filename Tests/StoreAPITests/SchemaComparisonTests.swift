import Foundation
import StoreAPI
import Testing

/// A comparison of two stores whose schemas have the same version hashes yet differ (a class name, a default value,
/// user info…) names each differing entity with what differs in it.
@Suite struct SchemaComparisonTests {
    static func schema(_ edit: (inout EntityDescription, inout EntityDescription) -> Void = { _, _ in }) throws -> Schema {
        var note = EntityDescription(
            name: "Note",
            attributes: [AttributeDescription(name: "title", type: .string), AttributeDescription(name: "rank", type: .integer64)],
            relationships: [RelationshipDescription(name: "folder", destination: "Folder", inverse: "notes")])
        var folder = EntityDescription(
            name: "Folder", attributes: [AttributeDescription(name: "name", type: .string)],
            relationships: [RelationshipDescription(name: "notes", destination: "Note", inverse: "folder", isToMany: true)])
        edit(&note, &folder)
        return try Schema(entities: [note, folder])
    }

    /// The schema line of a comparison of an empty store with `a` and one with `b`.
    static func schemaLine(_ a: Schema, _ b: Schema) throws -> String? {
        let x = try MemoryStores.create(schema: a), y = try MemoryStores.create(schema: b)
        return try StoreComparison().compare(x, y).metadata.first { $0.hasPrefix("schema: ") }
    }

    @Test func equalSchemasHaveNoSchemaLine() throws {
        #expect(try Self.schemaLine(try Self.schema(), try Self.schema()) == nil)
    }

    @Test func eachDifferingEntityIsNamedWithWhatDiffers() throws {
        let a = try Self.schema()
        let b = try Self.schema { note, folder in
            note.representedClassName = "NoteMO"
            note.attributes[1].defaultValue = .integer64(3)
            note.userInfo = ["kind": "text"]
            folder.relationships[0].userInfo = ["shown": "yes"]
        }
        #expect(a.versionHashes == b.versionHashes, "what differs is what version hashes leave out")
        #expect(try Self.schemaLine(a, b) == "schema: entities differ in what version hashes leave out: "
            + "Folder (relationship notes), Note (class name: none in A, NoteMO in B; user info; attribute rank)")
    }

    /// Core Data's version hash leaves the order of an entity's properties out.
    @Test func membersInAnotherOrderAreNamedAsSuch() throws {
        let a = try Self.schema()
        let b = try Self.schema { note, _ in note.attributes.reverse() }
        #expect(a.versionHashes == b.versionHashes)
        #expect(try Self.schemaLine(a, b) == "schema: entities differ in what version hashes leave out: Note (attribute order)")
    }
}
