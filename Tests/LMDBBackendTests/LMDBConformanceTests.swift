import LMDBBackend
import StoreAPI
import StoreConformance
import Testing

/// The published conformance suite, run against the LMDB backend.
@Suite struct LMDBConformanceTests {
    static let suite = ConformanceSuite(backend: LMDBStoreBackend(), worker: ConformanceWorker.executable(named: "conformance-worker"))

    @Test(arguments: suite.groups)
    func conformance(_ group: ConformanceGroup) throws {
        try Self.suite.run(group)
    }
}
