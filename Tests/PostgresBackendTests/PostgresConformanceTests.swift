import Foundation
import LMDBBackend
import PostgresBackend
import SQLiteBackend
import StoreAPI
import StoreConformance
import StoreTestSupport
import Testing

/// The PostgreSQL backend runs the published conformance suite against the test server, each check's stores in
/// schemas of their own, with SQLite and LMDB as peers for the cross-type round trips.
///
/// The groups about files (sniffing garbage files, owned files, unusable directories) are left out: a server store
/// has no files. The multiProcess group runs with the built-in conformance worker, which registers this backend.
@Suite(.enabled(if: PostgresTestServer.isAvailable, PostgresTestServer.skipReason))
struct PostgresConformanceTests {
    static let suite = ConformanceSuite(
        backend: PostgresStoreBackend(), peers: [SQLiteStoreBackend(), LMDBStoreBackend()],
        worker: ConformanceWorker.executable(named: "conformance-worker"),
        storeLocation: { name in
            (try? PostgresTestServer.shared().storeURL(String(name.filter { $0.isLetter || $0.isNumber }.prefix(16))))
                ?? URL(fileURLWithPath: "/nonexistent/no-postgres-server")
        })

    static let fileGroups: Set<ConformanceGroup> = [.sniffing, .ownedFilesAndDestroy, .badInput]

    @Test(arguments: suite.groups.filter { !fileGroups.contains($0) })
    func conformance(_ group: ConformanceGroup) throws {
        _ = try PostgresTestServer.shared()
        try Self.suite.run(group)
    }
}
