import Foundation
import StoreAPI

/// The benchmark's data: a small library — authors, tags, books, reviews — with every attribute type and every
/// kind of relationship (to-one, to-many, ordered to-many, many-to-many), generated deterministically from a fixed
/// seed so every run, backend and reference sees exactly the same records.
///
/// `total` records are split 10 % authors, 5 % tags, 40 % books, 45 % reviews. Book `b` has author `b mod A`, one
/// or two tags (`b mod T` and `(7b + 3) mod T`) and the reviews `b, b + B, b + 2B, …` (ordered); primary keys are
/// 1-based positions, so every relationship is known from arithmetic and one inverted tag index.
struct Dataset: Sendable {
    /// Bumped whenever the generated records or a backend's file layout change, so kept source stores are rebuilt
    /// (2: SQLite's shared join tables index `(dst, dst_ord)`).
    static let version = 2
    static let seed: UInt64 = 0x5EED_2024_0B00_C0DE

    let total: Int
    let authors: Int
    let tags: Int
    let books: Int
    let reviews: Int
    let schema: Schema
    /// The fixed store UUID every source store carries.
    let storeUUID: UUID
    /// Tag `t`'s books (0-based), as offsets into ``tagBookItems``.
    private let tagBookOffsets: [Int32]
    private let tagBookItems: [Int32]

    init(total: Int) throws {
        self.total = max(total, 20)
        authors = max(1, self.total / 10)
        tags = max(1, self.total / 20)
        reviews = self.total * 45 / 100
        books = self.total - authors - tags - reviews
        schema = try Self.makeSchema()
        storeUUID = Self.uuid(0xFF, 0)
        // Invert book → tags once (counting sort), so each tag's to-many side is a slice.
        var counts = [Int32](repeating: 0, count: tags + 1)
        for b in 0..<books {
            for t in Self.tagIndices(b, tags) { counts[t + 1] += 1 }
        }
        for t in 0..<tags { counts[t + 1] += counts[t] }
        var fill = counts
        var items = [Int32](repeating: 0, count: Int(counts[tags]))
        for b in 0..<books {
            for t in Self.tagIndices(b, tags) {
                items[Int(fill[t])] = Int32(b)
                fill[t] += 1
            }
        }
        tagBookOffsets = counts
        tagBookItems = items
    }

    /// Entity names in schema order (the order a transfer copies them in).
    static let entityNames = ["Author", "Tag", "Book", "Review"]

    static func makeSchema() throws -> Schema {
        typealias A = AttributeDescription
        typealias R = RelationshipDescription
        return try Schema(entities: [
            EntityDescription(name: "Author", attributes: [
                A(name: "name", type: .string), A(name: "born", type: .date), A(name: "country", type: .string),
                A(name: "followers", type: .integer64), A(name: "verified", type: .boolean), A(name: "score", type: .float),
                A(name: "website", type: .uri), A(name: "avatar", type: .binary),
            ], relationships: [
                R(name: "books", destination: "Book", inverse: "author", isToMany: true),
            ]),
            EntityDescription(name: "Tag", attributes: [
                A(name: "name", type: .string), A(name: "weight", type: .double), A(name: "code", type: .integer16),
            ], relationships: [
                R(name: "books", destination: "Book", inverse: "tags", isToMany: true),
            ]),
            EntityDescription(name: "Book", attributes: [
                A(name: "title", type: .string), A(name: "isbn", type: .integer64), A(name: "pages", type: .integer32),
                A(name: "edition", type: .integer16), A(name: "price", type: .decimal), A(name: "weight", type: .double),
                A(name: "rating", type: .float), A(name: "inPrint", type: .boolean), A(name: "published", type: .date),
                A(name: "cover", type: .binary), A(name: "sku", type: .uuid), A(name: "homepage", type: .uri),
            ], relationships: [
                R(name: "author", destination: "Author", inverse: "books"),
                R(name: "tags", destination: "Tag", inverse: "books", isToMany: true),
                R(name: "reviews", destination: "Review", inverse: "book", isToMany: true, isOrdered: true),
            ]),
            EntityDescription(name: "Review", attributes: [
                A(name: "text", type: .string), A(name: "stars", type: .integer16), A(name: "created", type: .date),
                A(name: "helpful", type: .integer32), A(name: "verified", type: .boolean),
            ], relationships: [
                R(name: "book", destination: "Book", inverse: "reviews"),
            ]),
        ])
    }

