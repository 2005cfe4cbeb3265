import Foundation
import StoreAPI
import StoreTestSupport
import Testing

/// Custom migration steps: user code per record converts what the inferred plan cannot, on every store type.
@Suite struct CustomMigrationStepTests {
    static let types = ["sqlite", "lmdb", "xml", "memory"]

    /// v1 with Book.isbn an Integer 64 (digits of the old text) and Book.title required without a default.
    static func isbnAsNumber() throws -> Schema {
        try EvolutionSchemas.v1(changing: "Book") { b in
            b.attributes[2].type = .integer64
            b.attributes[0].isOptional = false
        }
    }

    /// Parses the ISBN's digits and gives untitled books a title made from their key.
    static let step: RecordMigrationStep = { migration in
        guard migration.entity.name == "Book" else { return }
        if case .string(let text)? = migration.sourceValue("isbn") {
            try migration.set("isbn", Int64(text.filter(\.isNumber)).map { .integer64($0) } ?? .null)
        }
        if migration.value("title")?.isNull ?? true {
            try migration.set("title", .string("Untitled #\(migration.record.primaryKey)"))
        }
    }

    @Test("a custom step converts a type and fills a newly required value", arguments: types)
    func customStepConverts(_ type: String) throws {
        let dir = try TemporaryDirectory("custom-step")
        let url = SchemaUpgradeTests.url(type, in: dir)
        defer { SchemaUpgradeTests.cleanUp(type, url) }
        try SchemaUpgradeTests.makeV1Store(type, at: url)
        let to = try Self.isbnAsNumber()

        // Without the step: the type change is refused, and the title would be missing.
        #expect(throws: StoreError.self) { try SchemaUpgradeTests.operations.upgradeStore(at: url, to: to) }

        let plan = try SchemaUpgradeTests.operations.upgradeStore(at: url, to: to, options: .init(customStep: Self.step))
        #expect(plan.entities.first { $0.name == "Book" }?.attributes.first { $0.name == "isbn" }?.change == .custom)
        let store = try Backends.open(url, readOnly: true)
        defer { try? store.close() }
        #expect(store.metadata.versionHashes == to.versionHashes)
        let records = try Backends.records(of: store)
        #expect(records[SchemaUpgradeTests.ids[2]]?.attributes == [.string("The Dispossessed"), .integer16(387), .integer64(9780061054884)])
        #expect(records[SchemaUpgradeTests.ids[3]]?.attributes == [.string("Untitled #2"), .integer16(300), .null])
        #expect(records[SchemaUpgradeTests.ids[2]]?.relationships == [.toOne(1)], "links are the plan's")
    }

    @Test("a step that leaves a value of the old type stops the upgrade before anything is written", arguments: types)
    func wrongTypeIsRefused(_ type: String) throws {
        let dir = try TemporaryDirectory("custom-step-bad")
        let url = SchemaUpgradeTests.url(type, in: dir)
        defer { SchemaUpgradeTests.cleanUp(type, url) }
        try SchemaUpgradeTests.makeV1Store(type, at: url)
        let before = try SchemaUpgradeTests.snapshot(type, url)
        let lazy: RecordMigrationStep = { _ in }
        do {
            try SchemaUpgradeTests.operations.upgradeStore(at: url, to: Self.isbnAsNumber(), options: .init(customStep: lazy))
            Issue.record("expected a type mismatch")
        } catch StoreError.typeMismatch(let entity, let property, let expected, _) {
            #expect(entity == "Book" && property == "isbn" && expected == .integer64)
        }
        #expect(try SchemaUpgradeTests.snapshot(type, url) == before)
    }

    @Test("a chain runs a version's custom step on the step into it")
    func chainRunsCustomStep() throws {
        let dir = try TemporaryDirectory("custom-step-chain")
        let url = SchemaUpgradeTests.url("sqlite", in: dir)
        try SchemaUpgradeTests.makeV1Store("sqlite", at: url)
        let chain = SchemaVersionChain(versions: [("v1", try EvolutionSchemas.v1()), ("v2", try Self.isbnAsNumber())],
                                       customSteps: ["v2": Self.step])
        let steps = try SchemaUpgradeTests.operations.upgradeStore(at: url, through: chain)
        #expect(steps.map(\.to) == ["v2"])
        let store = try Backends.open(url, readOnly: true)
        defer { try? store.close() }
        #expect(try Backends.records(of: store)[SchemaUpgradeTests.ids[2]]?.attributes[2] == .integer64(9780061054884))
    }
}
