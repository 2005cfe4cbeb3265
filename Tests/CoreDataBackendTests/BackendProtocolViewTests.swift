import CoreDataBackend
import Foundation
import LMDBBackend
import SQLiteBackend
import StoreAPI
import Testing
import XMLBackend

/// Store operations ask a backend for its protocol views (``StoreBackend/asAtomicStoreBackend``,
/// ``StoreBackend/asServerStoreBackend``) instead of casting: each view must be there exactly when the cast
/// succeeds, or an operation writes an atomic store record by record, or takes a server backend's staging for
/// files.
@Suite struct BackendProtocolViewTests {
    @Test func viewsAreTheCasts() {
        let backends: [any StoreBackend] = [
            CoreDataStoreBackend(), SQLiteStoreBackend(), LMDBStoreBackend(), XMLStoreBackend(), InMemoryBackend(),
        ]
        for backend in backends {
            #expect((backend.asAtomicStoreBackend != nil) == (backend is any AtomicStoreBackend), "\(backend.typeIdentifier)")
            #expect((backend.asServerStoreBackend != nil) == (backend is any ServerStoreBackend), "\(backend.typeIdentifier)")
        }
        #expect(XMLStoreBackend().asAtomicStoreBackend?.typeIdentifier == "xml")
        #expect(CoreDataStoreBackend().asAtomicStoreBackend == nil)
    }
}
