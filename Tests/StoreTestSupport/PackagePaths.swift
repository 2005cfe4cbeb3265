import Foundation

/// Where the package, its samples and the shared corpus beside it are, found from this source file's location.
public enum PackagePaths {
    /// The package root.
    public static let root = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    /// `Samples/`.
    public static let samples = root.appendingPathComponent("Samples")
    /// The sample Xcode model, `Samples/Library.xcdatamodeld`.
    public static let libraryModel = samples.appendingPathComponent("Library.xcdatamodeld")
    /// The sample NDJSON data, `Samples/library.ndjson`.
    public static let libraryData = samples.appendingPathComponent("library.ndjson")

    /// `../shared/corpus/<sub>` beside the package, or `nil` when it is absent (tests then skip the corpus part).
    public static func corpus(_ sub: String) -> URL? {
        let dir = root.appendingPathComponent("../shared/corpus").appendingPathComponent(sub).standardizedFileURL
        return FileManager.default.fileExists(atPath: dir.path) ? dir : nil
    }
}
