import Foundation
import StoreModels

enum Genre: String, ModelValue {
    case fiction, essay, poetry
}

@Model struct Author {
    var name: String
    @Relationship(inverse: \Book.author, deleteRule: .cascade) var books: [ModelRef<Book>] = []
}

@Model struct Book {
    var title: String
    var pages: Int
    var genre: Genre = .fiction
    var added: Date
    var author: ModelRef<Author>?
    @Relationship(inverse: \Tag.books) var tags: [ModelRef<Tag>] = []
}

@Model struct Tag {
    @Attribute(unique: true) var label: String
    var books: [ModelRef<Book>] = []
}
