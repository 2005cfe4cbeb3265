import Foundation
import LMDBBackend
import SQLiteBackend
import StoreAPI
import StoreTestSupport
import Testing
import XMLBackend

/// Files of the shared corpus.
enum FuzzPaths {
    /// Every regular file under `dir` whose name satisfies `keep`, sorted by path (so the corpus order is stable).
    static func files(under dir: URL, _ keep: (String) -> Bool) -> [URL] {
        guard let e = FileManager.default.enumerator(at: dir, includingPropertiesForKeys: [.isRegularFileKey]) else { return [] }
        var out: [URL] = []
        for case let u as URL in e where keep(u.lastPathComponent) {
            if (try? u.resourceValues(forKeys: [.isRegularFileKey]).isRegularFile) == true { out.append(u) }
        }
        return out.sorted { $0.path < $1.path }
    }
}

/// Every backend, in a registry of the fuzz tests' own.
enum FuzzBackends {
    static let registry = BackendRegistry(backends: [InMemoryBackend(), SQLiteStoreBackend(), LMDBStoreBackend(), XMLStoreBackend()])

    static let persistent: [any StoreBackend] = [SQLiteStoreBackend(), LMDBStoreBackend(), XMLStoreBackend()]
}

/// A deterministic store with every attribute type and relationship kind, and values at the edges (NaN payloads,
/// -0.0, infinities, extreme integers, control characters, empty data), written the same way every run so the
/// corpus — and every input derived from it — is the same for the same seed.
enum FuzzFixture {
    static let storeUUID = UUID(uuidString: "F0220000-0000-4000-8000-000000000009") ?? UUID()

    static func gid(_ n: Int) -> UUID {
        UUID(uuidString: "F0220000-0000-4000-8000-" + String(repeating: "0", count: 12 - String(n).count) + String(n)) ?? UUID()
    }

    static let attributeTypes = TestSchemas.everyAttributeType

    static func schema() throws -> Schema {
        try Schema(entities: [
            EntityDescription(
                name: "Item", attributes: attributeTypes.map { AttributeDescription(name: $0.0, type: $0.1) }
                    + [AttributeDescription(name: "code", type: .string)],
                uniquenessConstraints: [["code"]]),
            EntityDescription(name: "Author", attributes: [AttributeDescription(name: "name", type: .string)], relationships: [
                RelationshipDescription(name: "books", destination: "Book", inverse: "author", isToMany: true, isOrdered: true,
                                        deleteRule: .cascade),
            ]),
            EntityDescription(name: "Book", attributes: [AttributeDescription(name: "title", type: .string)], relationships: [
                RelationshipDescription(name: "author", destination: "Author", inverse: "books"),
                RelationshipDescription(name: "tags", destination: "Tag", inverse: "books", isToMany: true),
            ]),
            EntityDescription(name: "Tag", attributes: [AttributeDescription(name: "label", type: .string)], relationships: [
                RelationshipDescription(name: "books", destination: "Book", inverse: "tags", isToMany: true),
            ]),
            EntityDescription(name: "Person", attributes: [AttributeDescription(name: "name", type: .string)], relationships: [
                RelationshipDescription(name: "spouse", destination: "Person", inverse: "spouse"),
                RelationshipDescription(name: "pets", destination: "Animal", inverse: "owner", isToMany: true),
            ]),
            EntityDescription(name: "Animal", isAbstract: true, attributes: [AttributeDescription(name: "name", type: .string)], relationships: [
                RelationshipDescription(name: "owner", destination: "Person", inverse: "pets"),
            ]),
            EntityDescription(name: "Dog", parent: "Animal", attributes: [AttributeDescription(name: "barks", type: .boolean)]),
            EntityDescription(name: "Cat", parent: "Animal", attributes: [AttributeDescription(name: "lives", type: .integer16)]),
        ])
    }

    static func metadata(_ schema: Schema, type: String) -> StoreMetadata {
        StoreMetadata(storeType: type, storeUUID: storeUUID, schema: schema,
                      custom: ["app": .string("fuzz"), "n": .integer(3), "nested": .dictionary(["a": .array([.bool(true), .null, .double(0.5)])])])
    }

    /// A record whose global ID follows from its entity and key, so every run writes the same store.
    static func record(_ schema: Schema, _ entity: String, _ pk: Int64, _ attributes: [String: StoreValue] = [:],
                       _ relationships: [String: RelationshipValue] = [:]) -> Record {
        schema.record(entity, pk, attributes, relationships, globalID: gid(Int(pk) + 1000 * (entity.utf8.first.map(Int.init) ?? 0)))
    }

    static let epoch = Date(timeIntervalSinceReferenceDate: 700_000_000.25)

