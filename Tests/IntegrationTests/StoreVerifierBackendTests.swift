import Foundation
import StoreAPI
import StoreTestSupport
import Testing

/// The verifier on a consistent store of every persistent type (its checks on damaged records: StoreAPITests).
@Suite("StoreVerifier across backends")
struct StoreVerifierBackendTests {
    @Test(arguments: Backends.persistentTypes)
    func consistentStoreHasNoProblems(type: String) throws {
        let dir = try TemporaryDirectory("verifier")
        let url = dir.path("ok.\(type)")
        try EdgeFixtures.populate(type: type, at: url, registry: Backends.registry)
        let store = try Backends.open(url, readOnly: true)
        defer { try? store.close() }
        #expect(try StoreVerifier(batchSize: 2).verify(store) == [], "\(type)")
    }
}
