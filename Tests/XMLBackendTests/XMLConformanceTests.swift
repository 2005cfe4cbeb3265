import StoreAPI
import StoreConformance
import Testing
import XMLBackend

/// The published conformance suite, run against the XML backend.
@Suite struct XMLConformanceTests {
    static let suite = ConformanceSuite(backend: XMLStoreBackend())

    @Test(arguments: suite.groups)
    func conformance(_ group: ConformanceGroup) throws {
        try Self.suite.run(group)
    }
}
