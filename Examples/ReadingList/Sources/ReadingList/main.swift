import Foundation
import LMDBBackend
import SQLiteBackend
import StoreAPI
import StoreModels

// A reading list kept in ./ReadingListData. The first run creates it as an SQLite store and, at the end, migrates it
// to LMDB; later runs open the LMDB store and add to it. Every run: insert, typed fetch, observation (of its own
// write and of another context's), a backup.

BackendRegistry.shared.register(SQLiteStoreBackend())
BackendRegistry.shared.register(LMDBStoreBackend())

// The app's work runs in a nonisolated function: its observation iterator is a local value, not main-actor state.
func runReadingList() async throws {
    let folder = URL(filePath: FileManager.default.currentDirectoryPath).appending(path: "ReadingListData")
    let sqliteURL = folder.appending(path: "library.sqlite")
    let lmdbURL = folder.appending(path: "library.lmdb")
    let backups = folder.appending(path: "backups")
    try FileManager.default.createDirectory(at: backups, withIntermediateDirectories: true)

    let models: [any PersistentModel.Type] = [Author.self, Book.self, Tag.self]
    let migrated = FileManager.default.fileExists(atPath: lmdbURL.path)
    let db = migrated
        ? try ModelStore(for: models, at: lmdbURL, type: "lmdb")
        : try ModelStore(for: models, at: sqliteURL, type: "sqlite")
    print("store: \(migrated ? lmdbURL.lastPathComponent : sqliteURL.lastPathComponent)")

    // Observe the long books before writing: the first emission is what is stored now.
    var longBooks = db.observe(Book.self, where: \.pages > 300, sortedBy: [.ascending(\.title)]).makeAsyncIterator()
    let before = try await longBooks.next()
    print("long books before this run: \(before?.results.count ?? 0)")

    // Insert: the author once, a new book each run. The tag label is unique: inserting "sf" again updates the stored
    // tag instead of failing the write (an upsert, under Core Data's mergeByPropertyObjectTrump policy).
    let run = try await db.read { try $0.count(Book.self, where: \.pages < 900) } + 1   // notes: 900 pages and more
    try await db.write { tx in
        let author = try tx.fetch(Author.self, where: \.name == "Ursula K. Le Guin").first
            ?? (try tx.insert(Author(name: "Ursula K. Le Guin")))
        let sf = try tx.insert(Tag(label: "sf"), onConflict: .mergeByPropertyObjectTrump)
        try tx.insert(Book(title: "Volume \(run)", pages: 300 + 20 * run, added: Date(), author: author.ref, tags: [sf.ref]))
    }

    // The observation sees the write: it added a long book.
    if let change = try await longBooks.next() {
        print("observed: \(change.inserted.map(\.title)) inserted, \(change.results.count) long books now")
    }

    // Another context of the same coordinator saves — as an import or a sync pull does, through the string-keyed
    // API: the observation sees that change too, with what it inserted.
    let importer = db.coordinator.newContext()
    _ = try importer.insert("Book", ["title": .string("Notes on Volume \(run)"), "pages": .integer64(Int64(900 + run)),
                                     "genre": "essay", "added": .date(Date())])
    try importer.save()
    if let change = try await longBooks.next() {
        print("observed from another context: \(change.inserted.map(\.title)) inserted, \(change.results.count) long books now")
    }

    // Typed fetch: key-path predicates and sorts, following relationships by reference.
    let (books, authorName) = try await db.read { tx -> ([Book], String?) in
        let books = try tx.fetch(Book.self, where: .beginsWith(\.title, "volume", options: .caseInsensitive),
                                 sortedBy: [.descending(\.pages)])
        return (books, try books.first?.author.flatMap { try tx.model($0) }?.name)
    }
    print("books: \(books.map { "\($0.title) (\($0.pages) p.)" }.joined(separator: ", ")) by \(authorName ?? "?")")

    // An aggregate, computed by the store (in SQL on SQLite): pages per genre, and the one "sf" tag every run used.
    let (pagesPerGenre, tags) = try await db.read { tx in
        (try tx.sum(\Book.pages, groupedBy: \.genre), try tx.count(Tag.self))
    }
    print("pages per genre: \(pagesPerGenre.map { "\($0.key.rawValue) \($0.value)" }.joined(separator: ", ")); tags: \(tags)")

    // A backup, named by run so that each run keeps its own.
    let store = try db.coordinator.store(for: "Book")
    let backup = try db.coordinator.backupStore(
        store, to: backups.appending(path: "run-\(run).\(migrated ? "lmdb" : "sqlite")"), label: "run \(run)")
    print("backup: \(backup.url.lastPathComponent)")

    // The first run migrates the store to LMDB and removes the SQLite store it came from, so the next run opens LMDB.
    if !migrated {
        try db.coordinator.migrateStore(store, to: lmdbURL, type: "lmdb")
        try db.coordinator.destroyStore(at: sqliteURL, type: "sqlite")
        print("migrated to \(lmdbURL.lastPathComponent); removed \(sqliteURL.lastPathComponent)")
    }
    try db.close()
}

try await runReadingList()
