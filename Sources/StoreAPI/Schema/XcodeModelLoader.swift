import Foundation

extension Schema {
    /// Loads an Xcode data model.
    ///
    /// `url` may be a `.xcdatamodeld` bundle (its current version is loaded, see ``XcodeModelVersions`` for how it
    /// is chosen), one `.xcdatamodel` version directory, or that directory's `contents` file itself.
    ///
    /// The model is read as Xcode 4 and later write it: the `contents` XML. Entities, attributes, relationships,
    /// uniqueness constraints, user info, configurations, renaming identifiers and what Core Data's version hash
    /// covers (per-property version-hash modifiers, external-storage and preserve-after-deletion flags, counts as
    /// written) are kept; derived attributes are kept apart in ``EntityDescription/derivedAttributes`` (Core Data
    /// computes them; records never hold them). Fetched properties, fetch request templates, fetch and compound
    /// indexes, validation rules and layout are not part of a ``Schema`` and are skipped. A to-one
    /// relationship's bounds are carried by its optionality (`minCount` 0, `maxCount` 1); a to-many `maxCount` of
    /// `-1` means unbounded. Xcode's `Undefined` type is accepted only on transient attributes, where it becomes
    /// ``AttributeType/transformable``.
    ///
    /// - Throws: ``SchemaError``, always naming the file: ``SchemaError/unreadableModel(file:reason:)`` when the
    ///   path is missing, is not an XML model (including the pre-Xcode 4 binary format, which must be opened and
    ///   saved again in a current Xcode), or uses an unsupported feature such as composite attributes; and
    ///   ``SchemaError/invalidModel(file:error:)`` wrapping the validation error when the model is inconsistent.
    public init(xcodeModelAt url: URL) throws {
        let contents = try XcodeModelLocator.contentsFile(for: url)
        let data: Data
        do {
            data = try Data(contentsOf: contents)
        } catch {
            throw SchemaError.unreadableModel(file: contents.path, reason: "cannot read: \(error.localizedDescription)")
        }
        if data.starts(with: Data("bplist".utf8)) {
            throw XcodeModelLocator.legacyBinaryModel(contents)
        }
        let parsed = try XcodeModelParser(file: contents.path).parse(data)
        do {
            try self.init(entities: parsed.entities, configurations: parsed.configurations)
        } catch let error as SchemaError {
            throw SchemaError.invalidModel(file: contents.path, error: error)
        }
    }
}

/// Finds the `contents` file for a path given to ``Schema/init(xcodeModelAt:)``.
enum XcodeModelLocator {
    static func contentsFile(for url: URL) throws -> URL {
        let fm = FileManager.default
        var isDirectory: ObjCBool = false
        guard fm.fileExists(atPath: url.path, isDirectory: &isDirectory) else {
            throw SchemaError.unreadableModel(file: url.path, reason: "no such file or directory")
        }
        guard isDirectory.boolValue else { return url }
        let contents = url.appendingPathComponent("contents")
        var contentsIsDirectory: ObjCBool = false
        if fm.fileExists(atPath: contents.path, isDirectory: &contentsIsDirectory), !contentsIsDirectory.boolValue {
            return contents
        }
        if url.pathExtension == "xcdatamodeld" {
            let version = try XcodeModelVersions(bundleAt: url).current
            // A version is a model directory, never another bundle: do not recurse past one level.
            let versionContents = version.appendingPathComponent("contents")
            if fm.fileExists(atPath: versionContents.path) { return versionContents }
            if fm.fileExists(atPath: version.appendingPathComponent("elements").path) { throw legacyBinaryModel(version) }
            throw SchemaError.unreadableModel(file: version.path, reason: "this model version has no 'contents' file")
        }
        if fm.fileExists(atPath: url.appendingPathComponent("elements").path) { throw legacyBinaryModel(url) }
        throw SchemaError.unreadableModel(
            file: url.path, reason: "not an Xcode data model: no 'contents' file (expected a .xcdatamodel or .xcdatamodeld)")
    }

    static func legacyBinaryModel(_ url: URL) -> SchemaError {
        .unreadableModel(
            file: url.path,
            reason: "this is a pre-Xcode 4 binary data model (an archived 'elements' file, no 'contents' XML), which "
                + "cannot be read; open it in a current Xcode and save it again to convert it to the XML format")
    }
}
