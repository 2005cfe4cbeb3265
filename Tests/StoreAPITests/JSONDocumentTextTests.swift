import Foundation
import StoreTestSupport
import Testing
@testable import StoreAPI

/// The stored metadata (``StoreMetadata/encoded()``) and the schema's JSON form (``Schema/jsonData()``) are written
/// without `JSONEncoder`. Readers — this build's, `JSONDecoder`, and older builds reading our stores — must see what
/// they saw: these tests hold the text to `JSONEncoder`'s for the same values, byte for byte, and the values read
/// back by `JSONDecoder` to the values written, for random schemas and metadata.
struct JSONDocumentTextTests {
    /// `JSONEncoder`'s text of the schema, with the options `jsonData()` documents.
    private static func encoderText(_ schema: Schema) throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        return try encoder.encode(schema)
    }

    private static func encoderText(_ metadata: StoreMetadata) throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return try encoder.encode(metadata)
    }

    /// Text with the odd bytes a writer must escape or keep: quotes, backslashes, slashes, every control byte,
    /// non-ASCII letters (whose UTF-8 bytes sort after ASCII), digits and both cases (which sort apart).
    private static let pieces = ["a", "B", "z", "Z", "0", "9", "10", "_", " ", "/", "\"", "\\", "\n", "\r", "\t", "\u{08}",
                                 "\u{0C}", "\u{00}", "\u{01}", "\u{1F}", "\u{7F}", "é", "Ä", "名", "🙂", "-", "."]

    private static func text(_ g: inout SeededGenerator, minLength: Int = 0) -> String {
        (0..<(minLength + g.below(6))).map { _ in g.pick(pieces) }.joined()
    }

    private static func name(_ g: inout SeededGenerator, _ prefix: String) -> String {
        g.below(3) == 0 ? prefix + text(&g, minLength: 1) : prefix + String(g.below(20))
    }

    private static func maybe(_ g: inout SeededGenerator, _ make: (inout SeededGenerator) -> String) -> String? {
        g.below(3) == 0 ? make(&g) : nil
    }

    private static func userInfo(_ g: inout SeededGenerator) -> [String: String] {
        var info: [String: String] = [:]
        for _ in 0..<(g.below(3) == 0 ? g.below(5) : 0) { info[text(&g)] = text(&g) }
        return info
    }

    private static func defaultValue(_ type: AttributeType, _ g: inout SeededGenerator) -> StoreValue? {
        guard g.below(2) == 0 else { return nil }
        let doubles: [Double] = [0, -0.0, 1, -1, 0.1, 1e-7, 1.5e300, .leastNonzeroMagnitude, 123456789012345680, .pi, 2e16, 1e21, -3.25,
                                 .nan, .infinity, -.infinity, Double(g.next() >> 11) / 1e5]
        switch type {
        case .integer16: return .integer16(Int16(truncatingIfNeeded: g.next()))
        case .integer32: return .integer32(Int32(truncatingIfNeeded: g.next()))
        case .integer64: return .integer64(g.pick([0, 1, -1, .max, .min, Int64(bitPattern: g.next())]))
        case .decimal: return .decimal(Decimal(string: g.pick(["0", "12.50", "-0.001", "1e20", "3.14159265358979323846"])) ?? 0)
        case .double: return .double(g.pick(doubles))
        case .float: return .float(Float(g.pick(doubles)))
        case .string: return .string(text(&g))
        case .boolean: return .boolean(g.below(2) == 0)
        case .date: return .date(Date(timeIntervalSinceReferenceDate: Double(Int64(bitPattern: g.next()) % 4_000_000_000) / 1000))
        case .binary, .transformable: return .binary(Data((0..<g.below(9)).map { _ in UInt8(truncatingIfNeeded: g.next()) }))
        case .uuid: return .uuid(UUID())
        case .uri: return .uri(URL(string: g.pick(["https://example.com/a%20b?q=1", "file:///tmp/x", "x-coredata://A/B/p1"]))
                                ?? URL(fileURLWithPath: "/"))
        }
    }

    static func randomSchema(_ g: inout SeededGenerator) throws -> Schema {
        var names: [String] = []
        while names.count < 1 + g.below(5) {
            let n = name(&g, "E")
            if !names.contains(n) { names.append(n) }
        }
        var definitions: [EntityDescription] = []
        for (i, entityName) in names.enumerated() {
            var attributes: [AttributeDescription] = []
            var used: Set<String> = []
            for _ in 0..<g.below(6) {
                // Prefixed with the entity's place: an entity inherits its ancestors' attributes, whose names it may not reuse.
                let n = name(&g, "a\(i)_")
                guard used.insert(n).inserted else { continue }
                let type = g.pick(AttributeType.allCases)
                attributes.append(AttributeDescription(
                    name: n, type: type, isOptional: g.below(3) != 0, defaultValue: defaultValue(type, &g),
                    isTransient: g.below(8) == 0, valueTransformerName: type == .transformable ? maybe(&g) { text(&$0) } : nil,
                    userInfo: userInfo(&g), versionHashModifier: maybe(&g) { text(&$0) }, isReadOnly: g.below(8) == 0,
                    allowsExternalBinaryDataStorage: type == .binary && g.below(2) == 0,
                    preservesValueInHistoryOnDeletion: g.below(8) == 0, renamingIdentifier: maybe(&g) { text(&$0) },
                    isIndexed: g.below(5) == 0))
            }
            var derived: [AttributeDescription] = []
            if g.below(4) == 0, let first = attributes.first {
                derived.append(AttributeDescription(name: "derived" + String(i), type: .integer64,
                                                    derivation: AttributeDerivation(expression: first.name + ".@count",
                                                                                     filteringPredicate: maybe(&g) { text(&$0) })))
            }
            var relationships: [RelationshipDescription] = []
            if g.below(2) == 0 {
                let toMany = g.below(2) == 0
                relationships.append(RelationshipDescription(
                    name: "r" + String(i), destination: g.pick(names), inverse: nil, isToMany: toMany,
                    isOrdered: toMany && g.below(2) == 0, deleteRule: g.pick(DeleteRule.allCases), isOptional: g.below(3) != 0,
                    minCount: g.below(toMany ? 3 : 2), maxCount: toMany ? g.pick([nil, 0, 5]) : g.pick([nil, 0, 1]),
                    userInfo: userInfo(&g), versionHashModifier: maybe(&g) { text(&$0) }, isReadOnly: g.below(8) == 0,
                    renamingIdentifier: maybe(&g) { text(&$0) }, declaredMinCount: g.below(3) == 0 ? g.below(4) : nil,
                    declaredMaxCount: g.below(3) == 0 ? g.below(4) : nil))
            }
            let stored = attributes.filter { !$0.isTransient }.map(\.name)
            definitions.append(EntityDescription(
                name: entityName, parent: i > 0 && g.below(3) == 0 ? names[g.below(i)] : nil, isAbstract: g.below(6) == 0,
                attributes: attributes, relationships: relationships,
                uniquenessConstraints: stored.isEmpty || g.below(2) == 0 ? [] : [[g.pick(stored)]],
                userInfo: userInfo(&g), versionHashModifier: maybe(&g) { text(&$0) },
                representedClassName: maybe(&g) { text(&$0) }, derivedAttributes: derived,
                renamingIdentifier: maybe(&g) { text(&$0) },
                fetchIndexes: stored.isEmpty || g.below(2) == 0 ? [] : [FetchIndex(name: name(&g, "i"), elements: [
                    FetchIndex.Element(property: g.pick(stored), kind: g.pick(FetchIndex.Kind.allCases), isAscending: g.below(2) == 0),
                ])]))
        }
        var configurations: [String: [String]] = [:]
        for _ in 0..<(g.below(3) == 0 ? 1 + g.below(3) : 0) {
            configurations[text(&g)] = names.filter { _ in g.below(2) == 0 }
        }
        return try Schema(entities: definitions, configurations: configurations)
    }

    private static func metadataValue(_ g: inout SeededGenerator, depth: Int = 0) -> MetadataValue {
        switch g.below(depth > 2 ? 5 : 7) {
        case 0: return .string(text(&g))
        case 1: return .integer(g.pick([0, 1, -1, .max, .min, Int64(bitPattern: g.next())]))
        case 2: return .double(g.pick([0.1, -2.5e-3, 1.5e300, .leastNonzeroMagnitude, 1e21, 1e-7, 0.5, Double(g.next() >> 11) / 1e3]))
        case 3: return .bool(g.below(2) == 0)
        case 4: return .null
        case 5: return .array((0..<g.below(4)).map { _ in metadataValue(&g, depth: depth + 1) })
        default:
            var d: [String: MetadataValue] = [:]
            for _ in 0..<g.below(4) { d[text(&g)] = metadataValue(&g, depth: depth + 1) }
            return .dictionary(d)
        }
    }

    static func randomMetadata(_ g: inout SeededGenerator) throws -> StoreMetadata {
        let schema = try randomSchema(&g)
        var custom: [String: MetadataValue] = [:]
        for _ in 0..<g.below(6) { custom[text(&g)] = metadataValue(&g) }
        let sync = g.below(3) == 0
            ? SyncOptions(remote: URL(string: g.pick(["https://sync.example.com/a%20b?q=1", "file:///tmp/remote/", "s3://b/k"]))
                              ?? URL(fileURLWithPath: "/"),
                          containerIdentifier: text(&g), scope: g.pick([.private, .public, .shared]))
            : nil
        var m = StoreMetadata(storeType: g.pick(["sqlite", "lmdb", "coredata", "xml", "a/b\"c"]), schema: schema,
                              configuration: schema.configurations.keys.sorted().first, custom: custom, syncOptions: sync)
        if g.below(2) == 0 { m.formatVersion = StoreMetadata.legacyVersionHashFormatVersion }
        if g.below(2) == 0 {
            var counters: [String: Int64] = [:]
            for e in schema.rootEntities { counters[e.name] = g.pick([1, 42, .max]) }
            m.primaryKeyCounters = counters
        }
        return m
    }

    @Test func schemaTextIsJSONEncodersForRandomSchemas() throws {
        var g = SeededGenerator(seed: 0x5C4E_4A7A)
        for i in 0..<400 {
            let schema = try Self.randomSchema(&g)
            let ours = try schema.jsonData()
            let theirs = try Self.encoderText(schema)
            #expect(ours == theirs, "schema \(i):\n\(String(decoding: ours, as: UTF8.self))\n---\n\(String(decoding: theirs, as: UTF8.self))")
            let back = try JSONDecoder().decode(Schema.self, from: ours)
            #expect(back == schema, "schema \(i)")
            #expect(back.versionHashes == schema.versionHashes, "schema \(i)")
            guard ours == theirs else { return }
        }
    }

    @Test func metadataTextIsJSONEncodersForRandomMetadata() throws {
        var g = SeededGenerator(seed: 0x3E7A_DA7A)
        for i in 0..<400 {
            let metadata = try Self.randomMetadata(&g)
            let ours = try metadata.encoded()
            let theirs = try Self.encoderText(metadata)
            #expect(ours == theirs, "metadata \(i):\n\(String(decoding: ours, as: UTF8.self))\n---\n\(String(decoding: theirs, as: UTF8.self))")
            let back = try JSONDecoder().decode(StoreMetadata.self, from: ours)
            #expect(back == metadata, "metadata \(i)")
            #expect(back.custom == metadata.custom && back.primaryKeyCounters == metadata.primaryKeyCounters, "metadata \(i)")
            #expect(try StoreMetadata.decode(ours, url: URL(fileURLWithPath: "/tmp/x")) == metadata, "metadata \(i)")
            guard ours == theirs else { return }
        }
    }

    @Test("every corpus model's JSON form is JSONEncoder's", .enabled(if: SchemaCorpus.isPresent, SchemaCorpus.absentMessage))
    func corpusSchemaTextIsJSONEncoders() throws {
        for path in SchemaCorpus.modelVersions {
            let schema = try SchemaCorpus.load(path)
            #expect(try schema.jsonData() == (try Self.encoderText(schema)), "\(path)")
            let metadata = StoreMetadata(storeType: "coredata", schema: schema)
            #expect(try metadata.encoded() == (try Self.encoderText(metadata)), "\(path)")
        }
    }

    @Test func emptyContainersAndNestedIndentation() throws {
        let schema = try Schema(entities: [
            EntityDescription(name: "E", attributes: [AttributeDescription(name: "a", type: .string)],
                              uniquenessConstraints: [["a"]], userInfo: ["": ""]),
        ], configurations: ["Empty": []])
        #expect(try schema.jsonData() == (try Self.encoderText(schema)))
        let metadata = StoreMetadata(storeType: "xml", schema: schema, custom: ["e": .array([]), "o": .dictionary([:]),
                                                                             "n": .array([.array([]), .dictionary(["": .null])])])
        #expect(try metadata.encoded() == (try Self.encoderText(metadata)))
    }

    @Test func aCustomValueJSONCannotHoldIsStillRefused() throws {
        for bad in [Double.nan, .infinity, -.infinity] {
            let metadata = StoreMetadata(storeType: "xml", schema: try Schema(entities: [EntityDescription(name: "E")]),
                                         custom: ["deep": .array([.dictionary(["x": .double(bad)])])])
            #expect(throws: StoreError.self) { try metadata.encoded() }
        }
    }
}
