import Foundation
import Testing
@testable import StoreAPI

/// Schema construction refuses every inconsistency with the entity and property at fault.
struct SchemaValidationTests {
    private func error(_ entities: [EntityDescription], configurations: [String: [String]] = [:]) throws -> SchemaError {
        try #require(throws: SchemaError.self) { try Schema(entities: entities, configurations: configurations) }
    }

    private let a = AttributeDescription(name: "a", type: .string)

    @Test func duplicateEntity() throws {
        #expect(try error([EntityDescription(name: "E"), EntityDescription(name: "E")]) == .duplicateEntity("E"))
    }

    @Test func duplicatePropertyOwnAndInherited() throws {
        #expect(try error([EntityDescription(name: "E", attributes: [a, a])]) == .duplicateProperty(entity: "E", property: "a"))
        let rel = RelationshipDescription(name: "a", destination: "E")
        #expect(try error([EntityDescription(name: "E", attributes: [a], relationships: [rel])])
            == .duplicateProperty(entity: "E", property: "a"))
        #expect(try error([
            EntityDescription(name: "Base", attributes: [a]),
            EntityDescription(name: "Sub", parent: "Base", attributes: [AttributeDescription(name: "a", type: .integer64)]),
        ]) == .duplicateProperty(entity: "Sub", property: "a"))
        // Two siblings may each declare the same name.
        let siblings = try Schema(entities: [
            EntityDescription(name: "Base"),
            EntityDescription(name: "X", parent: "Base", attributes: [a]),
            EntityDescription(name: "Y", parent: "Base", attributes: [a]),
        ])
        #expect(siblings.entity(named: "Base")?.hierarchyNames == ["Base", "X", "Y"])
    }

    @Test func unknownParentAndCycles() throws {
        #expect(try error([EntityDescription(name: "E", parent: "Ghost")]) == .unknownParent(entity: "E", parent: "Ghost"))
        #expect(try error([EntityDescription(name: "E", parent: "E")]) == .inheritanceCycle(entity: "E"))
        let cycle = try error([
            EntityDescription(name: "A", parent: "C"), EntityDescription(name: "B", parent: "A"),
            EntityDescription(name: "C", parent: "B"),
        ])
        guard case .inheritanceCycle = cycle else { Issue.record("\(cycle)"); return }
    }

    @Test func unknownDestination() throws {
        let e = try error([EntityDescription(name: "E", relationships: [RelationshipDescription(name: "r", destination: "Nowhere")])])
        #expect(e == .unknownDestination(entity: "E", relationship: "r", destination: "Nowhere"))
    }

    @Test func inverseMismatches() throws {
        func check(_ entities: [EntityDescription]) throws {
            let e = try error(entities)
            guard case .inverseMismatch = e else { Issue.record("\(e)"); return }
        }
        // Inverse names a relationship that does not exist.
        try check([
            EntityDescription(name: "A", relationships: [RelationshipDescription(name: "b", destination: "B", inverse: "nope")]),
            EntityDescription(name: "B"),
        ])
        // Inverse names a relationship that points back to a different one.
        try check([
            EntityDescription(name: "A", relationships: [
                RelationshipDescription(name: "b", destination: "B", inverse: "a"),
                RelationshipDescription(name: "b2", destination: "B"),
            ]),
            EntityDescription(name: "B", relationships: [RelationshipDescription(name: "a", destination: "A", inverse: "b2")]),
        ])
        // Inverse lives on an unrelated entity.
        try check([
            EntityDescription(name: "A", relationships: [RelationshipDescription(name: "b", destination: "B", inverse: "c")]),
            EntityDescription(name: "B", relationships: [RelationshipDescription(name: "c", destination: "C")]),
            EntityDescription(name: "C"),
        ])
        // One side transient.
        try check([
            EntityDescription(name: "A", relationships: [RelationshipDescription(name: "b", destination: "B", inverse: "a")]),
            EntityDescription(name: "B", relationships: [RelationshipDescription(name: "a", destination: "A", inverse: "b", isTransient: true)]),
        ])
        // A one-sided declaration (the inverse declares none) is accepted, as Core Data accepts it.
        let oneSided = try Schema(entities: [
            EntityDescription(name: "A", relationships: [RelationshipDescription(name: "b", destination: "B", inverse: "a")]),
            EntityDescription(name: "B", relationships: [RelationshipDescription(name: "a", destination: "A", isToMany: true)]),
        ])
        #expect(oneSided.inverse(of: try #require(oneSided.entity(named: "A")?.relationship("b")))?.name == "a")
        // An inverse on a sub-entity of the destination's parent chain is fine.
        _ = try Schema(entities: [
            EntityDescription(name: "Base", relationships: [RelationshipDescription(name: "owner", destination: "Owner", inverse: "items")]),
            EntityDescription(name: "Sub", parent: "Base"),
            EntityDescription(name: "Owner", relationships: [RelationshipDescription(name: "items", destination: "Sub", inverse: "owner", isToMany: true)]),
        ])
    }

    @Test func badCounts() throws {
        let cases: [RelationshipDescription] = [
            RelationshipDescription(name: "r", destination: "E", isToMany: true, minCount: 3, maxCount: 2),
            RelationshipDescription(name: "r", destination: "E", isToMany: true, minCount: -1),
            RelationshipDescription(name: "r", destination: "E", isToMany: true, maxCount: -2),
            RelationshipDescription(name: "r", destination: "E", isToMany: false, maxCount: 2),
        ]
        for r in cases {
            #expect(try error([EntityDescription(name: "E", relationships: [r])]) == .invalidCount(entity: "E", relationship: "r"))
        }
        _ = try Schema(entities: [EntityDescription(name: "E", relationships: [
            RelationshipDescription(name: "r", destination: "E", isToMany: true, minCount: 5),  // no maximum
        ])])
    }

    @Test func defaultOfTheWrongType() throws {
        let cases: [(AttributeType, StoreValue)] = [
            (.integer16, .integer64(1)), (.string, .integer64(1)), (.boolean, .integer16(1)), (.date, .string("2020-01-01")),
            (.uuid, .string("x")), (.binary, .string("x")), (.float, .double(1)),
        ]
        for (type, value) in cases {
            let e = try error([EntityDescription(name: "E", attributes: [AttributeDescription(name: "x", type: type, defaultValue: value)])])
            #expect(e == .defaultValueMismatch(entity: "E", attribute: "x", type: type))
        }
        // Binary data is the stored form of a transformable default.
        _ = try Schema(entities: [EntityDescription(name: "E", attributes: [
            AttributeDescription(name: "x", type: .transformable, defaultValue: .binary(Data([1]))),
        ])])
    }

    @Test func uniquenessConstraintOnUnknownOrTransientAttribute() throws {
        #expect(try error([EntityDescription(name: "E", attributes: [a], uniquenessConstraints: [["a", "b"]])])
            == .invalidUniquenessConstraint(entity: "E", attribute: "b"))
        let transient = AttributeDescription(name: "t", type: .string, isTransient: true)
        #expect(try error([EntityDescription(name: "E", attributes: [transient], uniquenessConstraints: [["t"]])])
            == .invalidUniquenessConstraint(entity: "E", attribute: "t"))
        #expect(try error([EntityDescription(name: "E", attributes: [a], uniquenessConstraints: [[]])])
            == .invalidUniquenessConstraint(entity: "E", attribute: ""))
        // An inherited attribute may be constrained on the sub-entity.
        let s = try Schema(entities: [
            EntityDescription(name: "Base", attributes: [a]),
            EntityDescription(name: "Sub", parent: "Base", uniquenessConstraints: [["a"]]),
        ])
        #expect(s.entity(named: "Sub")?.uniquenessConstraints == [["a"]])
    }

    @Test func configurationNamingUnknownEntity() throws {
        #expect(try error([EntityDescription(name: "E")], configurations: ["Cloud": ["E", "F"]])
            == .unknownConfigurationMember(configuration: "Cloud", entity: "F"))
    }

    @Test func emptyNames() throws {
        #expect(try error([EntityDescription(name: "")]) == .invalidName(entity: "", property: nil))
        let e = try error([EntityDescription(name: "E", attributes: [AttributeDescription(name: "", type: .string)])])
        guard case .invalidName(entity: "E", property: _) = e else { Issue.record("\(e)"); return }
    }

    @Test func errorsDescribeThemselves() throws {
        let e = SchemaError.invalidModel(file: "/m/contents", error: .duplicateEntity("E"))
        #expect(e.description == "/m/contents: schema: entity 'E' is defined twice")
        #expect(e.rootCause == .duplicateEntity("E"))
        #expect(StoreError.invalidSchema(e).description.contains("/m/contents"))
    }
}
