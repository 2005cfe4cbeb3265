import Foundation
import StoreAPI
@testable import SQLiteBackend
import StoreTestSupport

/// The schema the backend tests use: every attribute type, inheritance with a name collision between siblings,
/// every relationship kind, uniqueness constraints.
enum Fixture {
    static let attributeTypes = TestSchemas.everyAttributeType

    static func schema() throws -> Schema {
        func attr(_ name: String, _ type: AttributeType) -> AttributeDescription {
            AttributeDescription(name: name, type: type)
        }
        func rel(
            _ name: String, _ destination: String, inverse: String? = nil, many: Bool = false, ordered: Bool = false
        ) -> RelationshipDescription {
            RelationshipDescription(name: name, destination: destination, inverse: inverse, isToMany: many, isOrdered: ordered)
        }
        return try Schema(entities: [
            // `_pk` and `_hidden` check that property columns never collide with the framework's.
            EntityDescription(
                name: "Item", attributes: attributeTypes.map { attr($0.0, $0.1) } + [attr("_pk", .integer64), attr("_hidden", .string)]),
            EntityDescription(
                name: "Person",
                attributes: [attr("name", .string), attr("email", .string), attr("age", .integer32)],
                relationships: [
                    rel("spouse", "Person", inverse: "spouse"),
                    rel("mentor", "Person", inverse: "mentees"),
                    rel("mentees", "Person", inverse: "mentor", many: true),
                    rel("friends", "Person", inverse: "friends", many: true),
                ],
                uniquenessConstraints: [["email"]]),
            EntityDescription(
                name: "Author", parent: "Person", attributes: [attr("penName", .string), attr("rank", .integer16)],
                relationships: [rel("books", "Book", inverse: "author", many: true, ordered: true)]),
            EntityDescription(
                name: "Reader", parent: "Person", attributes: [attr("rank", .string)],
                relationships: [rel("favorites", "Book", many: true, ordered: true)]),
            EntityDescription(
                name: "Book",
                attributes: [
                    attr("title", .string), attr("price", .double), attr("published", .date), attr("isbn", .string),
                    attr("pages", .integer16), attr("cost", .decimal), attr("ident", .uuid), attr("link", .uri),
                    attr("cover", .binary), attr("inPrint", .boolean), attr("weight", .float),
                ],
                relationships: [
                    rel("author", "Author", inverse: "books"),
                    rel("tags", "Tag", inverse: "books", many: true, ordered: true),
                    rel("chapters", "Chapter", inverse: "book", many: true),
                    rel("related", "Book", many: true),
                ],
                uniquenessConstraints: [["isbn"]]),
            EntityDescription(
                name: "Tag", attributes: [attr("name", .string)],
                relationships: [rel("books", "Book", inverse: "tags", many: true)]),
            EntityDescription(
                name: "Chapter", attributes: [attr("title", .string), attr("number", .integer32)],
                relationships: [rel("book", "Book", inverse: "chapters")]),
            EntityDescription(name: "Measure", attributes: [attr("value", .double)], uniquenessConstraints: [["value"]]),
            EntityDescription(
                name: "Animal", isAbstract: true, attributes: [attr("name", .string)],
                relationships: [rel("owner", "Person")]),
            EntityDescription(name: "Dog", parent: "Animal", attributes: [attr("barks", .boolean)]),
            EntityDescription(name: "Cat", parent: "Animal", attributes: [attr("lives", .integer16)]),
        ])
    }

    static func metadata(_ schema: Schema, uuid: UUID = UUID()) -> StoreMetadata {
        StoreMetadata(
            storeType: SQLiteStoreBackend.typeIdentifier, storeUUID: uuid, schema: schema,
            custom: ["app": .string("tests"), "n": .integer(3)])
    }

    /// Creates (or opens) a store at `url`.
    static func open(
        _ url: URL, schema: Schema, options: StoreOptions = StoreOptions(), uuid: UUID = UUID()
    ) throws -> any PersistentStore {
        try SQLiteStoreBackend().open(at: url, options: options, creating: metadata(schema, uuid: uuid))
    }

    /// The Core Data stores of the shared corpus (`../shared/corpus/stores` from the package root), or `nil`.
    static var corpusStores: URL? { PackagePaths.corpus("stores") }
}

/// A set of records whose relationships are kept consistent on both sides as links are added, the way the
/// framework's context keeps them.
struct Graph {
    let schema: Schema
    private(set) var records: [String: Record] = [:]
    private var order: [String] = []

    init(schema: Schema) { self.schema = schema }

    private func key(_ root: String, _ pk: Int64) -> String { "\(root)/\(pk)" }

    private func root(of entity: String) -> String { schema.entity(named: entity)?.rootName ?? entity }

    mutating func add(_ entity: String, _ pk: Int64, _ attributes: [String: StoreValue] = [:]) {
        let k = key(root(of: entity), pk)
        records[k] = schema.record(entity, pk, attributes)
        order.append(k)
    }

    /// The record of hierarchy `root` with key `pk`.
    func record(_ root: String, _ pk: Int64) -> Record? { records[key(root, pk)] }

    /// Links `pk.relationship` to `target`, and the inverse back.
    mutating func link(_ entity: String, _ pk: Int64, _ relationship: String, _ target: Int64) {
        let from = key(root(of: entity), pk)
        guard var r = records[from], let e = schema.entity(named: r.entity), let ri = e.relationshipIndex(relationship)
        else { preconditionFailure("link from \(entity)/\(pk).\(relationship)") }
        let rel = e.relationships[ri]
        r.relationships[ri] = Self.adding(target, to: r.relationships[ri], toMany: rel.isToMany)
        records[from] = r
        guard let inverseName = rel.inverse else { return }
        let to = key(root(of: rel.destination), target)
        guard var t = records[to], let te = schema.entity(named: t.entity), let ti = te.relationshipIndex(inverseName)
        else { preconditionFailure("inverse of \(entity).\(relationship) at \(target)") }
        t.relationships[ti] = Self.adding(pk, to: t.relationships[ti], toMany: te.relationships[ti].isToMany)
        records[to] = t
    }

    private static func adding(_ key: Int64, to value: RelationshipValue, toMany: Bool) -> RelationshipValue {
        guard toMany else { return .toOne(key) }
        let keys = value.keys
        return .toMany(keys.contains(key) ? keys : keys + [key])
    }

    /// Every record, in the order added.
    var all: [Record] { order.compactMap { records[$0] } }
}

/// Whether two record lists hold the same records in the same order (unordered relationships compared as sets).
func sameRecords(_ a: [Record], _ b: [Record], _ schema: Schema) -> Bool {
    guard a.count == b.count else { return false }
    for (x, y) in zip(a, b) {
        guard let e = schema.entity(named: x.entity), x.isLogicallyEqual(to: y, in: e) else { return false }
    }
    return true
}

/// Describes the first difference between two record lists, for failure messages.
func firstDifference(_ a: [Record], _ b: [Record], _ schema: Schema) -> String {
    if a.count != b.count {
        return "counts differ: \(a.count) vs \(b.count): \(a.map(\.key)) vs \(b.map(\.key))"
    }
    for (x, y) in zip(a, b) {
        guard let e = schema.entity(named: x.entity), x.isLogicallyEqual(to: y, in: e) else {
            return "\(x) vs \(y)"
        }
    }
    return "none"
}

/// The case name of a thrown error (`"corruptStore"`, …), or the error's description for other errors.
func errorCase(_ body: () throws -> Void) -> String? {
    do {
        try body()
        return nil
    } catch let e as StoreError {
        return e.caseName
    } catch {
        return "\(error)"
    }
}
