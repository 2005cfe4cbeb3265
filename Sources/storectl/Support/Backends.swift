import CoreDataBackend
import Foundation
import LMDBBackend
#if PostgreSQL
import PostgresBackend
#endif
import SQLiteBackend
import StoreAPI
import XMLBackend

/// The backends storectl knows, registered once in the shared registry.
enum Backends {
    static let registry: BackendRegistry = {
        // Before any backend opens a database (see the method for why).
        SQLiteStoreBackend.disableMemoryStatistics()
        let registry = BackendRegistry.shared
        registry.register(SQLiteStoreBackend())
        registry.register(LMDBStoreBackend())
        registry.register(XMLStoreBackend())
        // Found by sniffing only (it claims no extension): a new `.sqlite` store stays `sqlite`.
        registry.register(CoreDataStoreBackend())
        #if PostgreSQL
        registry.register(PostgresStoreBackend())
        #endif
        return registry
    }()

    static var operations: StoreOperations { StoreOperations(registry: registry) }

    /// Replaces the registered `coredata` backend by one that reads every Core Data store with the app's model at
    /// `url` (`--model`), so that commands reading through the operations (convert) use it too.
    static func useCoreDataModel(_ url: URL) {
        registry.register(CoreDataStoreBackend(model: url))
    }

    /// The persistent types, for help texts and messages.
    static var typeList: String {
        registry.typeIdentifiers.filter { $0 != InMemoryBackend.typeIdentifier }.joined(separator: ", ")
    }

    /// The backend of the existing store at `url` (checked against `type` when given).
    static func existing(_ url: URL, type: String?) throws -> any StoreBackend {
        try requireServerSupport(url)
        return try operations.backend(ofStoreAt: url, type: type)
    }

    /// The backend a new store at `url` gets: `type`, or the one its extension names.
    static func forNewStore(at url: URL, type: String?, option: String) throws -> any StoreBackend {
        if let type { return try registry.backend(for: type) }
        if let server = registry.serverBackend(for: url) { return server }
        try requireServerSupport(url)
        guard let backend = registry.backend(forExtensionOf: url) else {
            let ext = url.pathExtension
            throw CommandFailure(ext.isEmpty
                ? "\(url.displayName): cannot tell the store type without a file extension; pass \(option) (\(typeList))"
                : "\(url.displayName): no store type uses the extension '.\(ext)'; pass \(option) (\(typeList))")
        }
        return backend
    }

    /// Refuses a server URL no registered backend handles, saying why.
    static func requireServerSupport(_ url: URL) throws {
        guard !url.isFileURL, registry.serverBackend(for: url) == nil,
              StoreArgument.serverSchemes.contains(where: { url.absoluteString.lowercased().hasPrefix($0) })
        else { return }
        throw CommandFailure("\(url.displayName): this storectl was built without PostgreSQL support (the static "
            + "build leaves libpq out); use one built with `swift build --product storectl`")
    }

    /// Opens the existing store at `url`.
    static func open(_ url: URL, type: String?, readOnly: Bool) throws -> (backend: any StoreBackend, store: any PersistentStore) {
        let backend = try existing(url, type: type)
        let store = try backend.open(at: url, options: StoreOptions(isReadOnly: readOnly, createIfMissing: false), creating: nil)
        return (backend, store)
    }
}
