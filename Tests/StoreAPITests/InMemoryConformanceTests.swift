import StoreAPI
import StoreConformance
import Testing

/// The in-memory backend runs the published conformance suite like any other backend.
@Suite struct InMemoryConformanceTests {
    static let suite = ConformanceSuite(backend: InMemoryBackend())

    @Test(arguments: suite.groups)
    func conformance(_ group: ConformanceGroup) throws {
        try Self.suite.run(group)
    }
}
