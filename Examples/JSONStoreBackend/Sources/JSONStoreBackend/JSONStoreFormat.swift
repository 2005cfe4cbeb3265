import Foundation

/// The JSON store file: one JSON document holding a whole store.
///
/// ```json
/// {"format":"storeapi.json-store","formatVersion":1,
/// "metadata":{"formatVersion":2,"schema":{…},"storeType":"json","storeUUID":"6F1C…",…},
/// "records":[
/// {"attributes":{"born":null,"name":"Ann"},"entity":"Author","gid":"0C7A…","pk":1,"relationships":{"books":[7]}},
/// {"attributes":{"cover":"iVBORw0KGgo=","title":"Dune"},"entity":"Book","gid":"91D3…","pk":7,"relationships":{"author":1}}
/// ],
/// "history":[
/// {"author":"importer","changes":[…],"timestamp":757382400.25,"token":1}
/// ]}
/// ```
///
/// Why it looks like this:
/// - **`format` comes first.** It is the file's magic number: ``JSONStoreBackend/sniff(_:)`` reads a few kilobytes,
///   never the whole file, to tell a store from any other JSON.
/// - **The metadata is the second line.** ``JSONStoreBackend/readMetadata(at:)`` reads just the first two lines, so
///   `storectl info` on a large store does not parse every record. (A file someone re-indented still reads: the
///   backend then falls back to parsing the whole document.)
/// - **One record per line**, written one at a time: the writer never builds a second, textual copy of the store
///   in memory, and stores diff well in version control.
/// - **Values use the framework's JSON form** (`StoreValue.jsonObject`): exact ISO 8601 dates, base64
///   binary, decimals as strings, and `"NaN"`, `"Infinity"`, `"-Infinity"`, `"-0.0"` for the doubles JSON has no
///   number for. Nil is `null`, so nil, `""` and empty data stay distinct.
/// - **Relationships hold primary keys**, both sides of each relationship, exactly as the records carry them; a
///   to-one is a number or `null`, a to-many an array whose order is kept (it matters for ordered relationships).
/// - **Metadata and history are the framework's own Codable forms** (`StoreMetadata.encoded()`,
///   `HistoryTransaction`'s `Codable` conformance), so nothing about them is reinvented here.
///
/// Reading is not streamed — a deliberate simplification for an example: the whole document is parsed at once
/// with `JSONSerialization`, which is why files are capped at ``JSONStoreBackend/maxFileBytes`` (1 GiB by
/// default). A backend for bigger stores would parse incrementally (delivering each record as it is read), or
/// belong to the incremental family.
public enum JSONStoreFormat {
    /// The value of the document's `format` member.
    public static let formatName = "storeapi.json-store"
    /// The layout version this backend writes; it reads this one and older.
    public static let formatVersion = 1
    /// The default cap on a store file's size.
    public static let defaultMaxFileBytes = 1 << 30
    /// How much of a file ``JSONStoreBackend/sniff(_:)`` reads to find the magic member.
    public static let sniffBytes = 4 << 10
    /// Files up to this size that are not stores are parsed whole by ``JSONStoreBackend/sniff(_:)`` to tell JSON
    /// from garbage; bigger ones are judged by their first byte, so sniffing stays cheap.
    public static let sniffParseBytes = 1 << 20
    /// The longest metadata line ``JSONStoreBackend/readMetadata(at:)`` reads before falling back to a full parse.
    public static let maxHeaderBytes = 64 << 20

    /// The first line of every file this backend writes.
    static let headerLine = "{\"format\":\"\(formatName)\",\"formatVersion\":\(formatVersion),"
    /// How the second line starts.
    static let metadataPrefix = "\"metadata\":"

    /// Whether `prefix` opens with `{"format":"storeapi.json-store"`. Whitespace between the tokens is allowed, as
    /// a JSON tool that re-indents the file would leave it; the member order is not (it is what makes sniffing cheap).
    static func hasMagic(_ prefix: Data) -> Bool {
        var rest = prefix[...]
        for token in ["{", "\"format\"", ":", "\"\(formatName)\""] {
            rest = rest.drop(while: isWhitespace)
            guard rest.starts(with: token.utf8) else { return false }
            rest = rest.dropFirst(token.utf8.count)
        }
        return true
    }

    /// Whether `prefix` starts like a JSON object or array (after whitespace).
    static func startsLikeJSON(_ prefix: Data) -> Bool {
        let first = prefix.first { !isWhitespace($0) }
        return first == UInt8(ascii: "{") || first == UInt8(ascii: "[")
    }

    /// JSON's four whitespace characters.
    static func isWhitespace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09
    }
}
