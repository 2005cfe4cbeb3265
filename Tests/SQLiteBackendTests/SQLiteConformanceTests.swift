import SQLiteBackend
import StoreAPI
import StoreConformance
import Testing

/// The SQLite backend runs the published conformance suite (cross-backend round trips run in IntegrationTests).
@Suite struct SQLiteConformanceTests {
    static let suite = ConformanceSuite(backend: SQLiteStoreBackend(), worker: ConformanceWorker.executable(named: "conformance-worker"))

    @Test(arguments: suite.groups)
    func conformance(_ group: ConformanceGroup) throws {
        try Self.suite.run(group)
    }
}
