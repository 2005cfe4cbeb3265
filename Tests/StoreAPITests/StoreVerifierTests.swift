import Foundation
@_spi(BackendKit) import StoreAPI
import StoreTestSupport
import Testing

/// The verifier on records written as given (the in-memory backend stores both sides exactly as saved, so the
/// inconsistencies a damaged store could hold can be built directly).
@Suite("StoreVerifier")
struct StoreVerifierTests {
    @Test func consistentStoreHasNoProblems() throws {
        let url = MemoryStores.newURL("ok")
        defer { MemoryStores.destroy(url) }
        try EdgeFixtures.populate(type: "memory", at: url, registry: MemoryStores.registry)
        let store = try MemoryStores.open(url, readOnly: true)
        #expect(try store.count(FetchRequest(entity: "Thing")) > 0)
        #expect(try StoreVerifier(batchSize: 2).verify(store) == [])
    }

    @Test func findsEveryKindOfInconsistency() throws {
        let schema = EdgeFixtures.schema
        let store = MemoryStore(url: nil, metadata: StoreMetadata(storeType: "memory", schema: schema))
        let sample = try #require(schema.entity(named: "Sample"))
        let owner = try #require(schema.entity(named: "Owner"))
        let label = try #require(schema.entity(named: "Label"))
        let ownerIndex = try #require(sample.relationshipIndex("owner"))
        let labelsIndex = try #require(sample.relationshipIndex("labels"))

        var s1 = sample.newRecord(primaryKey: 1)
        s1.relationships[ownerIndex] = .toOne(10)          // owner 10 does not list it
        var s2 = sample.newRecord(primaryKey: 2, globalID: s1.globalID)  // duplicate global ID
        s2.relationships[labelsIndex] = .toMany([20, 20])  // listed twice; label 20 lists neither
        var o = owner.newRecord(primaryKey: 10)
        o.attributes[0] = .null                            // required name missing
        o.relationships[0] = .toMany([99])                 // no such sample
        var l = label.newRecord(primaryKey: 20)
        l.attributes[0] = .integer32(5)                    // wrong type for a string attribute
        try store.save(StoreChanges(inserted: [s1, s2, o, l]))

        let problems = try StoreVerifier().verify(store)
        let expected = [
            "Sample/p1 (id \(s1.globalID.uuidString)): relationship 'owner' points to Owner/p10, whose 'samples' does not point back",
            "Sample/p2 (id \(s1.globalID.uuidString)): relationship 'labels' lists a record twice",
            "Sample/p2 (id \(s1.globalID.uuidString)): relationship 'labels' points to Label/p20, whose 'samples' does not point back",
            "Sample/p2: global ID \(s1.globalID.uuidString) is also used by Sample/p1",
            "Owner/p10 (id \(o.globalID.uuidString)): required attribute 'name' is empty",
            "Owner/p10 (id \(o.globalID.uuidString)): relationship 'samples' points to Thing/p99, which does not exist",
            "Label/p20 (id \(l.globalID.uuidString)): attribute 'text' is a string but holds a value of type integer32 (5)",
        ]
        for e in expected { #expect(problems.contains(e), "missing: \(e)\nin: \(problems)") }
        #expect(problems.count == expected.count, "\(problems)")
    }
}
