import Foundation
import StoreAPI

/// `key=value` pairs from the command line, as custom metadata.
enum MetadataArguments {
    /// The value is read as JSON when it is valid JSON (`42`, `true`, `"text"`, `[1,2]`), and as a plain string
    /// otherwise.
    static func parse(_ pairs: [String]) throws -> [String: MetadataValue] {
        var out: [String: MetadataValue] = [:]
        for pair in pairs {
            guard let eq = pair.firstIndex(of: "="), eq != pair.startIndex else {
                throw CommandFailure("--metadata expects key=value, got '\(pair)'")
            }
            let key = String(pair[..<eq])
            let text = String(pair[pair.index(after: eq)...])
            out[key] = MetadataValue(jsonText: text) ?? .string(text)
        }
        return out
    }
}
