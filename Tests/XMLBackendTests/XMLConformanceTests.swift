import StoreAPI
import StoreConformance
import Testing
import XMLBackend

/// The published conformance suite, run against the XML backend.
@Suite struct XMLConformanceTests {
    static let suite = ConformanceSuite(backend: XMLStoreBackend(), peers: [InMemoryBackend()])

    @Test(arguments: suite.groups)
    func conformance(_ group: ConformanceGroup) throws {
        try Self.suite.run(group)
    }

    /// A rich store copied xml → memory → xml → xml keeps everything (the framework's transfer engine, then the
    /// backend's own file copy).
    @Test func conversionChainThroughXML() throws {
        try Self.suite.runConversionChain(["memory", "xml", "xml"])
    }
}
