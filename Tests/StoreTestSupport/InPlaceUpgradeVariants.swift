import Foundation
import StoreAPI
import Testing

/// Changes to the conformance schema for in-place upgrade tests, each with whether a SQL backend can make it where
/// the store is (`ALTER TABLE`, no record rewritten) or must stream the store through the plan.
public enum InPlaceUpgradeVariants {
    /// One change to the conformance schema, and whether it can be made where the store is.
    public struct Variant: CustomTestStringConvertible, Sendable {
        public let name: String
        public let inPlace: Bool
        public let change: @Sendable (inout [EntityDescription]) -> Void
        public var testDescription: String { name }

        public init(name: String, inPlace: Bool, change: @escaping @Sendable (inout [EntityDescription]) -> Void) {
            self.name = name
            self.inPlace = inPlace
            self.change = change
        }
    }

    static func edit(_ defs: inout [EntityDescription], _ name: String, _ change: (inout EntityDescription) -> Void) {
        if let i = defs.firstIndex(where: { $0.name == name }) { change(&defs[i]) }
    }

    public static let date = Date(timeIntervalSinceReferenceDate: 12_345.678)
    public static let variants: [Variant] = [
        Variant(name: "an optional attribute on a sub-entity", inPlace: true) { defs in
            edit(&defs, "Novel") { $0.attributes.append(AttributeDescription(name: "series", type: .string)) }
        },
        Variant(name: "attributes of every type with defaults", inPlace: true) { defs in
            edit(&defs, "Sample") { e in
                e.attributes += [
                    AttributeDescription(name: "n16", type: .integer16, defaultValue: .integer16(-3)),
                    AttributeDescription(name: "n32", type: .integer32, defaultValue: .integer32(Int32.min)),
                    AttributeDescription(name: "n64", type: .integer64, defaultValue: .integer64(Int64.max)),
                    AttributeDescription(name: "d", type: .double, defaultValue: .double(0.1)),
                    AttributeDescription(name: "d2", type: .double, defaultValue: .double(2)),
                    AttributeDescription(name: "f", type: .float, defaultValue: .float(1.1)),
                    AttributeDescription(name: "dt", type: .date, defaultValue: .date(date)),
                    AttributeDescription(name: "amount", type: .decimal, defaultValue: .decimal(Decimal(string: "12.3400") ?? 0)),
                    AttributeDescription(name: "s", type: .string, defaultValue: .string("it's \"ü\"")),
                    AttributeDescription(name: "yes", type: .boolean, defaultValue: .boolean(true)),
                    AttributeDescription(name: "u", type: .uuid, defaultValue: .uuid(UUID(uuidString: "0A0B0C0D-0000-4000-8000-00000000FFFF") ?? UUID())),
                    AttributeDescription(name: "b", type: .binary, defaultValue: .binary(Data([0, 1, 0xFF]))),
                    AttributeDescription(name: "url", type: .uri, defaultValue: .uri(URL(string: "https://example.com/a?b=c") ?? URL(fileURLWithPath: "/"))),
                ]
            }
        },
        Variant(name: "an attribute with a default on a hierarchy's root", inPlace: true) { defs in
            edit(&defs, "Work") { $0.attributes.append(AttributeDescription(name: "language", type: .string, defaultValue: .string("en"))) }
        },
        Variant(name: "entities, a sub-entity and relationships appended", inPlace: true) { defs in
            defs.append(EntityDescription(name: "Shelf", attributes: [AttributeDescription(name: "label", type: .string)], relationships: [
                RelationshipDescription(name: "owner", destination: "Author", inverse: "shelves"),
                RelationshipDescription(name: "tags", destination: "Tag", inverse: "shelves", isToMany: true),
            ]))
            defs.append(EntityDescription(name: "Poem", parent: "Work", attributes: [AttributeDescription(name: "meter", type: .string)]))
            edit(&defs, "Author") { $0.relationships.append(RelationshipDescription(name: "shelves", destination: "Shelf", inverse: "owner", isToMany: true)) }
            edit(&defs, "Tag") { $0.relationships.append(RelationshipDescription(name: "shelves", destination: "Shelf", inverse: "tags", isToMany: true)) }
        },
        Variant(name: "an indexed attribute and a required one made optional", inPlace: true) { defs in
            edit(&defs, "Author") { e in
                if let i = e.attributes.firstIndex(where: { $0.name == "name" }) { e.attributes[i].isOptional = true }
                e.attributes.append(AttributeDescription(name: "email", type: .string, isIndexed: true))
            }
        },
        Variant(name: "a default on a sub-entity sharing its table (streamed)", inPlace: false) { defs in
            edit(&defs, "Book") { $0.attributes.append(AttributeDescription(name: "edition", type: .integer32, defaultValue: .integer32(1))) }
        },
        Variant(name: "a removed attribute (streamed)", inPlace: false) { defs in
            edit(&defs, "Author") { $0.attributes.removeAll { $0.name == "born" } }
        },
        Variant(name: "an entity inserted before the others (streamed)", inPlace: false) { defs in
            defs.insert(EntityDescription(name: "Aardvark", attributes: [AttributeDescription(name: "x", type: .integer64)]), at: 0)
        },
    ]
}
