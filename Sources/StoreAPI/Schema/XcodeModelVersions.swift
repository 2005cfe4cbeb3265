import Foundation

/// The versions inside an Xcode `.xcdatamodeld` bundle, and which one is current.
///
/// The current version is the one the bundle's `.xccurrentversion` property list names under
/// `_XCCurrentVersionName`. A bundle without that file (or without that key) has no declared current version; this
/// type then takes the **last version by name**: names are compared without their `.xcdatamodel` extension, with runs
/// of digits compared as numbers, so `Model` < `Model 2` < `Model 10`. ``currentIsDeclared`` tells the two apart.
public struct XcodeModelVersions: Sendable, Hashable {
    /// The `.xcdatamodeld` bundle.
    public let bundle: URL
    /// Every `.xcdatamodel` version directory in the bundle, in name order (see above).
    public let versions: [URL]
    /// The version a loader uses when given the bundle.
    public let current: URL
    /// Whether `.xccurrentversion` named ``current``; `false` when it was picked as the last by name.
    public let currentIsDeclared: Bool

    /// Lists the versions of the bundle at `url`.
    ///
    /// - Throws: ``SchemaError/unreadableModel(file:reason:)`` naming the bundle when it cannot be listed or holds no
    ///   version, or naming `.xccurrentversion` when that file is unreadable or names a version that is not there.
    public init(bundleAt url: URL) throws {
        bundle = url
        let fm = FileManager.default
        let names: [String]
        do {
            names = try fm.contentsOfDirectory(atPath: url.path)
        } catch {
            throw SchemaError.unreadableModel(file: url.path, reason: "cannot list the model bundle: \(error.localizedDescription)")
        }
        let found = names.filter { name in
            guard !name.hasPrefix("."), name.hasSuffix(".xcdatamodel") else { return false }
            var isDirectory: ObjCBool = false
            return fm.fileExists(atPath: url.appendingPathComponent(name).path, isDirectory: &isDirectory)
                && isDirectory.boolValue
        }
        guard !found.isEmpty else {
            throw SchemaError.unreadableModel(file: url.path, reason: "the model bundle holds no .xcdatamodel version")
        }
        let sorted = found.sorted { Self.ordered($0, $1) }
        versions = sorted.map { url.appendingPathComponent($0, isDirectory: true) }
        if let declared = try Self.declaredCurrentVersion(in: url) {
            guard found.contains(declared) else {
                throw SchemaError.unreadableModel(
                    file: url.appendingPathComponent(".xccurrentversion").path,
                    reason: "names current version '\(declared)', which is not in the bundle (found: \(sorted.joined(separator: ", ")))")
            }
            current = url.appendingPathComponent(declared, isDirectory: true)
            currentIsDeclared = true
        } else {
            current = versions[versions.count - 1]
            currentIsDeclared = false
        }
    }

    /// Name order: extension removed, digit runs compared as numbers; ties broken by the raw name so the order is
    /// total.
    static func ordered(_ a: String, _ b: String) -> Bool {
        let strip = { (s: String) in s.hasSuffix(".xcdatamodel") ? String(s.dropLast(".xcdatamodel".count)) : s }
        switch strip(a).compare(strip(b), options: [.numeric]) {
        case .orderedAscending: return true
        case .orderedDescending: return false
        case .orderedSame: return a < b
        }
    }

    /// `_XCCurrentVersionName` from `.xccurrentversion`, or `nil` when the file or the key is absent.
    private static func declaredCurrentVersion(in bundle: URL) throws -> String? {
        let file = bundle.appendingPathComponent(".xccurrentversion")
        guard FileManager.default.fileExists(atPath: file.path) else { return nil }
        let plist: Any
        do {
            plist = try PropertyListSerialization.propertyList(from: Data(contentsOf: file), options: [], format: nil)
        } catch {
            throw SchemaError.unreadableModel(file: file.path, reason: "not a readable property list: \(error.localizedDescription)")
        }
        guard let dict = plist as? [String: Any] else {
            throw SchemaError.unreadableModel(file: file.path, reason: "expected a dictionary property list")
        }
        guard let value = dict["_XCCurrentVersionName"] else { return nil }
        guard let name = value as? String, !name.isEmpty, !name.contains("/") else {
            throw SchemaError.unreadableModel(file: file.path, reason: "_XCCurrentVersionName is not a version name")
        }
        return name
    }
}
