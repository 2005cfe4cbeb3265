import Foundation
import StoreAPI
import StoreModels

// The reading-list models the tests store: authors, books, tags, and one model with every attribute type.

enum Genre: String, ModelValue, CaseIterable {
    case fiction, essay, poetry
}

enum Rating: Int16, ModelValue {
    case poor = 1, good = 3, great = 5
}

struct Dimensions: Codable, Hashable, CodableModelValue {
    var width: Double
    var height: Double
}

@Model struct Author {
    var name: String
    var born: Int?
    @Relationship(inverse: \Book.author, deleteRule: .cascade) var books: [ModelRef<Book>] = []
}

@Model struct Book {
    var title: String
    var pages: Int
    var genre: Genre = .fiction
    var author: ModelRef<Author>?
    @Relationship(inverse: \Tag.books) var tags: [ModelRef<Tag>] = []
    @Transient var isSelected = false

    var isLong: Bool { pages > 300 }
}

@Model struct Tag {
    @Attribute(unique: true) var label: String
    var books: [ModelRef<Book>] = []
}

@Model struct Shelf {
    var name: String
    @Relationship(ordered: true) var books: [ModelRef<Book>] = []
}

@Model struct Everything: Equatable {
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
    var dimensions: Dimensions
    var rating: Rating
    var maybeString: String?
    var maybeDate: Date?
    var maybeGenre: Genre?
}

let allModels: [any PersistentModel.Type] = [Author.self, Book.self, Tag.self, Shelf.self, Everything.self]
