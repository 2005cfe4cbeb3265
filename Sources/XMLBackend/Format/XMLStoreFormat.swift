import Foundation
import StoreAPI

/// The XML store file format: Core Data's `NSXMLStoreType` layout, plus what this framework needs to be lossless.
///
/// ```xml
/// <?xml version="1.0" standalone="yes"?>
/// <!DOCTYPE database SYSTEM "file:///System/Library/DTDs/CoreData.dtd">
/// <database>
///     <databaseInfo>
///         <version>134481920</version>
///         <UUID>6F1C…</UUID>                       <!-- the store UUID -->
///         <nextObjectID>3</nextObjectID>
///         <metadata><plist version="1.0"><dict>…</dict></plist></metadata>
///         <storeMetadata format="storeapi-json" formatVersion="1">{"schema":…}</storeMetadata>
///     </databaseInfo>
///     <object type="Author" id="z1" pk="1" gid="0C7A…">
///         <attribute name="name" type="string">Ann</attribute>
///         <relationship name="books" type="0/0" destination="Book" idrefs="z2">7</relationship>
///     </object>
///     <object type="Book" id="z2" pk="7" gid="91D3…">
///         <attribute name="title" type="string" enc="escaped">Tab\u0001</attribute>
///         <relationship name="author" type="0/1" destination="Author" idrefs="z1">1</relationship>
///     </object>
///     <history>
///         <transaction token="1" timestamp="757382400.25">
///             <author>importer</author>
///             <change kind="update" entity="Book" pk="7" gid="91D3…"><changed>title</changed></change>
///             <change kind="delete" entity="Book" pk="8" gid="…"><tombstone name="isbn">123</tombstone></change>
///         </transaction>
///     </history>
/// </database>
/// ```
///
/// What is Core Data's, what is ours, and why:
/// - **Core Data's layout** — `database`, `databaseInfo` (`version`, `UUID`, `nextObjectID`, `metadata` holding a
///   property list), `object` with `type` and `id`, `attribute` with `name` and `type`, `relationship` with `name`,
///   `type="min/max"` (max 0 = unbounded), `destination` and space-separated `idrefs`. Names keep their original case
///   in our stores (Core Data upper-cases entities and lower-cases properties).
/// - **`storeMetadata`** (ours) holds the whole ``StoreMetadata`` as JSON — schema, version hashes, custom keys, sync
///   options — so the file is self-describing. Its presence is what marks a file as written by this framework;
///   a `database` without it is read as a Core Data store and its schema is inferred.
/// - **`pk` and `gid`** (ours) on `object`: the record's primary key and global identifier, which store operations
///   must preserve. `id` is only a document-local label (`z1`, `z2`, … in write order).
/// - **Relationship content** (ours): the related records' primary keys, space-separated, in order. This is the
///   authoritative value in our stores — it can also hold keys of records that no longer exist (a `noAction` delete
///   rule leaves those), which `idrefs` cannot express. `idrefs` is written for Core Data readers, lists only
///   records present in the file, and is left out when it would exceed what a parser accepts in one attribute.
/// - **Value text** per `type`: integers in decimal; `decimal` as its exact decimal string; `float` and `double` in
///   the shortest text that reads back to the same bits (`inf`, `-inf`, `-0.0`, `nan`, and `nan(0x…)` with the full
///   bit pattern for any other NaN); `bool` as `0`/`1`; `date` as seconds since 2001-01-01 in the same shortest
///   double form; `binary` and `transformable` as base64; `uuid` as its string; `uri` as its absolute string.
///   A nil value is an absent `attribute` element, so nil, an empty string and empty data stay distinct.
/// - **`enc="escaped"`** (ours) marks text that holds characters XML 1.0 cannot carry (NUL and other C0 controls
///   except tab, line feed and carriage return; U+FFFE; U+FFFF): each is written `\uXXXX` and a backslash `\\`.
///   Carriage returns are written as `&#13;`, so they survive the parser's line-end normalisation.
/// - **Long text** is split into pieces of at most ``XMLStoreFormat/textChunkBytes`` separated by empty comments
///   (`<!---->`), because libxml2 refuses a single text node over 10 MB unless told to parse "huge" documents,
///   which a hardened reader must not do. Readers concatenate the pieces.
/// - **`history`** (ours) comes after the objects: one `transaction` per saved history transaction.
///
/// Readers accept Core Data's own files: case-folded names, non-`z` ids, relationships without `idrefs`, base64
/// broken over lines, and the property list in `metadata`.
public enum XMLStoreFormat {
    /// The value Core Data writes in `databaseInfo/version`.
    public static let coreDataVersion = "134481920"
    /// The system identifier of Core Data's DTD. Written for fidelity; never loaded.
    public static let dtdSystemID = "file:///System/Library/DTDs/CoreData.dtd"
    /// The `format` attribute of `storeMetadata`.
    public static let metadataFormat = "storeapi-json"
    /// The layout version this backend writes (the `formatVersion` attribute of `storeMetadata`).
    public static let formatVersion = 1
    /// The deepest element nesting a reader accepts. Our files nest at most 7 levels (a property list in the
    /// metadata may nest more); anything deeper is hostile or broken.
    public static let maxDepth = 64
    /// The longest piece of text written as one text node.
    public static let textChunkBytes = 1 << 20
    /// The longest `idrefs` attribute written; longer lists are left to the relationship's content.
    public static let maxIDRefsBytes = 4 << 20
    /// How many bytes ``XMLStoreBackend/sniff(_:)`` reads.
    public static let sniffBytes = 16 << 10

    /// The `type` names of attribute values, as Core Data writes them (`uuid`, `uri` and `transformable` are ours).
    static func typeName(_ type: AttributeType) -> String {
        switch type {
        case .integer16: "int16"
        case .integer32: "int32"
        case .integer64: "int64"
        case .decimal: "decimal"
        case .double: "double"
        case .float: "float"
        case .string: "string"
        case .boolean: "bool"
        case .date: "date"
        case .binary: "binary"
        case .uuid: "uuid"
        case .uri: "uri"
        case .transformable: "transformable"
        }
    }

    /// The attribute type a `type` name stands for, or `nil` for a name neither Core Data nor we write.
    static func attributeType(named name: String) -> AttributeType? {
        switch name {
        case "int16": .integer16
        case "int32": .integer32
        case "int64": .integer64
        case "decimal": .decimal
        case "double": .double
        case "float": .float
        case "string": .string
        case "bool": .boolean
        case "date": .date
        case "binary": .binary
        case "uuid": .uuid
        case "uri": .uri
        case "transformable": .transformable
        default: nil
        }
    }

    /// The `type="min/max"` text of a relationship.
    static func cardinality(_ r: RelationshipDescription) -> String {
        if r.isToMany { return "\(r.minCount)/\(r.maxCount)" }
        return "\(r.isOptional ? 0 : 1)/1"
    }
}
