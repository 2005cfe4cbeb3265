import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A fresh directory under the system's temporary directory, removed by ``remove()`` or when the last reference goes.
public final class TemporaryDirectory: @unchecked Sendable {
    public let url: URL

    /// Creates `<tmp>/<label>-<UUID>`.
    public init(_ label: String = "store-tests") throws {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("\(label)-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    deinit { remove() }

    /// The URL of `name` inside the directory (nothing is created).
    public func path(_ name: String) -> URL { url.appendingPathComponent(name) }

    /// Creates the subdirectory `name` (and its parents) and returns its URL.
    public func directory(_ name: String) throws -> URL {
        let d = url.appendingPathComponent(name)
        try FileManager.default.createDirectory(at: d, withIntermediateDirectories: true)
        return d
    }

    /// Writes `text` as UTF-8 to the file `name` and returns its URL.
    @discardableResult
    public func write(_ text: String, to name: String) throws -> URL {
        let u = path(name)
        try Data(text.utf8).write(to: u)
        return u
    }

    /// The entry names, sorted (hidden ones included).
    public func listing() -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: url.path)) ?? []).sorted()
    }

    /// Removes the directory and everything in it; directories a test made read-only are made writable first.
    public func remove() {
        Self.makeWritable(url)
        try? FileManager.default.removeItem(at: url)
    }

    private static func makeWritable(_ url: URL) {
        var st = stat()
        guard lstat(url.path, &st) == 0, (st.st_mode & S_IFMT) == S_IFDIR else { return }
        _ = chmod(url.path, 0o755)
        for name in (try? FileManager.default.contentsOfDirectory(atPath: url.path)) ?? [] {
            makeWritable(url.appendingPathComponent(name))
        }
    }
}
