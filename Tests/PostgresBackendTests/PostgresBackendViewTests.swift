import PostgresBackend
import StoreAPI
import Testing

/// Store operations stage and place a server store through ``StoreBackend/asServerStoreBackend``, not a cast: the
/// PostgreSQL backend must answer it, or a conversion to the server looks for files at its URL.
@Suite struct PostgresBackendViewTests {
    @Test func answersAsAServerBackend() {
        let backend: any StoreBackend = PostgresStoreBackend()
        #expect(backend.asServerStoreBackend != nil)
        #expect(backend.asServerStoreBackend?.typeIdentifier == backend.typeIdentifier)
        #expect(backend.asAtomicStoreBackend == nil)
    }
}
