import Foundation
import StoreAPI
import Testing

/// Attribute names are looked up by their representation first (short names are stored inside the string), then
/// compared: whatever way a name string was made, the lookup finds the same
/// attribute, and names that share a prefix, a length or a first byte are told apart.
@Suite struct AttributeLookupTests {
    static let names = [
        "a", "ab", "b", "café", "naïve", "title", "titles", "tItle", "exactlyFifteen!", "exactlySixteen!!",
        "aVeryLongAttributeNameIndeed", "aVeryLongAttributeNameIndeeD", "emoji🙂", "_pk",
    ]

    @Test func everyWayOfSpellingANameFindsItsAttribute() throws {
        let schema = try Schema(entities: [
            EntityDescription(name: "Thing", attributes: Self.names.map { AttributeDescription(name: $0, type: .string) }),
            EntityDescription(name: "Wide", attributes: (0..<20).map { AttributeDescription(name: "field\($0)", type: .integer32) }),
        ])
        let thing = try schema.requireEntity("Thing")
        for (i, name) in Self.names.enumerated() {
            // A literal-like copy, a string built at run time (its own storage), and one decoded from bytes.
            let built = String(name.unicodeScalars.map(Character.init))
            let decoded = String(decoding: Array(name.utf8), as: UTF8.self)
            let bridged = NSString(string: name) as String
            for candidate in [name, built, decoded, bridged, name + ""] {
                #expect(thing.attributeIndex(candidate) == i, "\(candidate)")
            }
        }
        for missing in ["", "c", "Title", "titl", "exactlyFifteen", "aVeryLongAttributeNameIndeedX", "cafe", "_PK"] {
            #expect(thing.attributeIndex(missing) == nil, "\(missing)")
        }
        // More attributes than the linear lookup covers: the dictionary path.
        let wide = try schema.requireEntity("Wide")
        for i in 0..<20 { #expect(wide.attributeIndex(String(decoding: Array("field\(i)".utf8), as: UTF8.self)) == i) }
        #expect(wide.attributeIndex("field20") == nil)
    }

    /// The representation table is probed linearly from a hashed slot: with hundreds of names, many share a home
    /// slot, and each must still be found at its own position — by its short form, by the schema's own string (a
    /// long name's storage) and by a copy — while near-misses are not.
    @Test func wideEntitiesFindEveryName() throws {
        let names = (0..<300).map { $0 % 3 == 0 ? "f\($0)" : ($0 % 3 == 1 ? "attribute_\($0)" : "a_much_longer_attribute_name_\($0)") }
        let schema = try Schema(entities: [
            EntityDescription(name: "Wide", attributes: names.map { AttributeDescription(name: $0, type: .integer64) }),
        ])
        let wide = try schema.requireEntity("Wide")
        for (i, name) in names.enumerated() {
            #expect(wide.attributeIndex(name) == i)
            #expect(wide.attributeIndex(wide.attributes[i].name) == i)
            #expect(wide.attributeIndex(String(decoding: Array(name.utf8), as: UTF8.self)) == i)
        }
        for missing in ["f1", "f300", "attribute_0", "a_much_longer_attribute_name_1", "F0", ""] {
            #expect(wide.attributeIndex(missing) == nil, "\(missing)")
        }
    }

    @Test func insertsAcceptNamesHoweverTheyWereMade() throws {
        let schema = try Schema(entities: [
            EntityDescription(name: "Thing", attributes: Self.names.map { AttributeDescription(name: $0, type: .string, isOptional: true) }),
        ])
        let coordinator = StoreCoordinator(schema: schema)
        try coordinator.addStore(StoreDescription(url: nil, type: "memory"))
        let context = coordinator.newContext()
        var values: [String: StoreValue] = [:]
        for name in Self.names { values[String(decoding: Array(name.utf8), as: UTF8.self)] = .string("value of \(name)") }
        let o = try context.insert("Thing", values)
        for name in Self.names { #expect(try o.value(forKey: name) == .string("value of \(name)")) }
        #expect(throws: StoreError.self) { try context.insert("Thing", ["Title": "no such attribute"]) }
    }
}
