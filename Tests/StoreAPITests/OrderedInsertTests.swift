import Foundation
import StoreAPI
import StoreTestSupport
import Testing

/// Inserting with attribute values by position, as the typed layer does.
@Suite struct OrderedInsertTests {
    @Test func valuesByPositionAreConvertedAndDefaulted() throws {
        let schema = try Schema(entities: [
            EntityDescription(name: "Item", attributes: [
                AttributeDescription(name: "small", type: .integer16),
                AttributeDescription(name: "label", type: .string, defaultValue: "none"),
                AttributeDescription(name: "ratio", type: .double),
            ]),
        ])
        let coordinator = StoreCoordinator(schema: schema)
        try coordinator.addStore(StoreDescription(url: nil, type: "memory"))
        let context = coordinator.newContext()
        let item = try context.insert("Item", attributeValues: [.integer64(7), nil, .integer64(2)])
        #expect(try item.value(forKey: "small") == .integer16(7), "converted to the attribute's type")
        #expect(try item.value(forKey: "label") == "none", "nil takes the default")
        #expect(try item.value(forKey: "ratio") == .double(2))
        #expect(throws: StoreError.self, "too few values") { try context.insert("Item", attributeValues: [nil]) }
        #expect(throws: StoreError.self, "a value that does not convert") {
            try context.insert("Item", attributeValues: [.string("seven"), nil, nil])
        }
        #expect(throws: StoreError.self, "out of range for Int16") {
            try context.insert("Item", attributeValues: [.integer64(1 << 40), nil, nil])
        }
        try context.save()
        #expect(try context.count(FetchRequest(entity: "Item")) == 1)
    }
}
