import Foundation
import Logging
import SQLiteBackend
import StoreAPI
import StoreTestSupport
import Testing

/// The "Which predicates run in the engine" article's example, run: through a context on a SQLite store, its
/// predicate logs nothing (it ran in SQL), a comparison of two key paths logs the fallback, and both return what
/// the predicate asks for.
@Suite struct SQLiteInEngineArticleTests {
    static let registry = BackendRegistry(backends: [SQLiteStoreBackend()])

    static func schema() throws -> Schema {
        try Schema(entities: [
            EntityDescription(
                name: "Book",
                attributes: [AttributeDescription(name: "title", type: .string), AttributeDescription(name: "price", type: .integer32),
                             AttributeDescription(name: "pages", type: .integer32)],
                relationships: [RelationshipDescription(name: "tags", destination: "Tag", inverse: "books", isToMany: true)]),
            EntityDescription(
                name: "Tag", attributes: [AttributeDescription(name: "name", type: .string)],
                relationships: [RelationshipDescription(name: "books", destination: "Book", inverse: "tags", isToMany: true)]),
        ])
    }

    @Test func theExampleRunsInSQLAndAFallbackIsLogged() throws {
        let dir = try TemporaryDirectory("in-engine")
        let coordinator = StoreCoordinator(schema: try Self.schema(), registry: Self.registry)
        try coordinator.addStore(StoreDescription(url: dir.path("books.sqlite"), type: "sqlite"))
        defer { for s in coordinator.stores { try? coordinator.removeStore(s) } }
        let context = coordinator.newContext()
        let swift = try context.insert("Tag", ["name": "Swift"])
        let other = try context.insert("Tag", ["name": "Rust"])
        for (title, tag, price, pages) in [("Swift Concurrency", swift, 30, 20), ("Straße der Concurrency", swift, 10, 300),
                                           ("Rust Concurrency", other, 5, 400), ("Swift Basics", swift, 1, 2)] {
            let book = try context.insert("Book", ["title": .string(title), "price": .integer32(Int32(price)), "pages": .integer32(Int32(pages))])
            try book.addObject(tag, forKey: "tags")
        }
        try context.save()

        let capture = LogCapture()
        let reader = coordinator.newContext()
        let books = try withLogger(capture.logger(level: .debug)) { _ in
            try reader.fetch("Book", where: "ANY tags.name ==[c] %@ AND title LIKE[c] %@", "swift", "*concurrency*")
        }
        #expect(Set(try books.map { try $0.value(forKey: "title") }) == ["Swift Concurrency", "Straße der Concurrency"])
        #expect(!capture.all.contains { $0.message == "predicate evaluated in memory" })

        let cheap = try withLogger(capture.logger(level: .debug)) { _ in try reader.fetch("Book", where: "price < pages") }
        #expect(cheap.count == 3)
        #expect(capture.all.filter { $0.message == "predicate evaluated in memory" }.count == 1)
    }
}
