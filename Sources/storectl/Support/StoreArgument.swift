import Foundation
@_spi(BackendKit) import StoreAPI

/// A store named on the command line: a path, or a server URL (`postgres://…`) that flows through as a URL.
enum StoreArgument {
    /// The schemes that name stores on a server rather than files.
    static let serverSchemes = ["postgres://", "postgresql://"]

    /// The store's URL: the server URL as given, anything else a file path.
    static func url(_ argument: String) -> URL {
        let lower = argument.lowercased()
        if serverSchemes.contains(where: { lower.hasPrefix($0) }), let url = URL(string: argument) { return url }
        return URL(fileURLWithPath: argument)
    }
}

extension URL {
    /// How storectl names a store in its output: a file's path, a server store's URL without its password.
    var displayName: String { storeName }
}
