import Foundation
import StoreAPI

/// The remotes built in, by URL scheme.
public enum SyncRemotes {
    /// The remote `options` name: a `file://` URL is a ``FolderRemote`` of the directory, with the container
    /// identifier as its sub-directory. Other schemes are ``SyncError/unsupportedRemote(_:reason:)``; pass your own
    /// ``SyncRemote`` to ``SyncEngine/init(store:coordinator:remote:timeout:logger:)`` for them.
    public static func remote(for options: SyncOptions) throws -> any SyncRemote {
        let url = options.remote
        switch url.scheme {
        case "file":
            return try FolderRemote(directory: URL(fileURLWithPath: url.path, isDirectory: true),
                                    container: options.containerIdentifier)
        default:
            throw SyncError.unsupportedRemote(url.absoluteString, reason: "no built-in remote for the scheme "
                + "'\(url.scheme ?? "")' (file:// is built in; other remotes are passed to the engine)")
        }
    }
}
