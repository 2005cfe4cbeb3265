import Foundation
@_spi(BackendKit) import StoreAPI
import Testing

/// The syntax error a predicate string gives, or `nil` when it parses.
func predicateSyntaxError(_ source: String, _ arguments: [StoreValue] = []) -> (message: String, position: Int)? {
    do {
        _ = try FetchPredicate(source, arguments: arguments)
        return nil
    } catch {
        if case .predicateSyntax(let message, let position, let s) = error, s == source { return (message, position) }
        return ("unexpected error \(error)", -1)
    }
}

/// A small library (authors, books, a sub-entity of book, tags) held in dictionaries, with an evaluator that
/// follows relationships through them.
struct PredicateLibrary {
    let schema: Schema
    private(set) var tables: [String: [Int64: Record]] = [:]

    static func makeSchema() throws -> Schema {
        try Schema(entities: [
            EntityDescription(
                name: "Author",
                attributes: [
                    AttributeDescription(name: "name", type: .string),
                    AttributeDescription(name: "born", type: .date),
                    AttributeDescription(name: "code", type: .uuid),
                ],
                relationships: [
                    RelationshipDescription(name: "books", destination: "Book", inverse: "author", isToMany: true)
                ]),
            EntityDescription(
                name: "Book",
                attributes: [
                    AttributeDescription(name: "title", type: .string),
                    AttributeDescription(name: "pages", type: .integer32),
                    AttributeDescription(name: "rating", type: .double),
                    AttributeDescription(name: "price", type: .decimal),
                    AttributeDescription(name: "published", type: .date),
                    AttributeDescription(name: "inPrint", type: .boolean),
                    AttributeDescription(name: "edition", type: .integer16),
                    AttributeDescription(name: "copies", type: .integer64),
                    AttributeDescription(name: "weight", type: .float),
                    AttributeDescription(name: "cover", type: .binary),
                    AttributeDescription(name: "isbn", type: .uuid),
                    AttributeDescription(name: "site", type: .uri),
                    AttributeDescription(name: "in", type: .string),  // a key that is a keyword
                ],
                relationships: [
                    RelationshipDescription(name: "author", destination: "Author", inverse: "books"),
                    RelationshipDescription(
                        name: "tags", destination: "Tag", inverse: "books", isToMany: true, isOrdered: true),
                ]),
            EntityDescription(
                name: "Novel", parent: "Book",
                attributes: [AttributeDescription(name: "genre", type: .string)]),
            EntityDescription(
                name: "Tag",
                attributes: [
                    AttributeDescription(name: "name", type: .string),
                    AttributeDescription(name: "rank", type: .integer64),
                ],
                relationships: [
                    RelationshipDescription(name: "books", destination: "Book", inverse: "tags", isToMany: true)
                ]),
        ])
    }

    init() throws {
        schema = try Self.makeSchema()
    }

    /// The standard data set the evaluator tests reason about.
    static func standard() throws -> PredicateLibrary {
        var lib = try PredicateLibrary()
        let code = UUID(uuidString: "E621E1F8-C36C-495A-93FC-0C247A3E6E5F")
        try lib.insert("Author", 1, ["name": "Ursula K. Le Guin", "born": .date(date("1929-10-21")), "code": .uuid(code!)])
        try lib.insert("Author", 2, ["name": "Frank Herbert", "born": .date(date("1920-10-08"))])
        try lib.insert("Author", 3, [:])  // no name, no books
        try lib.insert("Tag", 1, ["name": "sf", "rank": 1])
        try lib.insert("Tag", 2, ["name": "classic", "rank": 2])
        try lib.insert("Tag", 3, ["name": "fantasy", "rank": 3])
        try lib.insert("Book", 1, [
            "title": "The Dispossessed", "pages": .integer32(387), "rating": 4.5, "price": .decimal(Decimal(string: "9.99")!),
            "published": .date(date("1974-05-01")), "inPrint": true, "edition": .integer16(2), "copies": 5_000_000_000,
            "weight": .float(0.5), "cover": .binary(Data([1, 2, 3])), "isbn": .uuid(UUID(uuidString: "00000000-0000-0000-0000-000000000001")!),
            "site": .uri(URL(string: "https://example.com/dispossessed")!), "in": "stock",
        ])
        try lib.insert("Book", 2, [
            "title": "A Wizard of Earthsea", "pages": .integer32(183), "rating": 4.0, "price": .decimal(7.5),
            "published": .date(date("1968-11-01")), "inPrint": false, "edition": .integer16(1), "copies": 3,
            "weight": .float(0.25), "cover": .binary(Data([1, 2])),
        ])
        try lib.insert("Book", 3, [
            "title": "Dune", "pages": .integer32(412), "rating": 4.7, "price": .decimal(10),
            "published": .date(date("1965-08-01")), "inPrint": true, "edition": .integer16(1), "copies": .integer64(.max),
        ])
        try lib.insert("Book", 4, ["title": "Árbol de la vida", "rating": .double(.nan), "inPrint": false])
        try lib.insert("Novel", 5, [
            "title": "Children of Dune", "pages": .integer32(444), "rating": 3.9, "genre": "sf", "inPrint": true,
        ])
        try lib.link("Book", 1, "author", to: [1])
        try lib.link("Book", 2, "author", to: [1])
        try lib.link("Book", 3, "author", to: [2])
        try lib.link("Novel", 5, "author", to: [2])
        try lib.link("Book", 1, "tags", to: [1, 2])
        try lib.link("Book", 2, "tags", to: [3, 2])
        try lib.link("Book", 3, "tags", to: [1])
        try lib.link("Novel", 5, "tags", to: [1])
        return lib
    }

