import Foundation
import StoreAPI
import StoreModels

// The code of the Observation and Concurrency articles (StoreModels.docc), compiled here: ArticleCodeTests checks
// that every Swift block of the articles appears in this file, line by line.

// Observation.md

func showLongBooks(of db: ModelStore) async throws {
    for try await change in db.observe(Book.self, where: \.pages > 300, sortedBy: [.ascending(\.title)]) {
        print(change.results.map(\.title))
        print(change.inserted.count, change.updated.count, change.deleted.count, change.moved.count)
    }
}

func mergingContext(of db: ModelStore) throws -> StoreContext {
    let context = db.coordinator.newContext()
    context.automaticallyMergesChanges = true
    return context
}

func logChanges(of db: ModelStore) -> ChangeObservation {
    db.coordinator.observeChanges { changes in
        print(changes.store, changes.inserted.count, changes.updated.count, changes.deleted.count)
    }
}

// Concurrency.md

func rename(_ book: Book, to title: String, in db: ModelStore) async throws -> Book {
    var renamed = book
    renamed.title = title
    return try await db.write { [renamed] tx in try tx.update(renamed) }
}

actor Importer {
    private let context: StoreContext

    init(coordinator: StoreCoordinator) {
        context = coordinator.newContext()
    }

    func add(title: String, pages: Int) throws -> ObjectID {
        let book = try context.insert("Book", ["title": .string(title), "pages": .integer64(Int64(pages)),
                                               "genre": "fiction"])
        try context.save()
        return book.objectID
    }
}

// AggregatesAndUpserts.md

func readingStats(of db: ModelStore) async throws {
    let (pages, longest, genres, perGenre) = try await db.read { tx in
        (try tx.sum(\Book.pages), try tx.max(\Book.pages), try tx.distinct(\Book.genre),
         try tx.count(Book.self, groupedBy: \.genre, where: \.pages > 100))
    }
    print(pages, longest ?? 0, genres, perGenre.map { "\($0.key): \($0.value)" })
}

func tag(_ title: String, with label: String, in db: ModelStore) async throws {
    try await db.write { tx in
        let tag = try tx.insert(Tag(label: label), onConflict: .mergeByPropertyObjectTrump)
        try tx.insert(Book(title: title, pages: 100, tags: [tag.ref]))
    }
}