    static func records(_ s: Schema) throws -> [Record] {
        let payloadNaN = Double(bitPattern: 0x7FF8_0000_0000_1234)
        return [
            record(s, "Item", 1, [
                "i16": .integer16(5), "i32": .integer32(-7), "i64": .integer64(.max), "dec": .decimal(Decimal(string: "12.50") ?? 0),
                "dbl": .double(-0.0), "flt": .float(Float(bitPattern: 0x7FC0_0123)), "str": "plain", "flag": .boolean(true),
                "when": .date(Date(timeIntervalSinceReferenceDate: 0)), "blob": .binary(Data([0, 1, 2])),
                "ident": .uuid(gid(77)), "link": .uri(URL(string: "https://example.com/a?b=c#d") ?? URL(fileURLWithPath: "/")),
                "archived": .binary(Data()), "code": "A-1",
            ]),
            record(s, "Item", 2, [
                "i16": .integer16(.min), "i32": .integer32(.max), "i64": .integer64(.min), "dec": .decimal(Decimal(string: "-0.000001") ?? 0),
                "dbl": .double(.infinity), "flt": .float(-.infinity), "str": .string("\u{0}\u{1}\r\n\t<>&\"'🙂 \u{FFFF}\\"),
                "flag": .boolean(false), "when": .date(Date(timeIntervalSinceReferenceDate: -1e10)),
                "blob": .binary(Data((0..<300).map { UInt8(truncatingIfNeeded: $0 &* 7) })),
                "link": .uri(URL(string: "file:///tmp/x%20y") ?? URL(fileURLWithPath: "/")), "code": "B-2",
            ]),
            record(s, "Item", 3, ["code": "C-3"]),
            record(s, "Item", 4, ["dbl": .double(payloadNaN), "flt": .float(.nan), "str": "", "code": "D-4",
                                      "when": .date(epoch)]),
            record(s, "Author", 1, ["name": "Ann"], ["books": .toMany([3, 1, 2])]),
            record(s, "Author", 2, ["name": "Bo"], ["books": .toMany([])]),
            record(s, "Book", 1, ["title": "One"], ["author": .toOne(1), "tags": .toMany([1, 2])]),
            record(s, "Book", 2, ["title": "Two"], ["author": .toOne(1), "tags": .toMany([2])]),
            record(s, "Book", 3, ["title": "Three\nlines"], ["author": .toOne(1)]),
            record(s, "Book", 4, ["title": "Orphan"]),
            record(s, "Tag", 1, ["label": "x"], ["books": .toMany([1])]),
            record(s, "Tag", 2, ["label": "y"], ["books": .toMany([1, 2])]),
            record(s, "Tag", 3, ["label": "unused"]),
            record(s, "Person", 1, ["name": "P"], ["spouse": .toOne(2), "pets": .toMany([1, 2])]),
            record(s, "Person", 2, ["name": "Q"], ["spouse": .toOne(1)]),
            record(s, "Dog", 1, ["name": "Rex", "barks": .boolean(true)], ["owner": .toOne(1)]),
            record(s, "Cat", 2, ["name": "Tom", "lives": .integer16(9)], ["owner": .toOne(1)]),
        ]
    }

    static func history() -> [HistoryTransaction] {
        [
            HistoryTransaction(token: HistoryTransaction.assignToken, timestamp: epoch, author: "fuzz", changes: [
                HistoryChange(kind: .insert, entity: "Item", primaryKey: 1, globalID: gid(1)),
                HistoryChange(kind: .update, entity: "Book", primaryKey: 2, globalID: gid(2), changedKeys: ["title", "tags"]),
            ]),
            HistoryTransaction(token: HistoryTransaction.assignToken, timestamp: epoch.addingTimeInterval(1), author: nil, changes: [
                HistoryChange(kind: .delete, entity: "Item", primaryKey: 9, globalID: gid(9), tombstone: ["code": "Z-9\u{0}"]),
            ]),
        ]
    }

    /// Writes the fixture store with `backend` at `url` (for SQLite, `journal` picks the journal mode).
    static func write(_ backend: any StoreBackend, at url: URL, journal: String? = nil) throws {
        let schema = try schema()
        var options = StoreOptions(historyTracking: true)
        if let journal { options.backend["sqlite.journal_mode"] = journal }
        let store = try backend.open(at: url, options: options, creating: metadata(schema, type: backend.typeIdentifier))
        do {
            try store.save(StoreChanges(inserted: try records(schema), history: history()))
            try store.close()
        } catch {
            try? store.close()
            throw error
        }
    }
}

/// A small, closed slice of the bundled sample (`Samples/library.ndjson`): lines picked deterministically, with
/// references to records outside the slice removed, so the slice imports on its own.
enum LibrarySample {
    static func schema() throws -> Schema { try Schema(xcodeModelAt: PackagePaths.libraryModel) }

    /// The sample's lines, unparsed.
    static let lines: [Data] = {
        guard let data = try? Data(contentsOf: PackagePaths.libraryData) else { return [] }
        return data.split(separator: 0x0A).map { Data($0) }
    }()

    /// `count` lines picked with `seed`, as NDJSON.
    static func slice(count: Int, seed: UInt64) -> [UInt8] {
        guard !lines.isEmpty else { return [] }
        var rng = SeededGenerator(seed: seed)
        var picked: [[String: Any]] = []
        var taken = Set<Int>()
        while taken.count < min(count, lines.count) {
            let i = rng.below(lines.count)
            if taken.insert(i).inserted, let line = try? JSONSerialization.jsonObject(with: lines[i]) as? [String: Any] {
                picked.append(line)
            }
        }
        let ids = Set(picked.compactMap { $0["id"] as? String })
        var out: [UInt8] = []
        for var line in picked {
            if var rels = line["relationships"] as? [String: Any] {
                for (k, v) in rels {
                    if let one = v as? String { rels[k] = ids.contains(one) ? one : nil }
                    if let many = v as? [String] { rels[k] = many.filter { ids.contains($0) } }
                }
                line["relationships"] = rels
            }
            if let json = try? JSONSerialization.data(withJSONObject: line, options: [.sortedKeys, .withoutEscapingSlashes]) {
                out += Array(json) + [0x0A]
            }
        }
        return out
    }
}
