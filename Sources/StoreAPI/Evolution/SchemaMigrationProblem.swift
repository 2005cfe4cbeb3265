import Foundation

/// Why a store cannot be upgraded to a schema: a change the planner cannot map, or data the new schema does not
/// accept. ``StoreError/migrationRefused(_:problems:)`` lists every one of them, and is thrown before anything is
/// written.
public enum SchemaMigrationProblem: Sendable, Hashable, Codable, CustomStringConvertible {
    /// A change between the two schemas that cannot be inferred: `what` names the entity (and property) and says
    /// what changed.
    case notInferable(entity: String, property: String?, reason: String)
    /// Records that have no value for a property the new schema requires, and no default to fill it. `records`
    /// lists the first of them (``StoreMigrationLimits/listedRecords``); `count` is how many there are.
    case missingValues(entity: String, property: String, records: [RecordKey], count: Int)
    /// Records that agree on a uniqueness constraint the new schema adds. Each group is the records sharing one
    /// combination of values (`values`, in the constraint's order).
    case duplicateValues(entity: String, attributes: [String], values: [String], records: [RecordKey])
    /// Records with more links than a to-many relationship's new maximum count allows.
    case tooManyLinks(entity: String, relationship: String, maximum: Int, records: [RecordKey], count: Int)
    /// Records of an entity the new schema drops may still be linked from a relationship that stays; dropping them
    /// would leave links to nothing.
    case linkedRecordsDropped(entity: String, count: Int, linkedFrom: [String])
    /// Records that the new schema puts in one hierarchy (`hierarchy`, its root entity) although they came from
    /// different ones, and whose primary keys collide: each group in `records` shares one key.
    case sharedPrimaryKeys(hierarchy: String, records: [[RecordKey]], count: Int)

    public var description: String {
        switch self {
        case .notInferable(let e, let p, let why):
            "\(e)\(p.map { "." + $0 } ?? ""): \(why)"
        case .missingValues(let e, let p, let records, let count):
            "\(e).\(p) is required in the new schema, but \(count) record\(count == 1 ? " has" : "s have") no value and "
                + "it has no default: \(Self.list(records, count: count))"
        case .duplicateValues(let e, let attrs, let values, let records):
            "\(e) must be unique on (\(attrs.joined(separator: ", "))) in the new schema, but \(records.count) records "
                + "share (\(values.joined(separator: ", "))): \(Self.list(records, count: records.count))"
        case .tooManyLinks(let e, let r, let maximum, let records, let count):
            "\(e).\(r) holds at most \(maximum) links in the new schema, but \(count) record\(count == 1 ? " has" : "s have") more: "
                + Self.list(records, count: count)
        case .sharedPrimaryKeys(let root, let groups, let count):
            "the new schema puts records of several hierarchies into \(root)'s, but \(count) primary key\(count == 1 ? " is" : "s are") "
                + "used in more than one of them: " + groups.map { "(" + $0.map(\.description).joined(separator: ", ") + ")" }.joined(separator: ", ")
                + (count > groups.count ? ", … (\(count - groups.count) more)" : "")
        case .linkedRecordsDropped(let e, let count, let from):
            "\(e) is removed, but its \(count) record\(count == 1 ? "" : "s") may be linked from "
                + "\(from.joined(separator: ", ")), which stay\(from.count == 1 ? "s" : "")"
        }
    }

    private static func list(_ records: [RecordKey], count: Int) -> String {
        let shown = records.map(\.description).joined(separator: ", ")
        return count > records.count ? shown + ", … (\(count - records.count) more)" : shown
    }
}

/// How much a refusal lists.
public enum StoreMigrationLimits {
    /// Records named per problem; the count says how many more there are.
    public static let listedRecords = 20
    /// Duplicate groups listed per constraint.
    public static let listedDuplicateGroups = 20
}

/// Record keys travel in a refusal's JSON form (`storectl upgrade --json`) as `{"entity": …, "primaryKey": …}`.
extension RecordKey: Codable {
    private enum CodingKeys: String, CodingKey { case entity, primaryKey }

    /// Decodes a key from its JSON form.
    public init(from decoder: Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        self.init(entity: try c.decode(String.self, forKey: .entity), primaryKey: try c.decode(Int64.self, forKey: .primaryKey))
    }

    /// Encodes the key in its JSON form.
    public func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(entity, forKey: .entity)
        try c.encode(primaryKey, forKey: .primaryKey)
    }
}
