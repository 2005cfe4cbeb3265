import Foundation
@_spi(BackendKit) import StoreAPI

/// The `coredata` section's data: the library of ``Dataset`` with single-table inheritance added — its authors are
/// `Person`s, every other one an `Author` (a sub-entity sharing the `ZPERSON` table), and a book's author points at
/// the `Person` hierarchy, so its row carries the destination's entity column. Every relationship kind Core Data
/// stores differently is there: to-one with entity column (`Book.author`), its to-many inverse, an ordered to-many
/// (`Book.reviews`, `Z_FOK_BOOK`) and a many-to-many (`Book.tags`, a join table).
struct CoreDataDataset: Sendable {
    let base: Dataset
    let schema: Schema

    init(total: Int) throws {
        base = try Dataset(total: total)
        schema = try Self.makeSchema()
    }

    var total: Int { base.total }

    /// Entity names in schema order (the order a transfer copies them in).
    static let entityNames = ["Person", "Author", "Tag", "Book", "Review"]

    static func makeSchema() throws -> Schema {
        typealias A = AttributeDescription
        typealias R = RelationshipDescription
        let library = try Dataset.makeSchema()
        func definition(_ name: String) throws -> EntityDescription { try library.requireEntity(name).definition }
        var book = try definition("Book")
        book.relationships = book.relationships.map { r in
            var r = r
            if r.name == "author" { r.destination = "Person" }
            return r
        }
        return try Schema(entities: [
            EntityDescription(name: "Person", attributes: [
                A(name: "name", type: .string), A(name: "born", type: .date), A(name: "country", type: .string),
            ], relationships: [
                R(name: "books", destination: "Book", inverse: "author", isToMany: true),
            ]),
            EntityDescription(name: "Author", parent: "Person", attributes: [
                A(name: "followers", type: .integer64), A(name: "verified", type: .boolean), A(name: "score", type: .float),
                A(name: "website", type: .uri), A(name: "avatar", type: .binary),
            ]),
            try definition("Tag"), book, try definition("Review"),
        ])
    }

    /// Person `i` of the library's authors is an `Author` when `i` is even.
    func entityName(ofAuthor i: Int) -> String { i % 2 == 0 ? "Author" : "Person" }

    /// Calls `body` with every record in schema order, `batch` at a time.
    func forEachBatch(_ batch: Int, _ body: ([Record]) throws -> Void) throws {
        for name in Self.entityNames {
            let entity = try schema.requireEntity(name)
            let indices: [Int]
            switch name {
            case "Person": indices = stride(from: 1, to: base.authors, by: 2).map { $0 }
            case "Author": indices = stride(from: 0, to: base.authors, by: 2).map { $0 }
            default: indices = Array(0..<base.count(of: name))
            }
            var start = 0
            while start < indices.count {
                let end = min(indices.count, start + batch)
                try body(indices[start..<end].map { record(entity, $0) })
                start = end
            }
        }
    }

    /// Record `i` of `entity` (for `Person` and `Author`, `i` indexes the library's authors).
    func record(_ entity: Entity, _ i: Int) -> Record {
        let libraryEntity = entity.name == "Person" || entity.name == "Author" ? "Author" : entity.name
        // The global ID a Core Data store derives for the record (Core Data keeps none), so that a store converted
        // from LMDB to Core Data holds the same records as the Core Data source.
        let gid = NameBasedUUID.make(namespace: base.storeUUID, name: "\(entity.rootName)/p\(i + 1)")
        var r = entity.newRecord(primaryKey: Int64(i + 1), globalID: gid)
        for (name, value) in base.values(libraryEntity, i) {
            if let index = entity.attributeIndex(name) { r.attributes[index] = value }
        }
        func keys(_ xs: [Int]) -> RelationshipValue { .toMany(xs.map { Int64($0 + 1) }) }
        for (index, rel) in entity.relationships.enumerated() {
            switch (libraryEntity, rel.name) {
            case ("Author", "books"): r.relationships[index] = keys(base.booksOf(author: i))
            case ("Tag", "books"): r.relationships[index] = keys(base.booksOf(tag: i))
            case ("Book", "author"): r.relationships[index] = .toOne(Int64(base.authorOf(book: i) + 1))
            case ("Book", "tags"): r.relationships[index] = keys(base.tagsOf(book: i))
            case ("Book", "reviews"): r.relationships[index] = keys(base.reviewsOf(book: i))
            case ("Review", "book"): r.relationships[index] = .toOne(Int64(base.bookOf(review: i) + 1))
            default: break
            }
        }
        return r
    }

    /// Records of each entity (not counting sub-entities).
    func count(of name: String) -> Int {
        switch name {
        case "Person": base.authors / 2
        case "Author": base.authors - base.authors / 2
        default: base.count(of: name)
        }
    }

    func metadata(type: String) -> StoreMetadata {
        StoreMetadata(storeType: type, storeUUID: base.storeUUID, schema: schema,
                      custom: ["benchmark": .string("storebench coredata v\(Dataset.version)")])
    }
}