    func count(of entity: String) -> Int {
        switch entity {
        case "Author": authors
        case "Tag": tags
        case "Book": books
        default: reviews
        }
    }

    // MARK: Values

    /// SplitMix64: a fast, well-mixed, reproducible stream.
    static func mix(_ x: UInt64) -> UInt64 {
        var z = x &+ 0x9E37_79B9_7F4A_7C15
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// The `k`-th random word of record `i` of entity `code`.
    static func random(_ code: UInt64, _ i: Int, _ k: UInt64 = 0) -> UInt64 {
        mix(seed ^ (code << 56) ^ (k << 48) ^ UInt64(i))
    }

    /// A version-4-shaped UUID from the stream.
    static func uuid(_ code: UInt64, _ i: Int, _ k: UInt64 = 7) -> UUID {
        let a = random(code, i, k)
        let b = random(code, i, k + 1)
        var bytes = [UInt8](repeating: 0, count: 16)
        for j in 0..<8 {
            bytes[j] = UInt8(truncatingIfNeeded: a >> (8 * UInt64(j)))
            bytes[8 + j] = UInt8(truncatingIfNeeded: b >> (8 * UInt64(j)))
        }
        bytes[6] = (bytes[6] & 0x0F) | 0x40
        bytes[8] = (bytes[8] & 0x3F) | 0x80
        return UUID(uuid: (bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7],
                           bytes[8], bytes[9], bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15]))
    }

    private static let words = ["river", "clock", "paper", "stone", "harbor", "winter", "garden", "silver", "echo",
                                "lantern", "meadow", "orbit", "velvet", "cinder", "north", "quiet"]
    private static let countries = ["NO", "FR", "JP", "BR", "KE", "CA", "IN", "DE"]

    private static func words(_ r: UInt64, _ n: Int) -> String {
        (0..<n).map { words[Int((r >> (4 * UInt64($0))) & 15)] }.joined(separator: " ")
    }

    private static func bytes(_ r: UInt64, _ n: Int) -> Data {
        Data((0..<n).map { UInt8(truncatingIfNeeded: Dataset.mix(r &+ UInt64($0))) })
    }

    static func code(_ entity: String) -> UInt64 {
        UInt64(entityNames.firstIndex(of: entity) ?? 9) + 1
    }

    func globalID(_ entity: String, _ i: Int) -> UUID { Self.uuid(Self.code(entity), i) }

    /// Attribute values of record `i` of `entity`, by name.
    func values(_ entity: String, _ i: Int) -> [String: StoreValue] {
        let c = Self.code(entity)
        let r = Self.random(c, i)
        let s = Self.random(c, i, 1)
        let base = 600_000_000 + Double(r % 300_000_000)
        switch entity {
        case "Author":
            return [
                "name": .string(Self.words(r, 2).capitalized + " \(i)"), "born": .date(Date(timeIntervalSinceReferenceDate: -base)),
                "country": .string(Self.countries[Int(s & 7)]), "followers": .integer64(Int64(s % 5_000_000_000)),
                "verified": .boolean(r & 1 == 0), "score": .float(Float(s % 1000) / 10),
                "website": .uri(URL(string: "https://authors.example.org/\(i)") ?? URL(fileURLWithPath: "/")),
                "avatar": i % 4 == 0 ? .null : .binary(Self.bytes(s, 24)),
            ]
        case "Tag":
            return ["name": .string("tag-\(Self.words(r, 1))-\(i)"), "weight": .double(Double(s % 10_000) / 977),
                    "code": .integer16(Int16(truncatingIfNeeded: i))]
        case "Book":
            return [
                "title": .string(Self.words(r, 4).capitalized + " \(i)"), "isbn": .integer64(9_780_000_000_000 + Int64(i)),
                "pages": .integer32(Self.pages(i)), "edition": .integer16(Int16(1 + (s >> 20) % 12)),
                "price": .decimal(Decimal(sign: .plus, exponent: -2, significand: Decimal(Int(99 + (r >> 24) % 20_000)))),
                "weight": .double(Double((s >> 32) % 30_000) / 10), "rating": .float(Float((r >> 40) % 50) / 10),
                "inPrint": .boolean(Self.inPrint(i)), "published": .date(Date(timeIntervalSinceReferenceDate: -base / 3)),
                "cover": .binary(Self.bytes(r, 64)), "sku": .uuid(Self.uuid(c, i, 11)),
                "homepage": i % 3 == 0 ? .null : .uri(URL(string: "https://books.example.org/b/\(i)?ed=\(1 + i % 5)") ?? URL(fileURLWithPath: "/")),
            ]
        default:
            return [
                "text": .string("Review \(i): " + Self.words(r, 6) + "; " + Self.words(s, 5) + "."),
                "stars": .integer16(Int16(1 + s % 5)), "created": .date(Date(timeIntervalSinceReferenceDate: base / 2 + Double(i))),
                "helpful": .integer32(Int32(truncatingIfNeeded: s >> 33) % 1000), "verified": .boolean(s & 3 != 0),
            ]
        }
    }

    /// Book `i`'s page count and whether it is in print (what the predicate section filters on).
    static func pages(_ i: Int) -> Int32 { Int32(50 + random(code("Book"), i, 1) % 950) }
    static func inPrint(_ i: Int) -> Bool { (random(code("Book"), i, 1) >> 10) & 1 == 0 }

    // MARK: Relationships (0-based indices; primary keys are index + 1)

    static func tagIndices(_ b: Int, _ tags: Int) -> [Int] {
        let t1 = b % tags
        let t2 = (b &* 7 &+ 3) % tags
        return t2 == t1 ? [t1] : [t1, t2]
    }

    func authorOf(book b: Int) -> Int { b % authors }
    func tagsOf(book b: Int) -> [Int] { Self.tagIndices(b, tags) }
    func bookOf(review r: Int) -> Int { r % books }
    func reviewsOf(book b: Int) -> [Int] { Array(stride(from: b, to: reviews, by: books)) }
    func booksOf(author a: Int) -> [Int] { Array(stride(from: a, to: books, by: authors)) }
    func booksOf(tag t: Int) -> [Int] {
        tagBookItems[Int(tagBookOffsets[t])..<Int(tagBookOffsets[t + 1])].map(Int.init)
    }

    /// Record `i` of `entity`, laid out against the schema, with both sides of every relationship.
    func record(_ entity: Entity, _ i: Int) -> Record {
        var r = entity.newRecord(primaryKey: Int64(i + 1), globalID: globalID(entity.name, i))
        for (name, value) in values(entity.name, i) {
            if let index = entity.attributeIndex(name) { r.attributes[index] = value }
        }
        func keys(_ xs: [Int]) -> RelationshipValue { .toMany(xs.map { Int64($0 + 1) }) }
        for (index, rel) in entity.relationships.enumerated() {
            switch (entity.name, rel.name) {
            case ("Author", "books"): r.relationships[index] = keys(booksOf(author: i))
            case ("Tag", "books"): r.relationships[index] = keys(booksOf(tag: i))
            case ("Book", "author"): r.relationships[index] = .toOne(Int64(authorOf(book: i) + 1))
            case ("Book", "tags"): r.relationships[index] = keys(tagsOf(book: i))
            case ("Book", "reviews"): r.relationships[index] = keys(reviewsOf(book: i))
            case ("Review", "book"): r.relationships[index] = .toOne(Int64(bookOf(review: i) + 1))
            default: break
            }
        }
        return r
    }

    /// Calls `body` with every record in schema order, `batch` at a time.
    func forEachBatch(_ batch: Int, _ body: ([Record]) throws -> Void) throws {
        for name in Self.entityNames {
            let entity = try schema.requireEntity(name)
            let n = count(of: name)
            var start = 0
            while start < n {
                let end = min(n, start + batch)
                try body((start..<end).map { record(entity, $0) })
                start = end
            }
        }
    }

    /// The metadata every source store is created with.
    func metadata(type: String) -> StoreMetadata {
        StoreMetadata(storeType: type, storeUUID: storeUUID, schema: schema, custom: ["benchmark": .string("storebench v\(Self.version)")])
    }
}
