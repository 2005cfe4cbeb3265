import Foundation
import LMDBBackend
import SQLiteBackend
import StoreAPI
import StoreModels
import StoreTestSupport
import Testing
import XMLBackend

/// Every built-in store type the typed layer is tested on.
enum StoreKind: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case sqlite, lmdb, xml, memory

    static let registry = BackendRegistry(backends: [
        InMemoryBackend(), SQLiteStoreBackend(), LMDBStoreBackend(), XMLStoreBackend(),
    ])

    var testDescription: String { rawValue }

    /// Opens a new store of this kind in `directory` for the test models.
    func open(in directory: TemporaryDirectory, name: String = "books") throws -> ModelStore {
        let url: URL? = self == .memory ? nil : directory.path("\(name).\(rawValue)")
        return try ModelStore(for: allModels, at: url, type: rawValue, registry: Self.registry)
    }
}
