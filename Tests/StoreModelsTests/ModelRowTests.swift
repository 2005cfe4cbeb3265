import Foundation
import StoreAPI
import StoreModels
import StoreTestSupport
import Testing

/// Reading stored records into models: the generated `init(from:)` reads each property through ``ModelRow``'s
/// accessors, which are specialized in the model's module; what they read and the errors they throw must be the
/// same for every value type and store.
@Suite("Model rows")
struct ModelRowTests {
    @Test("A stored value the property's type cannot hold is a type mismatch naming it", arguments: StoreKind.allCases)
    func unreadableValue(kind: StoreKind) async throws {
        let dir = try TemporaryDirectory("model-row-mismatch")
        let db = try kind.open(in: dir)
        // Written through the string-keyed API, as another tool might: a genre no case of `Genre` has.
        let context = db.coordinator.newContext()
        try context.insert("Book", ["title": .string("Lonesome Dove"), "pages": .integer64(843), "genre": .string("western")])
        try context.save()

        let error = await #expect(throws: StoreError.self) {
            try await db.read { try $0.fetch(Book.self) }
        }
        guard case .typeMismatch(let entity, let property, let expected, let got)? = error else {
            Issue.record("expected a type mismatch, got \(String(describing: error))")
            return
        }
        #expect(entity == "Book" && property == "genre" && expected == .string)
        #expect(got.contains("Genre"))
        try db.close()
    }

    @Test("Every kind of property reads back through the specialized accessors", arguments: StoreKind.allCases)
    func everyKindOfProperty(kind: StoreKind) async throws {
        let dir = try TemporaryDirectory("model-row-read")
        let db = try kind.open(in: dir)
        let (shelfRef, bookRef, authorRef) = try await db.write { tx in
            let author = try tx.insert(Author(name: "Ursula K. Le Guin", born: 1929))
            let book = try tx.insert(Book(title: "The Dispossessed", pages: 387, genre: .essay, author: author.ref))
            let shelf = try tx.insert(Shelf(name: "Favourites", books: [book.ref]))
            return (shelf.ref, book.ref, author.ref)
        }
        let (shelf, book, author) = try await db.read { r in
            (try r.model(shelfRef), try r.model(bookRef), try r.model(authorRef))
        }
        // Optional and required attributes, a raw-value enum, a to-one, a to-many and an ordered to-many.
        #expect(author?.born == 1929 && author?.books == [bookRef])
        #expect(book?.title == "The Dispossessed" && book?.pages == 387 && book?.genre == .essay)
        #expect(book?.author == authorRef)
        #expect(shelf?.books == [bookRef])
        // The identity read with the values is the record's.
        #expect(book?.persistentID?.objectID == bookRef.objectID)
        try db.close()
    }
}
