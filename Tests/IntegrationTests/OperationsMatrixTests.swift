import LMDBBackend
import SQLiteBackend
import StoreAPI
import StoreConformance
import Testing
import XMLBackend

/// Every store operation across every ordered pair of backends, and the sqlite → lmdb → xml → sqlite chain.
@Suite struct OperationsMatrixTests {
    static let backends: [any StoreBackend] = [SQLiteStoreBackend(), LMDBStoreBackend(), XMLStoreBackend(), InMemoryBackend()]

    @Test(arguments: ["sqlite", "lmdb", "xml", "memory"])
    func operationsWithEveryPeer(_ type: String) throws {
        let backend = try #require(Self.backends.first { $0.typeIdentifier == type })
        try ConformanceSuite(backend: backend, peers: Self.backends).run(.operations)
    }

    @Test func sqliteToLMDBToXMLToSQLite() throws {
        let sqlite = try #require(Self.backends.first { $0.typeIdentifier == "sqlite" })
        try ConformanceSuite(backend: sqlite, peers: Self.backends).runConversionChain(["lmdb", "xml", "sqlite"])
    }

    @Test func memoryThroughEveryType() throws {
        try ConformanceSuite(backend: InMemoryBackend(), peers: Self.backends).runConversionChain(["xml", "lmdb", "sqlite", "memory"])
    }
}
