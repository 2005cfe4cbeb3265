import Foundation
import StoreAPI
import StoreModels
import StoreTestSupport
import Testing

// The next version of an app's model adds required properties with initial values; the stores its users have on
// disk must open with it, their records reading those values.

enum ShelfState: String, ModelValue {
    case open, archived
}

@Model("Cabinet") struct CabinetV1 {
    var label: String
}

@Model("Cabinet") struct CabinetV2 {
    var label: String
    var rating: Int = 3
    var weight: Double = -1.5
    var state: ShelfState = .open
    var owner: String = "nobody"
    var locked: Bool = true
    var note: String? = nil
    var opened: Date = Date()
    var greeting: String = "hello \(1 + 1)"
}

@Suite("Model defaults")
struct ModelDefaultsTests {
    @Test("A constant initial value is the attribute's default in the schema")
    func constantsBecomeDefaults() throws {
        let entity = try #require(Schema(models: [CabinetV2.self]).entity(named: "Cabinet"))
        #expect(entity.attribute("rating")?.defaultValue == .integer64(3))
        #expect(entity.attribute("weight")?.defaultValue == .double(-1.5))
        #expect(entity.attribute("state")?.defaultValue == .string("open"))
        #expect(entity.attribute("owner")?.defaultValue == .string("nobody"))
        #expect(entity.attribute("locked")?.defaultValue == .boolean(true))
        #expect(entity.attribute("rating")?.isOptional == false)
    }

    @Test("Initial values evaluated per instance are not schema defaults")
    func expressionsAreNotDefaults() throws {
        let entity = try #require(Schema(models: [CabinetV2.self]).entity(named: "Cabinet"))
        #expect(entity.attribute("note")?.defaultValue == nil)
        #expect(entity.attribute("note")?.isOptional == true)
        // `Date()` and an interpolated string run per instance: baking one value into the schema would be wrong.
        #expect(entity.attribute("opened")?.defaultValue == nil)
        #expect(entity.attribute("greeting")?.defaultValue == nil)
    }

    @Test("A store written with the old model opens with the new one; old records read the defaults",
          arguments: [StoreKind.sqlite, .lmdb, .xml])
    func upgradeFillsDefaults(kind: StoreKind) async throws {
        let directory = try TemporaryDirectory()
        let url = directory.path("cabinets.\(kind.rawValue)")
        let old = try ModelStore(for: [CabinetV1.self], at: url, type: kind.rawValue, registry: StoreKind.registry)
        try await old.write { tx in
            try tx.insert(CabinetV1(label: "kitchen"))
            try tx.insert(CabinetV1(label: "hall"))
        }
        try old.close()

        // `opened` and `greeting` have no schema default, so the new version declares them without values to
        // add: only the constant-initialised properties are new here.
        var options = StoreOptions()
        options.migratesSchemaAutomatically = true
        let upgraded = try ModelStore(for: [CabinetV2Upgrade.self], at: url, type: kind.rawValue, options: options,
                                      registry: StoreKind.registry)
        defer { try? upgraded.close() }
        let cabinets = try await upgraded.read {
            try $0.fetch(CabinetV2Upgrade.self, sortedBy: [.ascending(\.label)])
        }
        #expect(cabinets.map(\.label) == ["hall", "kitchen"])
        for c in cabinets {
            #expect(c.rating == 3)
            #expect(c.weight == -1.5)
            #expect(c.state == .open)
            #expect(c.owner == "nobody")
            #expect(c.locked == true)
            #expect(c.note == nil)
        }
    }

    @Test("Without a default, adding a required property is refused and the store is left as it was")
    func requiredWithoutDefaultIsRefused() async throws {
        let directory = try TemporaryDirectory()
        let url = directory.path("cabinets.sqlite")
        let old = try ModelStore(for: [CabinetV1.self], at: url, type: "sqlite", registry: StoreKind.registry)
        try await old.write { tx in try tx.insert(CabinetV1(label: "kitchen")) }
        try old.close()

        var options = StoreOptions()
        options.migratesSchemaAutomatically = true
        let error = #expect(throws: StoreError.self) {
            try ModelStore(for: [CabinetV2.self], at: url, type: "sqlite", options: options,
                           registry: StoreKind.registry)
        }
        let message = "\(error.map { $0 as Any } ?? "")"
        #expect(message.contains("opened") && message.contains("greeting"), "\(message)")
        let reopened = try ModelStore(for: [CabinetV1.self], at: url, type: "sqlite", registry: StoreKind.registry)
        defer { try? reopened.close() }
        #expect(try await reopened.read { try $0.fetch(CabinetV1.self) }.map(\.label) == ["kitchen"])
    }
}

@Model("Cabinet") struct CabinetV2Upgrade {
    var label: String
    var rating: Int = 3
    var weight: Double = -1.5
    var state: ShelfState = .open
    var owner: String = "nobody"
    var locked: Bool = true
    var note: String? = nil
}
