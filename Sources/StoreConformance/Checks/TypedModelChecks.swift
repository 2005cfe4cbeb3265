import Foundation
import StoreAPI
import StoreModels
import Testing

// The typed models the typed-model group stores: a reading list with every relationship kind and one model with
// every attribute type. (Entity names are the type names.)

enum TypedGenre: String, ModelValue { case fiction, essay }

struct TypedSize: Codable, Hashable, CodableModelValue {
    var width: Double
    var height: Double
}

@Model struct TypedAuthor {
    var name: String
    @Relationship(inverse: \TypedBook.author, deleteRule: .cascade) var books: [ModelRef<TypedBook>] = []
}

@Model struct TypedBook {
    var title: String
    var pages: Int
    var genre: TypedGenre
    var author: ModelRef<TypedAuthor>?
    @Relationship(inverse: \TypedTag.books) var tags: [ModelRef<TypedTag>] = []
    var shelf: ModelRef<TypedShelf>?
}

@Model struct TypedTag {
    @Attribute(unique: true) var label: String
    var books: [ModelRef<TypedBook>] = []
}

@Model struct TypedShelf {
    var name: String
    @Relationship(inverse: \TypedBook.shelf, ordered: true) var books: [ModelRef<TypedBook>] = []
}

@Model struct TypedValues: Equatable {
    var i16: Int16
    var i32: Int32
    var i64: Int64
    var int: Int
    var decimal: Decimal
    var double: Double
    var float: Float
    var string: String
    var bool: Bool
    var date: Date
    var data: Data
    var uuid: UUID
    var url: URL
    var size: TypedSize
    var maybeString: String?
    var maybeDate: Date?
    var maybeGenre: TypedGenre?
}

extension ConformanceSuite {
    static let typedModels: [any PersistentModel.Type] = [
        TypedAuthor.self, TypedBook.self, TypedTag.self, TypedShelf.self, TypedValues.self,
    ]

    func checkTypedModels(_ h: Harness) throws {
        let url = h.storeURL("typed")
        let open = {
            try ModelStore(for: Self.typedModels, at: url, type: h.backend.typeIdentifier, registry: registry,
                           externalChangeCheckInterval: nil)
        }
        var db = try open()
        defer { try? db.close() }

        // Insert with relationships: inverses are kept, references followed.
        let (authorRef, bookRefs) = try db.writeNow { tx in
            let author = try tx.insert(TypedAuthor(name: "Ursula K. Le Guin"))
            let sf = try tx.insert(TypedTag(label: "sf"))
            let a = try tx.insert(TypedBook(title: "The Dispossessed", pages: 387, genre: .fiction, author: author.ref,
                                            tags: [sf.ref]))
            let b = try tx.insert(TypedBook(title: "The Lathe of Heaven", pages: 184, genre: .fiction, author: author.ref,
                                            tags: [sf.ref]))
            let c = try tx.insert(TypedBook(title: "Words Are My Matter", pages: 323, genre: .essay, author: author.ref))
            try tx.insert(TypedShelf(name: "bedside", books: [c.ref, a.ref, b.ref]))
            return (author.ref, [a.ref, b.ref, c.ref])
        }
        try db.readNow { tx in
            let author = try #require(try tx.model(authorRef))
            #expect(Set(author.books) == Set(bookRefs), "the inverse to-many holds every book")
            let sf = try #require(try tx.fetch(TypedTag.self, where: \.label == "sf").first)
            #expect(Set(sf.books) == Set(bookRefs[0...1]))
            #expect(try tx.model(bookRefs[2])?.author == authorRef)
            let shelf = try #require(try tx.fetch(TypedShelf.self).first)
            if h.backend.capabilities.contains(.orderedRelationships) {
                #expect(shelf.books == [bookRefs[2], bookRefs[0], bookRefs[1]], "an ordered to-many keeps its order")
            } else {
                #expect(Set(shelf.books) == Set(bookRefs))
            }
            // Key-path predicates and sorts.
            let long = try tx.fetch(TypedBook.self, where: \.pages > 300, sortedBy: [.ascending(\.title)])
            #expect(long.map(\.title) == ["The Dispossessed", "Words Are My Matter"])
            #expect(try tx.count(TypedBook.self, where: \.genre == .essay) == 1)
            let top = try tx.fetch(TypedBook.self, sortedBy: [.descending(\.pages)], limit: 2)
            #expect(top.map(\.pages) == [387, 323])
        }

        // Update writes the changed values; a duplicate unique value fails the write and saves none of it.
        var lathe = try #require(try db.readNow { try $0.model(bookRefs[1]) })
        lathe.pages = 190
        let changed = lathe
        _ = try db.writeNow { try $0.update(changed) }
        #expect(try db.readNow { try $0.model(bookRefs[1]) }?.pages == 190)
        #expect(throws: StoreError.self, "a duplicate unique label fails the write") {
            try db.writeNow { tx in
                try tx.insert(TypedTag(label: "classic"))
                try tx.insert(TypedTag(label: "sf"))
            }
        }
        #expect(try db.readNow { try $0.count(TypedTag.self) } == 1, "nothing of the failed write is saved")

        // Every attribute type round-trips, optionals empty and set.
        let values = [
            TypedValues(i16: .min, i32: .max, i64: .min, int: 42, decimal: Decimal(string: "12.345") ?? 0, double: -0.5,
                        float: 1.25, string: "naïve ✓", bool: true, date: Date(timeIntervalSinceReferenceDate: 1_000),
                        data: Data([0, 1, 255]), uuid: UUID(), url: URL(string: "https://example.com/a?b=c") ?? URL(fileURLWithPath: "/"),
                        size: TypedSize(width: 2, height: 3), maybeString: nil, maybeDate: nil, maybeGenre: nil),
            TypedValues(i16: 7, i32: -7, i64: .max, int: -1, decimal: 0, double: 1e300, float: -3.5, string: "", bool: false,
                        date: Date(timeIntervalSince1970: 0), data: Data(), uuid: UUID(), url: URL(fileURLWithPath: "/tmp/x"),
                        size: TypedSize(width: 0, height: -1), maybeString: "set", maybeDate: Date(timeIntervalSince1970: 86_400),
                        maybeGenre: .essay),
        ]
        let inserted = try db.writeNow { tx in try values.map { try tx.insert($0) } }
        let fetched = try db.readNow { tx in try tx.models(inserted.map(\.ref)) }
        #expect(fetched == inserted, "every attribute type comes back as it was inserted")

        // Delete cascades through the typed delete rule.
        try db.writeNow { try $0.delete(authorRef) }
        #expect(try db.readNow { try $0.count(TypedBook.self) } == 0, "deleting the author cascades to its books")

        // A persistent store gives the same models after closing and reopening.
        guard h.isPersistent else { return }
        try db.close()
        db = try open()
        let reread = try db.readNow { tx in try tx.models(inserted.map(\.ref)) }
        #expect(reread == inserted, "typed models survive closing and reopening the store")
    }
}
