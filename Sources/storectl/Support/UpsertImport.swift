import Foundation
import StoreAPI

/// `storectl import --upsert`: NDJSON lines that insert, update or delete records by global ID, in one save.
///
/// A line whose `id` names a stored record updates it: only the attributes and relationships the line gives are
/// set (to-many relationships are replaced by the given list). A line with a new or no `id` inserts a record. A line
/// `{"entity":…,"id":…,"delete":true}` deletes the record. The save goes through a context, so every check of a
/// save applies, and it is recorded in history, so a synced store pushes it.
struct UpsertImport {
    struct Summary {
        var inserted = 0
        var updated = 0
        var deleted = 0
    }

    private struct Line {
        var number: Int
        var entity: Entity
        var id: UUID?
        var delete: Bool
        var attributes: [String: Any]
        var relationships: [String: Any]
    }

    let coordinator: StoreCoordinator
    let store: LoadedStore
    let name: String
    let author: String

    func run(_ data: Data) throws -> Summary {
        var problems: [String] = []
        func problem(_ line: Int, _ text: String) { problems.append("\(name):\(line): \(text)") }
        var lines: [Line] = []
        var number = 0
        for raw in data.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false) {
            number += 1
            if raw.allSatisfy({ $0 == 0x20 || $0 == 0x09 || $0 == 0x0D }) { continue }
            guard let object = try? JSONSerialization.jsonObject(with: Data(raw)) as? [String: Any] else {
                problem(number, "not a JSON object"); continue
            }
            guard let entityName = object["entity"] as? String else { problem(number, "no \"entity\""); continue }
            guard let entity = coordinator.schema.entity(named: entityName), store.entityNames.contains(entityName) else {
                problem(number, "the store has no entity '\(entityName)'"); continue
            }
            var id: UUID?
            if let text = object["id"] {
                guard let s = text as? String, let u = UUID(uuidString: s) else { problem(number, "\"id\" is not a UUID"); continue }
                id = u
            }
            let delete = (object["delete"] as? Bool) ?? false
            if delete, id == nil { problem(number, "a delete needs an \"id\""); continue }
            guard object["attributes"] == nil || object["attributes"] is [String: Any],
                  object["relationships"] == nil || object["relationships"] is [String: Any]
            else { problem(number, "\"attributes\" and \"relationships\" must be objects"); continue }
            lines.append(Line(number: number, entity: entity, id: id, delete: delete,
                              attributes: object["attributes"] as? [String: Any] ?? [:],
                              relationships: object["relationships"] as? [String: Any] ?? [:]))
            if problems.count >= 100 { break }
        }
        guard problems.isEmpty else { throw CommandFailure("nothing was imported:\n" + problems.joined(separator: "\n")) }

        // Stored records by global ID.
        var index: [UUID: ObjectID] = [:]
        for entity in coordinator.schema.entities where store.entityNames.contains(entity.name) && !entity.isAbstract {
            var after: Int64? = nil
            while true {
                let page = try store.store.scan(entity: entity.name, after: after, limit: 2_000)
                for r in page { index[r.globalID] = ObjectID(storeUUID: store.identifier, entity: r.entity, primaryKey: r.primaryKey) }
                guard let last = page.last, page.count == 2_000 else { break }
                after = last.primaryKey
            }
        }
        let context = coordinator.newContext()
        context.author = author
        var summary = Summary()
        var objects: [UUID: ManagedObject] = [:]
        func object(_ id: UUID) throws -> ManagedObject? {
            if let o = objects[id] { return o }
            guard let oid = index[id] else { return nil }
            let o = try context.object(with: oid)
            objects[id] = o
            return o
        }
        // Pass 1: find, insert or delete every line's record, so relationships may name records of later lines.
        var targets: [(Line, ManagedObject)] = []
        for line in lines {
            if let id = line.id, let existing = try object(id) {
                guard existing.entity.name == line.entity.name else {
                    problem(line.number, "\(id.uuidString) is a \(existing.entity.name), not a \(line.entity.name)"); continue
                }
                if line.delete {
                    if !existing.isDeleted { try context.delete(existing); summary.deleted += 1 }
                    continue
                }
                if !targets.contains(where: { $0.1 === existing }) { summary.updated += 1 }
                targets.append((line, existing))
            } else if line.delete {
                problem(line.number, "no record with id \(line.id?.uuidString ?? "") to delete")
            } else {
                let o = try context.insert(line.entity.name, [:], globalID: line.id, into: store)
                objects[o.globalID] = o
                summary.inserted += 1
                targets.append((line, o))
            }
        }
        // Pass 2: the values each line gives.
        for (line, o) in targets where !o.isDeleted {
            for (key, json) in line.attributes.sorted(by: { $0.key < $1.key }) {
                guard let attribute = line.entity.attributes.first(where: { $0.name == key }) else {
                    problem(line.number, "\(line.entity.name) has no attribute '\(key)'"); continue
                }
                guard let value = StoreValue(json: json, type: attribute.type) else {
                    problem(line.number, "'\(key)' is not a valid \(attribute.type) value"); continue
                }
                try o.setValue(value, forKey: key)
            }
            for (key, json) in line.relationships.sorted(by: { $0.key < $1.key }) {
                guard let rel = line.entity.relationships.first(where: { $0.name == key }) else {
                    problem(line.number, "\(line.entity.name) has no relationship '\(key)'"); continue
                }
                func resolve(_ any: Any) throws -> ManagedObject? {
                    guard let s = any as? String, let id = UUID(uuidString: s) else {
                        problem(line.number, "'\(key)' must name records by id"); return nil
                    }
                    guard let t = try object(id), !t.isDeleted else {
                        problem(line.number, "'\(key)': no record with id \(s)"); return nil
                    }
                    return t
                }
                if rel.isToMany {
                    guard let list = json as? [Any] else { problem(line.number, "'\(key)' is to-many: give an array of ids"); continue }
                    try o.setObjects(try list.compactMap(resolve), forKey: key)
                } else if json is NSNull {
                    try o.setObject(nil, forKey: key)
                } else {
                    if let t = try resolve(json) { try o.setObject(t, forKey: key) }
                }
            }
        }
        guard problems.isEmpty else { throw CommandFailure("nothing was imported:\n" + problems.prefix(100).joined(separator: "\n")) }
        try context.save()
        return summary
    }
}
