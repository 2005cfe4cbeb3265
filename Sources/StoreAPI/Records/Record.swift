import Foundation

/// The value of one relationship of one record: the primary keys of the related records.
///
/// Keys refer to records of the relationship's destination hierarchy (see ``Entity/rootName``). To-many values
/// keep their order; for unordered relationships the order carries no meaning and comparisons ignore it
/// (see ``Record/isLogicallyEqual(to:in:)``).
public enum RelationshipValue: Sendable, Hashable {
    case toOne(Int64?)
    case toMany([Int64])

    /// The related keys, whatever the cardinality.
    public var keys: [Int64] {
        switch self {
        case .toOne(let k): k.map { [$0] } ?? []
        case .toMany(let ks): ks
        }
    }
}

/// One stored record: the unit every backend reads and writes.
///
/// A record is laid out against its ``Entity``: ``attributes`` holds one value per ``Entity/attributes`` entry and
/// ``relationships`` one value per ``Entity/relationships`` entry. Both sides of every relationship are present
/// (a book's `author` and the author's `books`); the framework keeps them consistent, and a backend may store just
/// one side and derive the other, as long as it returns both.
public struct Record: Sendable, Hashable {
    /// The concrete entity's name.
    public var entity: String
    /// The permanent primary key, unique within the entity's hierarchy (``Entity/rootName``) in its store.
    public var primaryKey: Int64
    /// The global identifier: never changes, whatever store operation moves the record.
    public var globalID: UUID
    /// One value per stored attribute, aligned with ``Entity/attributes``.
    public var attributes: [StoreValue]
    /// One value per stored relationship, aligned with ``Entity/relationships``.
    public var relationships: [RelationshipValue]

    /// Creates a record. Prefer ``Entity/newRecord(primaryKey:globalID:)``, which lays the arrays out for you.
    public init(
        entity: String, primaryKey: Int64, globalID: UUID, attributes: [StoreValue],
        relationships: [RelationshipValue]
    ) {
        self.entity = entity
        self.primaryKey = primaryKey
        self.globalID = globalID
        self.attributes = attributes
        self.relationships = relationships
    }

    /// The key of this record in its store.
    public var key: RecordKey { RecordKey(entity: entity, primaryKey: primaryKey) }

    /// Compares two records as a store operation must preserve them: same entity, key, global ID and attribute
    /// values; same related keys, in the same order for ordered relationships and as sets otherwise.
    public func isLogicallyEqual(to other: Record, in entity: Entity) -> Bool {
        guard self.entity == other.entity, primaryKey == other.primaryKey, globalID == other.globalID,
            attributes == other.attributes, relationships.count == other.relationships.count
        else { return false }
        for (i, rel) in entity.relationships.enumerated() {
            let a = relationships[i].keys
            let b = other.relationships[i].keys
            if rel.isOrdered || !rel.isToMany {
                if a != b { return false }
            } else if a.count != b.count || Set(a) != Set(b) {
                return false
            }
        }
        return true
    }
}

/// Identifies a record inside one store: its concrete entity and primary key.
public struct RecordKey: Sendable, Hashable, CustomStringConvertible {
    /// The concrete entity's name.
    public var entity: String
    /// The primary key.
    public var primaryKey: Int64

    /// Creates a record key.
    public init(entity: String, primaryKey: Int64) {
        self.entity = entity
        self.primaryKey = primaryKey
    }

    public var description: String { "\(entity)/p\(primaryKey)" }
}

/// The permanent identity of a record across the whole coordinator: store UUID, entity and primary key.
///
/// The URI form is `x-storeapi://<store UUID>/<Entity>/p<primary key>`, like Core Data's `x-coredata:` URIs.
public struct ObjectID: Sendable, Hashable, Codable, CustomStringConvertible {
    /// The UUID of the store the record lives in (``StoreMetadata/storeUUID``).
    public let storeUUID: UUID
    /// The concrete entity's name.
    public let entity: String
    /// The primary key.
    public let primaryKey: Int64

    /// The URI scheme of object ID URIs.
    public static let uriScheme = "x-storeapi"

    /// Creates an object ID.
    public init(storeUUID: UUID, entity: String, primaryKey: Int64) {
        self.storeUUID = storeUUID
        self.entity = entity
        self.primaryKey = primaryKey
    }

    /// Parses an object ID URI. Returns `nil` for anything that is not one.
    public init?(uri: URL) {
        guard uri.scheme == Self.uriScheme, let host = uri.host, let uuid = UUID(uuidString: host) else { return nil }
        let parts = uri.path.split(separator: "/", omittingEmptySubsequences: true)
        guard parts.count == 2, parts[1].first == "p", let pk = Int64(parts[1].dropFirst()) else { return nil }
        self.init(storeUUID: uuid, entity: String(parts[0]).removingPercentEncoding ?? String(parts[0]), primaryKey: pk)
    }

    /// The URI form of the ID.
    public var uriRepresentation: URL {
        let entityPart = entity.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed) ?? entity
        // The components are all URL-safe by construction, so this cannot fail; the fallback keeps it total.
        return URL(string: "\(Self.uriScheme)://\(storeUUID.uuidString)/\(entityPart)/p\(primaryKey)")
            ?? URL(fileURLWithPath: "/")
    }

    /// The key of the record inside its store.
    public var recordKey: RecordKey { RecordKey(entity: entity, primaryKey: primaryKey) }

    public var description: String { uriRepresentation.absoluteString }
}
