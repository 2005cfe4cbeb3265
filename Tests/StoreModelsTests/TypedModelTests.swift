import Foundation
import StoreAPI
import StoreModels
import StoreTestSupport
import Testing

@Suite("Typed models")
struct TypedModelTests {
    @Test("The schema is derived from the types")
    func derivedSchema() throws {
        let schema = try Schema(models: allModels)
        let book = try #require(schema.entity(named: "Book"))
        #expect(book.attributes.map(\.name) == ["title", "pages", "genre"])
        #expect(book.attribute("pages")?.type == .integer64)
        #expect(book.attribute("genre")?.type == .string)
        #expect(book.attribute("title")?.isOptional == false)
        let author = try #require(book.relationship("author"))
        #expect(author.destination == "Author" && !author.isToMany && author.inverse == "books")
        #expect(book.relationship("tags")?.inverse == "books")
        #expect(schema.entity(named: "Tag")?.relationship("books")?.inverse == "tags")
        #expect(schema.entity(named: "Author")?.relationship("books")?.deleteRule == .cascade)
        #expect(schema.entity(named: "Shelf")?.relationship("books")?.isOrdered == true)
        #expect(schema.entity(named: "Tag")?.uniquenessConstraints == [["label"]])
        let everything = try #require(schema.entity(named: "Everything"))
        #expect(everything.attribute("dimensions")?.type == .transformable)
        #expect(everything.attribute("rating")?.type == .integer16)
        #expect(everything.attribute("maybeGenre")?.isOptional == true)
        #expect(everything.attribute("i32")?.type == .integer32)
    }

    @Test("Insert, fetch, update and delete", arguments: StoreKind.allCases)
    func crud(kind: StoreKind) async throws {
        let dir = try TemporaryDirectory("typed-crud")
        let db = try kind.open(in: dir)
        let inserted = try await db.write { tx in
            try tx.insert(Book(title: "The Dispossessed", pages: 387, genre: .fiction))
        }
        #expect(inserted.persistentID != nil)
        try await db.write { tx in
            try tx.insert(Book(title: "The Left Hand of Darkness", pages: 304))
            try tx.insert(Book(title: "Steering the Craft", pages: 176, genre: .essay))
        }
        var books = try await db.read { try $0.fetch(Book.self, sortedBy: [.ascending(\.title)]) }
        #expect(books.map(\.title) == ["Steering the Craft", "The Dispossessed", "The Left Hand of Darkness"])
        #expect(books[0].genre == .essay)

        books[1].pages = 400
        let updated = books[1]
        let saved = try await db.write { try $0.update(updated) }
        #expect(saved.pages == 400)
        let reread = try await db.read { try $0.fetch(Book.self, where: \.title == "The Dispossessed") }
        #expect(reread.map(\.pages) == [400])

        let doomed = books[0]
        try await db.write { try $0.delete(doomed) }
        let count = try await db.read { try $0.count(Book.self) }
        #expect(count == 2)
        try db.close()
    }

    @Test("Every attribute type round-trips", arguments: StoreKind.allCases)
    func everyType(kind: StoreKind) async throws {
        let dir = try TemporaryDirectory("typed-types")
        let db = try kind.open(in: dir)
        let value = Everything(
            i16: -12, i32: 1 << 20, i64: Int64.max - 1, int: -42, decimal: Decimal(string: "12.345") ?? 0,
            double: 0.1, float: 2.5, string: "naïve ☕️", bool: true,
            date: Date(timeIntervalSinceReferenceDate: 123_456.789), data: Data([0, 1, 2, 255]),
            uuid: UUID(), url: try #require(URL(string: "https://example.com/a?b=c")),
            dimensions: Dimensions(width: 12.5, height: 20), rating: .great, maybeString: nil,
            maybeDate: Date(timeIntervalSinceReferenceDate: 0), maybeGenre: .poetry)
        try await db.write { try $0.insert(value) }
        let fetched = try #require(try await db.read { try $0.fetch(Everything.self) }.first)
        var expected = value
        expected.persistentID = fetched.persistentID
        #expect(fetched == expected)
        try db.close()
        guard kind != .memory else { return }
        // Read back from the file, through a store opened anew.
        let again = try kind.open(in: dir)
        let reread = try #require(try await again.read { try $0.fetch(Everything.self) }.first)
        #expect(reread == expected)
        try again.close()
    }

