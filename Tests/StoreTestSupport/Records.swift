import Foundation
import StoreAPI

extension Schema {
    /// A record of `entity` with the named attribute and relationship values set (the others at their defaults);
    /// a name the schema does not have is a mistake in the test and stops it.
    public func record(
        _ entity: String, _ pk: Int64, _ attributes: [String: StoreValue] = [:],
        _ relationships: [String: RelationshipValue] = [:], globalID: UUID = UUID()
    ) -> Record {
        guard let e = self.entity(named: entity) else { preconditionFailure("fixture entity \(entity)") }
        var r = e.newRecord(primaryKey: pk, globalID: globalID)
        for (name, value) in attributes {
            guard let i = e.attributeIndex(name) else { preconditionFailure("fixture attribute \(entity).\(name)") }
            r.attributes[i] = value
        }
        for (name, value) in relationships {
            guard let i = e.relationshipIndex(name) else { preconditionFailure("fixture relationship \(entity).\(name)") }
            r.relationships[i] = value
        }
        return r
    }
}

/// Schema pieces several test targets build from.
public enum TestSchemas {
    /// One attribute of every type, by a short name (`i16`, `dec`, `when`, `archived`, …).
    public static let everyAttributeType: [(String, AttributeType)] = [
        ("i16", .integer16), ("i32", .integer32), ("i64", .integer64), ("dec", .decimal), ("dbl", .double),
        ("flt", .float), ("str", .string), ("flag", .boolean), ("when", .date), ("blob", .binary), ("ident", .uuid),
        ("link", .uri), ("archived", .transformable),
    ]
}

/// Every record of every concrete entity of `store`, entity by entity.
public func allRecords(of store: any PersistentStore) throws -> [Record] {
    var out: [Record] = []
    for e in store.metadata.schema.entities where !e.isAbstract {
        out += try store.fetch(FetchRequest(entity: e.name, includesSubentities: false))
    }
    return out
}

/// `store` exported as NDJSON text, `batchSize` records a page.
public func ndjson(_ store: any PersistentStore, batchSize: Int = 5_000) throws -> Data {
    var out = Data()
    try NDJSONExporter(batchSize: batchSize).export(store) { out.append($0) }
    return out
}

extension StoreError {
    /// The case name (`"corruptStore"`, …), for matching thrown errors in tests.
    public var caseName: String {
        Mirror(reflecting: self).children.first?.label ?? description
    }
}
