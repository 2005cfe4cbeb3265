import JSONStoreBackend
import StoreAPI
import StoreConformance
import Testing

/// The framework's published conformance suite, run against the JSON backend: one test per group the backend's
/// capabilities allow (a group it cannot run is left out of `suite.groups`, not skipped silently).
@Suite struct JSONConformanceTests {
    /// The in-memory backend is the peer for the cross-type round trips (convert there and back).
    static let suite = ConformanceSuite(backend: JSONStoreBackend(), peers: [InMemoryBackend()])

    @Test(arguments: suite.groups)
    func conformance(_ group: ConformanceGroup) throws {
        try Self.suite.run(group)
    }

    /// A rich store copied json → memory → json → json keeps everything (the framework's transfer engine, then
    /// the inherited file copy).
    @Test func conversionChainThroughJSON() throws {
        try Self.suite.runConversionChain(["memory", "json", "json"])
    }
}