    @Test("Predicates and sorts from key paths", arguments: StoreKind.allCases)
    func predicates(kind: StoreKind) async throws {
        let dir = try TemporaryDirectory("typed-predicates")
        let db = try kind.open(in: dir)
        try await db.write { tx in
            for (title, pages, genre) in [("The Dispossessed", 387, Genre.fiction), ("The Telling", 264, .fiction),
                                          ("Always Coming Home", 523, .fiction), ("Words Are My Matter", 324, .essay)] {
                try tx.insert(Book(title: title, pages: pages, genre: genre))
            }
        }
        let long = try await db.read {
            try $0.fetch(Book.self, where: \.pages > 300 && .beginsWith(\.title, "the", options: .caseInsensitive),
                         sortedBy: [.descending(\.pages)])
        }
        #expect(long.map(\.title) == ["The Dispossessed"])
        let essays = try await db.read { try $0.fetch(Book.self, where: \.genre == .essay || \.pages < 270, sortedBy: [.ascending(\.pages)]) }
        #expect(essays.map(\.title) == ["The Telling", "Words Are My Matter"])
        let notFiction = try await db.read { try $0.count(Book.self, where: !(\.genre == Genre.fiction)) }
        #expect(notFiction == 1)
        let top = try await db.read { try $0.fetch(Book.self, sortedBy: [.descending(\.pages)], limit: 2) }
        #expect(top.map(\.pages) == [523, 387])
        let some = try await db.read { try $0.fetch(Book.self, where: .isIn(\.pages, [264, 523]), sortedBy: [.ascending(\.title)]) }
        #expect(some.map(\.pages) == [523, 264])
        // A computed property is not stored: the fetch says which key path, it does not crash.
        await #expect(throws: StoreError.self) {
            try await db.read { try $0.fetch(Book.self, where: \.isLong == true) }
        }
        try db.close()
    }

    @Test("To-one, to-many and ordered relationships", arguments: StoreKind.allCases)
    func relationships(kind: StoreKind) async throws {
        let dir = try TemporaryDirectory("typed-relationships")
        let db = try kind.open(in: dir)
        let (authorRef, bookRefs) = try await db.write { tx in
            let author = try tx.insert(Author(name: "Ursula K. Le Guin", born: 1929))
            let sf = try tx.insert(Tag(label: "sf"))
            let classic = try tx.insert(Tag(label: "classic"))
            let a = try tx.insert(Book(title: "The Dispossessed", pages: 387, author: author.ref, tags: [sf.ref, classic.ref]))
            let b = try tx.insert(Book(title: "The Lathe of Heaven", pages: 184, author: author.ref, tags: [sf.ref]))
            let c = try tx.insert(Book(title: "Lavinia", pages: 279, author: author.ref))
            try tx.insert(Shelf(name: "bedside", books: [c.ref, a.ref, b.ref]))
            return (author.ref, [a.ref, b.ref, c.ref])
        }
        let author = try #require(try await db.read { try $0.model(authorRef) })
        #expect(Set(author.books) == Set(bookRefs))
        let shelf = try #require(try await db.read { try $0.fetch(Shelf.self) }.first)
        #expect(shelf.books == [bookRefs[2], bookRefs[0], bookRefs[1]])
        let shelved = try await db.read { try $0.models(shelf.books) }
        #expect(shelved.map(\.title) == ["Lavinia", "The Dispossessed", "The Lathe of Heaven"])
        let sf = try #require(try await db.read { try $0.fetch(Tag.self, where: \.label == "sf") }.first)
        #expect(Set(sf.books) == Set(bookRefs[0...1]))
        let lathe = try #require(try await db.read { try $0.model(bookRefs[1]) })
        #expect(lathe.author == authorRef)

        // Reordering an ordered relationship keeps the new order.
        var reordered = shelf
        reordered.books = [bookRefs[1], bookRefs[0]]
        let changed = reordered
        try await db.write { try $0.update(changed) }
        #expect(try await db.read { try $0.fetch(Shelf.self) }.first?.books == [bookRefs[1], bookRefs[0]])

        // A reference to a model never inserted is refused, and nothing of that write is saved.
        await #expect(throws: StoreError.self) {
            try await db.write { tx in
                try tx.insert(Book(title: "Orphan", pages: 1, author: Author(name: "nobody").ref))
            }
        }
        #expect(try await db.read { try $0.count(Book.self, where: \.title == "Orphan") } == 0)

        // Deleting the author cascades to the books.
        try await db.write { try $0.delete(authorRef) }
        #expect(try await db.read { try $0.count(Book.self) } == 0)
        try db.close()
    }

    @Test("An update writes only the properties it changed", arguments: [StoreKind.sqlite, .lmdb])
    func updateMerges(kind: StoreKind) async throws {
        let dir = try TemporaryDirectory("typed-merge")
        let db = try kind.open(in: dir)
        let book = try await db.write { try $0.insert(Book(title: "Lavinia", pages: 279)) }
        var first = book
        var second = book
        first.pages = 280
        second.title = "Lavinia (2008)"
        let a = first, b = second
        try await db.write { try $0.update(a) }
        try await db.write { try $0.update(b) }
        let stored = try #require(try await db.read { try $0.fetch(Book.self) }.first)
        #expect(stored.title == "Lavinia (2008)" && stored.pages == 280)
        try db.close()
    }

    @Test("Writes and reads from many tasks at once", arguments: [StoreKind.sqlite, .lmdb, .memory])
    func concurrentTasks(kind: StoreKind) async throws {
        let dir = try TemporaryDirectory("typed-tasks")
        let db = try kind.open(in: dir)
        try await withThrowingTaskGroup(of: Int.self) { group in
            for writer in 0..<8 {
                group.addTask {
                    try await db.write { tx in
                        for i in 0..<25 { try tx.insert(Book(title: "w\(writer)-\(i)", pages: i)) }
                    }
                    return 0
                }
                group.addTask {
                    // Each read sees whole writes only: a multiple of a write's 25 books.
                    try await db.read { try $0.count(Book.self) }
                }
            }
            for try await seen in group { #expect(seen % 25 == 0) }
        }
        #expect(try await db.read { try $0.count(Book.self) } == 200)
        try db.close()
    }

    @Test("The types are checked against a given schema, naming what differs")
    func schemaCheck() throws {
        var entities = try Schema(models: allModels).definitions
        let b = try #require(entities.firstIndex { $0.name == "Book" })
        let p = try #require(entities[b].attributes.firstIndex { $0.name == "pages" })
        entities[b].attributes[p].type = .string
        entities[b].attributes.append(AttributeDescription(name: "isbn", type: .string, isOptional: false))
        let schema = try Schema(entities: entities)
        do {
            _ = try ModelStore(for: allModels, at: nil, type: "memory", schema: schema, registry: StoreKind.registry)
            Issue.record("a schema that differs from the types was accepted")
        } catch let error as StoreError {
            let text = error.description
            #expect(text.contains("'Book.pages' is string in the schema, integer64 in the type"), "\(text)")
            #expect(text.contains("'Book.isbn' is required in the schema"), "\(text)")
        }
        // The schema the types describe passes.
        _ = try ModelStore(for: allModels, at: nil, type: "memory", schema: try Schema(models: allModels),
                           registry: StoreKind.registry)
    }
}
