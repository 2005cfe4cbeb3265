import Foundation

/// Writing stored metadata (``StoreMetadata/encoded()``) without `JSONEncoder`, for the reason the schema's writer
/// gives (`Schema+JSONWriter.swift`): the members are the synthesized Codable conformance's and the text is the one
/// `JSONEncoder` writes with sorted keys, so stores written before and after read and compare alike.
extension StoreMetadata {
    /// The JSON form as a value; `nil` when a custom value has no JSON form (a non-finite double), which
    /// `JSONEncoder` refuses too.
    var jsonValue: JSONValue? {
        var customJSON: [String: JSONValue] = [:]
        for (key, value) in custom {
            guard let json = value.jsonValue else { return nil }
            customJSON[key] = json
        }
        return .members([
            "storeType": .string(storeType),
            "storeUUID": .string(storeUUID.uuidString),
            "schema": schema.jsonValue,
            "configuration": configuration.map(JSONValue.string),
            "versionHashes": .dictionary(versionHashes.mapValues(JSONValue.string)),
            "custom": .dictionary(customJSON),
            "syncOptions": syncOptions?.jsonValue,
            "formatVersion": .integer(formatVersion),
            "primaryKeyCounters": primaryKeyCounters.map { .dictionary($0.mapValues { JSONValue.integer($0) }) },
        ])
    }
}

extension SyncOptions {
    /// The synthesized Codable conformance's members; the remote as `JSONEncoder` writes a URL (its absolute string).
    var jsonValue: JSONValue {
        .members([
            "remote": .string(remote.absoluteString),
            "containerIdentifier": .string(containerIdentifier),
            "scope": .string(scope.rawValue),
        ])
    }
}

extension MetadataValue {
    /// The value as ``MetadataValue/encode(to:)`` writes it; `nil` for a non-finite double (anywhere inside).
    var jsonValue: JSONValue? {
        switch self {
        case .null: return .null
        case .string(let s): return .string(s)
        case .integer(let i): return .integer(i)
        case .double(let d): return JSONValue.double(d)
        case .bool(let b): return .bool(b)
        case .array(let elements):
            var values: [JSONValue] = []
            for element in elements {
                guard let v = element.jsonValue else { return nil }
                values.append(v)
            }
            return .array(values)
        case .dictionary(let members):
            var values: [String: JSONValue] = [:]
            for (key, value) in members {
                guard let v = value.jsonValue else { return nil }
                values[key] = v
            }
            return .dictionary(values)
        }
    }
}
