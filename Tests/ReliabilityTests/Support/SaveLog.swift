import Foundation
import StoreAPI

/// What `storestress saves` left in a store, read back and checked: the saves of one writer must form an unbroken
/// prefix 1…n, each save whole (its author, both books linked to it, the counter, one history transaction).
struct SaveLog {
    /// Committed saves per writer.
    var committed: [String: Int] = [:]
    /// Everything that is not a whole prefix.
    var problems: [String] = []

    /// The last "saved k" a storestress process printed (0 when none).
    static func lastPrinted(_ output: String) -> Int {
        output.split(separator: "\n").compactMap { line -> Int? in
            guard line.hasPrefix("saved ") else { return nil }
            return Int(line.dropFirst("saved ".count))
        }.max() ?? 0
    }

    /// Reads the store at `url` read-only, after the engine's integrity check and the verifier. The writers in
    /// `history` saved with history tracking on: each of their saves must have left one transaction.
    init(store url: URL, writers: [String], history: Set<String> = []) {
        do {
            guard let type = Backends.storeType(at: url) else {
                problems.append("\(url.path): no store there")
                return
            }
            let integrity = try Backends.backend(type).checkIntegrity(at: url)
            problems += integrity.map { "integrity: \($0)" }
            let store = try Backends.open(url)
            defer { try? store.close() }
            problems += try StoreVerifier().verify(store).map { "verify: \($0)" }
            try read(store, writers: writers, history: history)
        } catch {
            problems.append("\(url.path): \(error)")
        }
    }

    private mutating func read(_ store: any PersistentStore, writers: [String], history: Set<String>) throws {
        let schema = store.metadata.schema
        guard let author = schema.entity(named: "Author"), let book = schema.entity(named: "Book"),
              let publisher = schema.entity(named: "Publisher"),
              let authorName = author.attributeIndex("name"), let bookTitle = book.attributeIndex("title"),
              let bookAuthor = book.relationshipIndex("author"), let publisherName = publisher.attributeIndex("name"),
              let revenue = publisher.attributeIndex("revenue")
        else {
            problems.append("the store does not have the Library schema")
            return
        }
        func text(_ v: StoreValue) -> String? { if case .string(let s) = v { s } else { nil } }
        let authors = try store.fetch(FetchRequest(entity: "Author"))
        let books = try store.fetch(FetchRequest(entity: "Book"))
        let publishers = try store.fetch(FetchRequest(entity: "Publisher"))
        let transactions = history.isEmpty ? [] : try store.history(after: nil)
        for w in writers {
            var numbers: [Int] = []
            var keyOfSave: [Int: Int64] = [:]
            for a in authors {
                guard let name = text(a.attributes[authorName]), name.hasPrefix("\(w)-"), let k = Int(name.dropFirst(w.count + 1))
                else { continue }
                numbers.append(k)
                keyOfSave[k] = a.primaryKey
            }
            let n = numbers.count
            if numbers.sorted() != Array(stride(from: 1, through: n, by: 1)) {
                problems.append("writer \(w): saves \(numbers.sorted().prefix(20)) are not 1…\(n)")
            }
            var booksOfSave: [Int: [String]] = [:]
            for b in books {
                guard let title = text(b.attributes[bookTitle]), title.hasPrefix("\(w)-") else { continue }
                let parts = title.dropFirst(w.count + 1).split(separator: "-")
                guard parts.count == 2, let k = Int(parts[0]) else { continue }
                booksOfSave[k, default: []].append(String(parts[1]))
                if b.relationships[bookAuthor].keys != [keyOfSave[k] ?? -1] {
                    problems.append("writer \(w): book \(title) is not linked to its author")
                }
            }
            for k in Set(booksOfSave.keys).union(numbers) where booksOfSave[k]?.sorted() != ["a", "b"] {
                problems.append("writer \(w): save \(k) is torn: books \(booksOfSave[k] ?? []), author \(keyOfSave[k] != nil ? "present" : "missing")")
            }
            let counter = publishers.first { text($0.attributes[publisherName]) == "counter-\(w)" }
            let value: Int64 = switch counter?.attributes[revenue] {
            case .integer64(let v)?: v
            case .integer32(let v)?: Int64(v)
            default: 0
            }
            if value != Int64(n) { problems.append("writer \(w): the counter says \(value), the store holds \(n) saves") }
            if history.contains(w) {
                let mine = transactions.filter { $0.author == w }.count
                if mine != n { problems.append("writer \(w): \(mine) history transactions for \(n) saves") }
            }
            committed[w] = n
        }
    }
}

extension SaveLog {
    /// Save k of `writer` exactly as `storestress saves` makes it (the author, its two books, the counter), through
    /// a context of this process.
    static func save(_ k: Int64, writer: String, in context: StoreContext) throws {
        let author = try context.insert("Author", ["name": .string("\(writer)-\(k)")])
        for suffix in ["a", "b"] {
            let book = try context.insert("Book", ["title": .string("\(writer)-\(k)-\(suffix)"), "uid": .uuid(UUID()),
                                                   "pages": .integer32(Int32(truncatingIfNeeded: k))])
            try book.setObject(author, forKey: "author")
        }
        if let counter = try context.fetch("Publisher", where: "name == %@", .string("counter-\(writer)")).first {
            try counter.setValue(.integer64(k), forKey: "revenue")
        } else {
            try context.insert("Publisher", ["name": .string("counter-\(writer)"), "revenue": .integer64(k)])
        }
        try context.save()
    }
}
