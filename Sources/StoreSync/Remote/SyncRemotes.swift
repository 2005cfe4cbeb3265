import Foundation
import StoreAPI
import Synchronization

/// The remotes by URL scheme: `file://` built in, others registered by the modules that provide them.
public enum SyncRemotes {
    /// Makes the remote for a store's sync options.
    public typealias Factory = @Sendable (SyncOptions) throws -> any SyncRemote

    private static let factories = Mutex<[String: Factory]>([:])

    /// Registers `factory` for remote URLs of `scheme` (lower case, e.g. `postgres`), replacing an earlier one.
    /// A module that provides a remote registers it once, before engines are made without an explicit remote.
    public static func register(scheme: String, _ factory: @escaping Factory) {
        factories.withLock { $0[scheme.lowercased()] = factory }
    }

    /// The remote `options` name: a `file://` URL is a ``FolderRemote`` of the directory, with the container
    /// identifier as its sub-directory; other schemes are made by the factory registered for them
    /// (``register(scheme:_:)``), or are ``SyncError/unsupportedRemote(_:reason:)``.
    public static func remote(for options: SyncOptions) throws -> any SyncRemote {
        let url = options.remote
        let scheme = url.scheme?.lowercased() ?? ""
        if scheme == "file" {
            return try FolderRemote(directory: URL(fileURLWithPath: url.path, isDirectory: true),
                                    container: options.containerIdentifier)
        }
        guard let factory = factories.withLock({ $0[scheme] }) else {
            throw SyncError.unsupportedRemote(displayName(of: url), reason: "no remote is registered for the scheme "
                + "'\(scheme)' (file:// is built in; StoreSyncPostgres registers postgres://; other remotes are "
                + "passed to the engine)")
        }
        return try factory(options)
    }

    /// How messages name a remote URL: without its password, which must never reach an error, log or output.
    public static func displayName(of url: URL) -> String {
        guard url.password != nil, var c = URLComponents(url: url, resolvingAgainstBaseURL: false) else {
            return url.isFileURL ? url.path : url.absoluteString
        }
        c.password = nil
        return c.string ?? "\(url.scheme ?? "remote")://"
    }
}
