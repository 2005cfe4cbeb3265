import Foundation
import StoreAPI

/// A schema with every attribute type and relationship kind, and records holding the values most likely to be
/// bent on the way through text: NaN, negative zero, infinities, subnormals, integer limits, long decimals, dates at
/// the ends of the calendar and between milliseconds, empty and binary data, control characters.
public enum EdgeFixtures {
    /// The schema: an abstract `Thing`, `Sample` (every attribute type), `Owner`, `Label` and `Note`.
    public static let schema: Schema = {
        do {
            return try Schema(entities: [
                EntityDescription(name: "Thing", isAbstract: true, attributes: [
                    AttributeDescription(name: "name", type: .string),
                ]),
                EntityDescription(name: "Sample", parent: "Thing", attributes: [
                    AttributeDescription(name: "i16", type: .integer16),
                    AttributeDescription(name: "i32", type: .integer32),
                    AttributeDescription(name: "i64", type: .integer64),
                    AttributeDescription(name: "dec", type: .decimal),
                    AttributeDescription(name: "dbl", type: .double),
                    AttributeDescription(name: "flt", type: .float),
                    AttributeDescription(name: "str", type: .string),
                    AttributeDescription(name: "flag", type: .boolean),
                    AttributeDescription(name: "when", type: .date),
                    AttributeDescription(name: "blob", type: .binary),
                    AttributeDescription(name: "uid", type: .uuid),
                    AttributeDescription(name: "link", type: .uri),
                    AttributeDescription(name: "archived", type: .transformable, valueTransformerName: "NSSecureUnarchiveFromData"),
                ], relationships: [
                    RelationshipDescription(name: "owner", destination: "Owner", inverse: "samples"),
                    RelationshipDescription(name: "labels", destination: "Label", inverse: "samples", isToMany: true),
                    RelationshipDescription(name: "next", destination: "Sample", inverse: "previous"),
                    RelationshipDescription(name: "previous", destination: "Sample", inverse: "next"),
                    RelationshipDescription(name: "seeAlso", destination: "Thing", isToMany: true, isOrdered: true),
                ]),
                EntityDescription(name: "Note", parent: "Thing", attributes: [
                    AttributeDescription(name: "body", type: .string, isOptional: false, defaultValue: .string("(empty)")),
                ]),
                EntityDescription(name: "Owner", attributes: [
                    AttributeDescription(name: "name", type: .string, isOptional: false),
                ], relationships: [
                    RelationshipDescription(name: "samples", destination: "Sample", inverse: "owner", isToMany: true, isOrdered: true),
                ], uniquenessConstraints: [["name"]]),
                EntityDescription(name: "Label", attributes: [
                    AttributeDescription(name: "text", type: .string),
                ], relationships: [
                    RelationshipDescription(name: "samples", destination: "Sample", inverse: "labels", isToMany: true),
                ]),
            ])
        } catch {
            preconditionFailure("the edge schema is invalid: \(error)")
        }
    }()

    /// Attribute values of the samples, by attribute name.
    /// The attribute values of each `Sample` record.
    public static var sampleValues: [[String: StoreValue]] {
        [
            ["name": "limits low", "i16": .integer16(.min), "i32": .integer32(.min), "i64": .integer64(.min),
             "dec": .decimal(Decimal(string: "-12345678901234567890.123456789")!), "dbl": .double(.nan), "flt": .float(.nan),
             "str": "", "flag": false, "when": .date(.distantPast), "blob": .binary(Data()),
             "uid": .uuid(UUID(uuidString: "00000000-0000-0000-0000-000000000000")!),
             "link": .uri(URL(string: "https://example.com/a%20b?c=d&e=%C3%A9#frag")!), "archived": .binary(Data([0x62, 0x70, 0x6C, 0x69, 0x73, 0x74]))],
            ["name": "limits high", "i16": .integer16(.max), "i32": .integer32(.max), "i64": .integer64(.max),
             "dec": .decimal(Decimal(string: "99999999999999999999999999999999999999")!), "dbl": .double(-0.0), "flt": .float(-0.0),
             "str": "quote \" backslash \\ slash / newline \n tab \t nul \u{0} bell \u{7} del \u{7F} emoji 🧪 e\u{301} \u{2028}",
             "flag": true, "when": .date(.distantFuture), "blob": .binary(Data((0...255).map { UInt8($0) })),
             "uid": .uuid(UUID(uuidString: "FFFFFFFF-FFFF-FFFF-FFFF-FFFFFFFFFFFF")!),
             "link": .uri(URL(string: "file:///tmp/x")!)],
            ["name": "floats", "dbl": .double(.infinity), "flt": .float(-.infinity),
             "dec": .decimal(Decimal(string: "0.000000000000000000000000000001")!), "i64": .integer64(0),
             "when": .date(Date(timeIntervalSinceReferenceDate: 0.123_456_789_012_345_6)), "str": "  leading and trailing  "],
            ["name": "subnormal", "dbl": .double(.leastNonzeroMagnitude), "flt": .float(.leastNonzeroMagnitude),
             "when": .date(Date(timeIntervalSinceReferenceDate: -0.000_001)), "i32": .integer32(-1)],
            ["name": "ulps", "dbl": .double(0.1 + 0.2), "flt": .float(Float.greatestFiniteMagnitude),
             "when": .date(Date(timeIntervalSinceReferenceDate: 1_000_000_000.999_999_9)), "dec": .decimal(Decimal(string: "-0.5")!)],
            ["name": "precise", "dbl": .double(Double.pi * 1e300), "flt": .float(.pi), "when": .date(Date(timeIntervalSince1970: -1.5))],
            [:],  // everything null
        ]
    }

    /// Builds a store of `type` at `url` with samples, owners (ordered to-many), labels (many-to-many), a one-to-one
    /// chain, an ordered relationship without inverse, and notes (a default value). Returns the record count.
    @discardableResult
    public static func populate(type: String, at url: URL, registry: BackendRegistry) throws -> Int {
        let coordinator = StoreCoordinator(schema: schema, registry: registry)
        let loaded = try coordinator.addStore(StoreDescription(url: url, type: type))
        let ctx = coordinator.newContext()
        var samples: [ManagedObject] = []
        for values in sampleValues { samples.append(try ctx.insert("Sample", values)) }
        let owners = try (0..<3).map { try ctx.insert("Owner", ["name": .string("owner \($0)")]) }
        let labels = try (0..<4).map { try ctx.insert("Label", ["text": .string("label \($0)")]) }
        let notes = try (0..<2).map { _ in try ctx.insert("Note") }
        // Ordered to-many in a deliberately non-key order.
        try owners[0].setObjects([samples[5], samples[0], samples[3]], forKey: "samples")
        try owners[1].setObjects([samples[2], samples[1]], forKey: "samples")
        for (i, s) in samples.enumerated() {
            try s.setObjects(labels.enumerated().filter { ($0.offset + i) % 2 == 0 }.map(\.element), forKey: "labels")
        }
        try samples[0].setObject(samples[1], forKey: "next")
        try samples[1].setObject(samples[2], forKey: "next")
        try samples[4].setObjects([notes[1], samples[2], notes[0], samples[4]], forKey: "seeAlso")
        try ctx.save()
        try coordinator.removeStore(loaded)
        return samples.count + owners.count + labels.count + notes.count
    }
}
