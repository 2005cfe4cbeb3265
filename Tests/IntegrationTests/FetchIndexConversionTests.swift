import Foundation
import StoreAPI
import StoreTestSupport
import Testing

/// Fetch indexes travel with the schema through every store type: converted sqlite → lmdb → xml → sqlite, the
/// schema still has them and the last SQLite store indexes them again.
@Suite struct FetchIndexConversionTests {
    @Test func fetchIndexesSurviveEveryType() throws {
        let schema = try Schema(entities: [
            EntityDescription(
                name: "Note",
                attributes: [AttributeDescription(name: "title", type: .string, isIndexed: true),
                             AttributeDescription(name: "stamp", type: .date)],
                fetchIndexes: [FetchIndex(name: "byStamp", elements: [FetchIndex.Element(property: "stamp", isAscending: false)])]),
        ])
        let dir = try TemporaryDirectory("fetch-index-conversion")
        defer { dir.remove() }
        let operations = StoreOperations(registry: Backends.registry)
        let first = dir.path("a.sqlite")
        try Backends.create("sqlite", at: first, schema: schema).close()
        var previous = first
        for (name, type) in [("b.lmdb", "lmdb"), ("c.xml", "xml"), ("d.sqlite", "sqlite")] {
            let next = dir.path(name)
            let metadata = try operations.copyStore(from: previous, to: next, type: type)
            #expect(metadata.schema == schema, "\(type)")
            #expect(metadata.schema.entity(named: "Note")?.definition.fetchIndexes.map(\.name) == ["byStamp"], "\(type)")
            previous = next
        }
        let reopened = try Backends.open(previous, readOnly: true)
        defer { try? reopened.close() }
        #expect(reopened.metadata.schema == schema)
        let sqlite = try String(contentsOf: previous, encoding: .isoLatin1)
        #expect(sqlite.contains("F_E_Note.Note.byStamp") && sqlite.contains("F_E_Note.Note.title"))
    }
}
