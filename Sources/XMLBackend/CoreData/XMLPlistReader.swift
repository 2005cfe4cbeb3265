import Foundation
import StoreAPI

/// Reads the XML property list Core Data keeps in `databaseInfo/metadata`, as custom metadata values.
///
/// Only the plist value elements are understood (`dict`, `array`, `string`, `integer`, `real`, `true`, `false`,
/// `data`, `date`); `data` becomes its base64 text and `date` its ISO 8601 text, since custom metadata is JSON-shaped.
enum XMLPlistReader {
    /// The entries of the top-level dictionary inside the `<metadata>` element the reader is on (empty when the
    /// element is empty or holds no dictionary).
    static func readMetadata(_ r: LibXMLReader) throws -> [String: MetadataValue] {
        guard !r.isEmptyElement else { return [:] }
        let depth = r.depth
        var result: [String: MetadataValue] = [:]
        while try r.nextChildElement(parentDepth: depth) {
            guard r.name == "plist" else { throw r.corrupt("unexpected <\(r.name)> in <metadata>") }
            guard !r.isEmptyElement else { continue }
            let plistDepth = r.depth
            while try r.nextChildElement(parentDepth: plistDepth) {
                if case .dictionary(let d) = try readValue(r) { result.merge(d) { _, new in new } }
            }
        }
        return result
    }

    /// The plist value whose element the reader is on.
    static func readValue(_ r: LibXMLReader) throws -> MetadataValue {
        switch r.name {
        case "dict":
            var d: [String: MetadataValue] = [:]
            guard !r.isEmptyElement else { return .dictionary(d) }
            let depth = r.depth
            while try r.nextChildElement(parentDepth: depth) {
                guard r.name == "key" else { throw r.corrupt("plist <dict> holds <\(r.name)> where a <key> belongs") }
                let key = try r.readText()
                guard try r.nextChildElement(parentDepth: depth) else {
                    throw r.corrupt("plist key '\(key)' has no value")
                }
                d[key] = try readValue(r)
            }
            return .dictionary(d)
        case "array":
            var a: [MetadataValue] = []
            guard !r.isEmptyElement else { return .array(a) }
            let depth = r.depth
            while try r.nextChildElement(parentDepth: depth) { a.append(try readValue(r)) }
            return .array(a)
        case "string":
            return .string(try r.readText())
        case "integer":
            let s = try r.readText().trimmingCharacters(in: .whitespacesAndNewlines)
            if let i = Int64(s) { return .integer(i) }
            if let d = Double(s) { return .double(d) }
            throw r.corrupt("plist <integer> holds '\(s)'")
        case "real":
            let s = try r.readText().trimmingCharacters(in: .whitespacesAndNewlines)
            guard let d = Double(s) else { throw r.corrupt("plist <real> holds '\(s)'") }
            return .double(d)
        case "true", "false":
            let value = r.name == "true"
            try r.skipElement()
            return .bool(value)
        case "data":
            let text = try r.readText()
            guard let data = XMLValueText.base64(text) else { throw r.corrupt("plist <data> is not base64") }
            return .string(data.base64EncodedString())
        case "date":
            return .string(try r.readText().trimmingCharacters(in: .whitespacesAndNewlines))
        default:
            throw r.corrupt("unknown plist element <\(r.name)>")
        }
    }
}
