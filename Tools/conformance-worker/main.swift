// The second process of the conformance suite's multiProcess group, for the built-in backends (see
// ConformanceWorker in StoreConformance). A third-party backend writes the same two lines for itself.
import LMDBBackend
import PostgresBackend
import SQLiteBackend
import StoreConformance
import XMLBackend

ConformanceWorker.main(backends: [SQLiteStoreBackend(), LMDBStoreBackend(), XMLStoreBackend(), PostgresStoreBackend()])