    static func date(_ iso: String) -> Date {
        ExactISO8601.date(from: iso) ?? Date(timeIntervalSinceReferenceDate: .nan)
    }

    func entity(_ name: String) throws -> Entity { try schema.requireEntity(name) }

    func record(_ entity: String, _ key: Int64) throws -> Record {
        let root = try self.entity(entity).rootName
        return try #require(tables[root]?[key])
    }

    mutating func insert(_ entity: String, _ key: Int64, _ values: [String: StoreValue]) throws {
        let e = try self.entity(entity)
        var r = e.newRecord(primaryKey: key)
        for (name, value) in values {
            let i = try #require(e.attributeIndex(name), "no attribute \(name)")
            r.attributes[i] = value
        }
        tables[e.rootName, default: [:]][key] = r
    }

    mutating func put(_ record: Record) throws {
        tables[try entity(record.entity).rootName, default: [:]][record.primaryKey] = record
    }

    /// Sets a relationship and the inverse side, as the framework keeps them.
    mutating func link(_ entity: String, _ key: Int64, _ relationship: String, to keys: [Int64]) throws {
        let e = try self.entity(entity)
        let ri = try #require(e.relationshipIndex(relationship))
        let rel = e.relationships[ri]
        var r = try record(entity, key)
        r.relationships[ri] = rel.isToMany ? .toMany(keys) : .toOne(keys.first)
        try put(r)
        guard let inverseName = rel.inverse else { return }
        let destRoot = try self.entity(rel.destination).rootName
        for k in keys {
            var other = try #require(tables[destRoot]?[k])
            let oe = try self.entity(other.entity)
            let ii = try #require(oe.relationshipIndex(inverseName))
            switch other.relationships[ii] {
            case .toMany(let existing): other.relationships[ii] = .toMany(existing + [key])
            case .toOne: other.relationships[ii] = .toOne(key)
            }
            try put(other)
        }
    }

    var evaluator: PredicateEvaluator {
        let t = tables
        return PredicateEvaluator(schema: schema) { root, keys in keys.compactMap { t[root]?[$0] } }
    }

    /// The records of `entity` and its sub-entities, in key order.
    func candidates(_ entity: String) throws -> [Record] {
        let e = try self.entity(entity)
        let names = Set(e.hierarchyNames)
        return (tables[e.rootName] ?? [:]).values.filter { names.contains($0.entity) }.sorted { $0.primaryKey < $1.primaryKey }
    }

    /// The keys of the records of `entity` matching a predicate, in key order.
    func keys(_ entity: String, where predicate: FetchPredicate) throws -> [Int64] {
        try evaluator.execute(FetchRequest(entity: entity, predicate: predicate), candidates: candidates(entity))
            .map(\.primaryKey)
    }

    /// The keys of the books matching a predicate string.
    func books(_ format: String, _ arguments: StoreValue...) throws -> [Int64] {
        try keys("Book", where: FetchPredicate(format, arguments: arguments))
    }
}
