import Foundation
import Synchronization

/// Backends by type identifier, and type detection for paths.
///
/// ``shared`` starts with the in-memory backend; register the others at start-up:
///
/// ```swift
/// BackendRegistry.shared.register(SQLiteStoreBackend())
/// BackendRegistry.shared.register(LMDBStoreBackend())
/// ```
///
/// A registry is thread-safe. Registering a second backend under the same identifier replaces the first.
public final class BackendRegistry: Sendable {
    /// The process-wide registry the coordinator and operations use by default.
    public static let shared = BackendRegistry(backends: [InMemoryBackend()])

    private let backends: Mutex<[String: any StoreBackend]>
    private let order: Mutex<[String]>

    /// Creates a registry holding `backends`.
    public init(backends: [any StoreBackend] = []) {
        var map: [String: any StoreBackend] = [:]
        var order: [String] = []
        for b in backends where map.updateValue(b, forKey: b.typeIdentifier) == nil { order.append(b.typeIdentifier) }
        self.backends = Mutex(map)
        self.order = Mutex(order)
    }

    /// Registers `backend` under its ``StoreBackend/typeIdentifier``.
    public func register(_ backend: any StoreBackend) {
        let id = backend.typeIdentifier
        let isNew = backends.withLock { $0.updateValue(backend, forKey: id) == nil }
        if isNew { order.withLock { $0.append(id) } }
    }

    /// Removes the backend registered under `typeIdentifier`.
    public func unregister(_ typeIdentifier: String) {
        backends.withLock { _ = $0.removeValue(forKey: typeIdentifier) }
        order.withLock { $0.removeAll { $0 == typeIdentifier } }
    }

    /// The registered type identifiers, in registration order.
    public var typeIdentifiers: [String] { order.withLock { $0 } }

    /// The backend registered under `typeIdentifier`, or ``StoreError/unknownStoreType(_:registered:)``.
    public func backend(for typeIdentifier: String) throws(StoreError) -> any StoreBackend {
        guard let b = backends.withLock({ $0[typeIdentifier] }) else {
            throw .unknownStoreType(typeIdentifier, registered: typeIdentifiers)
        }
        return b
    }

    /// The backend whose store is at `url`, found by asking every backend to sniff it.
    ///
    /// - Throws: ``StoreError/storeNotFound(_:)`` when nothing is there, ``StoreError/unrecognizedStore(_:reason:)``
    ///   when no backend recognises it — naming the format when one backend recognised its engine's format but not
    ///   a store of ours ("LMDB environment, but not a store").
    public func detectBackend(at url: URL) throws(StoreError) -> any StoreBackend {
        var foreign: [String] = []
        for id in typeIdentifiers {
            // A server URL is no file: backends of files are not asked about it.
            guard let b = try? backend(for: id), url.isFileURL || !b.keepsFiles else { continue }
            switch b.sniff(url) {
            case .store: return b
            case .foreign(let what): foreign.append(what)
            case .none: break
            }
        }
        if let what = foreign.first { throw .unrecognizedStore(url, reason: what) }
        guard url.isFileURL else { throw .storeNotFound(url) }
        var isDir: ObjCBool = false
        guard FileManager.default.fileExists(atPath: url.path, isDirectory: &isDir) else { throw .storeNotFound(url) }
        throw .unrecognizedStore(url, reason: isDir.boolValue
            ? "a directory that holds no store of a registered type (\(typeIdentifiers.joined(separator: ", ")))"
            : "not a store of any registered type (\(typeIdentifiers.joined(separator: ", ")))")
    }

    /// The backend a new store at `url` would get from its file-name extension, if one claims it.
    public func backend(forExtensionOf url: URL) -> (any StoreBackend)? {
        let ext = url.pathExtension.lowercased()
        guard !ext.isEmpty else { return nil }
        for id in typeIdentifiers {
            if let b = try? backend(for: id), b.fileExtensions.contains(ext) { return b }
        }
        return nil
    }
}
