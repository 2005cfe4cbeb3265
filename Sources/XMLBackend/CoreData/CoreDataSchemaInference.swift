import Foundation
@_spi(BackendKit) import StoreAPI

/// Infers a schema, identities and records from the objects of a Core Data XML store, which carries no model.
///
/// - **Entities** are the object types and relationship destinations, in order of first appearance. Core Data
///   upper-cases entity names in these files; when the metadata's `NSStoreModelVersionHashes` names exactly one
///   entity that upper-cases to a type, that original spelling is used. Property names stay as written.
/// - **Attributes** take their type from `type`; **relationships** their destination and cardinality from
///   `destination` and `type="min/max"` (max 1 is to-one; 0 is unbounded). Every property is optional unless
///   its minimum says otherwise, and order of to-many values is kept as written.
/// - **Inheritance**: an object that a relationship reaches but whose type is not the destination must be of a
///   sub-entity of it, so its type is made one; properties both share move to the parent, and a parent without
///   objects of its own (an abstract entity, typically) takes the properties every sub-entity has alike.
/// - **Inverses** are paired when exactly one relationship on the destination leads back and the data agrees —
///   every link one way is present the other way — and the same holds from the other side.
/// - **Identity**: primary keys are the numbers of `z` ids; other ids (hand-edited files) get fresh keys above
///   every number, in document order. Global IDs are version-5 UUIDs of the store UUID and the id, and the store
///   UUID is `databaseInfo/UUID` (or derived from the objects' ids and types when that is missing), so reading the
///   same file twice gives the same identities.
struct CoreDataSchemaInference {
    let url: URL
    let info: XMLDatabaseInfo
    let objects: [RawObject]

    private struct AttributeDraft {
        var name: String
        var type: AttributeType
        var line: Int
    }

    private struct RelationshipDraft {
        var name: String
        var destination: String
        var minCount: Int
        var maxCount: Int
        var line: Int
        var isToMany: Bool { maxCount != 1 }
        var inverse: String?
    }

    private struct EntityDraft {
        var name: String
        var parent: String?
        var hasObjects = false
        var attributes: [AttributeDraft] = []
        var relationships: [RelationshipDraft] = []
        func attribute(_ n: String) -> Int? { attributes.firstIndex { $0.name == n } }
        func relationship(_ n: String) -> Int? { relationships.firstIndex { $0.name == n } }
    }

    private func corrupt(_ reason: String, line: Int) -> StoreError {
        StoreError.corruptStore(url, reason: line > 0 ? "line \(line): \(reason)" : reason)
    }

    func build() throws -> (StoreMetadata, [Record]) {
        var drafts = try draftEntities()
        let pks = try primaryKeys()
        let targets = try resolveTargets()
        try inferInheritance(&drafts, targets: targets)
        try hoistInheritedProperties(&drafts)
        hoistSharedPropertiesToEmptyParents(&drafts)
        inferInverses(&drafts, targets: targets)
        let rename = recoveredNames(drafts)
        let schema = try makeSchema(drafts, rename: rename)
        let storeUUID = info.uuid.flatMap(UUID.init(uuidString:)) ?? derivedStoreUUID()
        var records: [Record] = []
        records.reserveCapacity(objects.count)
        for (i, o) in objects.enumerated() {
            let name = rename[o.type] ?? o.type
            guard let entity = schema.entity(named: name) else { throw corrupt("no entity for \(o.type)", line: o.line) }
            var record = Record(
                entity: name, primaryKey: pks[i], globalID: NameBasedUUID.make(namespace: storeUUID, name: o.id),
                attributes: Array(repeating: .null, count: entity.attributes.count),
                relationships: entity.relationships.map { $0.isToMany ? .toMany([]) : .toOne(nil) })
            for a in o.attributes {
                guard let ai = entity.attributeIndex(a.name) else { throw corrupt("no attribute \(a.name) on \(name)", line: a.line) }
                guard let value = XMLValueText.value(from: a.text, type: a.type) else {
                    throw corrupt("'\(OwnStoreBodyReader.excerpt(a.text))' is not a valid \(a.typeName) for attribute '\(a.name)' of object '\(o.id)'", line: a.line)
                }
                record.attributes[ai] = value
            }
            for (j, rel) in o.relationships.enumerated() {
                guard let ri = entity.relationshipIndex(rel.name) else { throw corrupt("no relationship \(rel.name) on \(name)", line: rel.line) }
                let keys = targets[i][j].map { pks[$0] }
                record.relationships[ri] = rel.isToMany ? .toMany(keys) : .toOne(keys.first)
            }
            records.append(record)
        }
        let metadata = StoreMetadata(storeType: XMLStoreBackend.typeIdentifier, storeUUID: storeUUID, schema: schema,
                                     custom: info.plist)
        return (metadata, records)
    }

    // MARK: Entities and properties

    private func draftEntities() throws -> [String: EntityDraft] {
        var drafts: [String: EntityDraft] = [:]
        for o in objects {
            var d = drafts[o.type] ?? EntityDraft(name: o.type)
            d.hasObjects = true
            for a in o.attributes {
                if let j = d.relationship(a.name) {
                    throw corrupt("'\(a.name)' of \(o.type) is an attribute here and a relationship at line \(d.relationships[j].line)", line: a.line)
                }
                if let j = d.attribute(a.name) {
                    guard d.attributes[j].type == a.type else {
                        throw corrupt("attribute '\(a.name)' of \(o.type) is \(a.typeName) here and \(XMLStoreFormat.typeName(d.attributes[j].type)) at line \(d.attributes[j].line)", line: a.line)
                    }
                } else {
                    d.attributes.append(AttributeDraft(name: a.name, type: a.type, line: a.line))
                }
            }
            for rel in o.relationships {
                if let j = d.attribute(rel.name) {
                    throw corrupt("'\(rel.name)' of \(o.type) is a relationship here and an attribute at line \(d.attributes[j].line)", line: rel.line)
                }
                if let j = d.relationship(rel.name) {
                    let known = d.relationships[j]
                    guard known.destination == rel.destination, known.isToMany == rel.isToMany else {
                        throw corrupt("relationship '\(rel.name)' of \(o.type) leads to \(rel.destination) (\(rel.minCount)/\(rel.maxCount)) here and to \(known.destination) (\(known.minCount)/\(known.maxCount)) at line \(known.line)", line: rel.line)
                    }
                    d.relationships[j].minCount = min(known.minCount, rel.minCount)
                    d.relationships[j].maxCount = known.maxCount == 0 || rel.maxCount == 0 ? 0 : max(known.maxCount, rel.maxCount)
                } else {
                    d.relationships.append(RelationshipDraft(name: rel.name, destination: rel.destination, minCount: rel.minCount,
                                                             maxCount: rel.maxCount, line: rel.line))
                }
            }
            drafts[o.type] = d
        }
        for o in objects {
            for rel in o.relationships where drafts[rel.destination] == nil {
                drafts[rel.destination] = EntityDraft(name: rel.destination)
            }
        }
        return drafts
    }

    /// Entity names in order of first appearance (object types, then destinations).
    private var entityOrder: [String] {
        var seen: Set<String> = []
        var order: [String] = []
        for o in objects where seen.insert(o.type).inserted { order.append(o.type) }
        for o in objects {
            for rel in o.relationships where seen.insert(rel.destination).inserted { order.append(rel.destination) }
        }
        return order
    }

    // MARK: Identity

    private func primaryKeys() throws -> [Int64] {
        var byID: [String: Int] = [:]
        var pks = [Int64](repeating: 0, count: objects.count)
        var used: Set<Int64> = []
        var pending: [Int] = []
        for (i, o) in objects.enumerated() {
            if let other = byID.updateValue(i, forKey: o.id) {
                throw corrupt("object id '\(o.id)' is also used at line \(objects[other].line)", line: o.line)
            }
            if let n = Self.zNumber(o.id), used.insert(n).inserted { pks[i] = n } else { pending.append(i) }
        }
        var next = max(used.max() ?? 0, (info.nextObjectID.flatMap { Int64($0) } ?? 1) - 1) + 1
        for i in pending {
            while used.contains(next) { next += 1 }
            pks[i] = next
            used.insert(next)
            next += 1
        }
        return pks
    }

    /// The number of a `z<digits>` id.
    static func zNumber(_ id: String) -> Int64? {
        let u = id.utf8
        guard u.count >= 2, u.count <= 19, u.first == UInt8(ascii: "z"),
              u.dropFirst().allSatisfy({ $0 >= 0x30 && $0 <= 0x39 })
        else { return nil }
        return Int64(id.dropFirst())
    }

    private func derivedStoreUUID() -> UUID {
        NameBasedUUID.make(namespace: NameBasedUUID.storeNamespace,
                           name: objects.map { "\($0.type)\u{1}\($0.id)" }.joined(separator: "\n"))
    }

    /// For each object and each of its relationships, the indices of the objects its `idrefs` name.
    private func resolveTargets() throws -> [[[Int]]] {
        var byID: [String: Int] = [:]
        for (i, o) in objects.enumerated() { byID[o.id] = i }
        return try objects.map { o in
            try o.relationships.map { rel in
                if !rel.isToMany && rel.idrefs.count > 1 {
                    throw corrupt("to-one relationship '\(rel.name)' of object '\(o.id)' names \(rel.idrefs.count) objects", line: rel.line)
                }
                return try rel.idrefs.map { ref in
                    guard let t = byID[ref] else {
                        throw corrupt("relationship '\(rel.name)' of object '\(o.id)' names '\(ref)', which is no object in the file", line: rel.line)
                    }
                    return t
                }
            }
        }
    }

    // MARK: Inheritance

    private func isAncestor(_ a: String, of e: String, in drafts: [String: EntityDraft]) -> Bool {
        var cursor = drafts[e]?.parent
        var steps = 0
        while let p = cursor, steps <= drafts.count {
            if p == a { return true }
            cursor = drafts[p]?.parent
            steps += 1
        }
        return false
    }

    private func inferInheritance(_ drafts: inout [String: EntityDraft], targets: [[[Int]]]) throws {
        var constraints: [(child: String, parent: String, line: Int)] = []
        var seen: Set<String> = []
        for (i, o) in objects.enumerated() {
            for (j, rel) in o.relationships.enumerated() {
                for t in targets[i][j] where objects[t].type != rel.destination {
                    if seen.insert(objects[t].type + "\u{1}" + rel.destination).inserted {
                        constraints.append((objects[t].type, rel.destination, rel.line))
                    }
                }
            }
        }
        // Apply until nothing changes: a constraint that conflicts now may fit once another one placed its parent.
        var open = constraints
        var changed = true
        while changed && !open.isEmpty {
            changed = false
            var still: [(child: String, parent: String, line: Int)] = []
            for c in open {
                if isAncestor(c.parent, of: c.child, in: drafts) { changed = true; continue }
                if c.parent == c.child || isAncestor(c.child, of: c.parent, in: drafts) {
                    throw corrupt("an object of \(c.child) is in a relationship to \(c.parent), which would make each a kind of the other", line: c.line)
                }
                if let p = drafts[c.child]?.parent, !isAncestor(p, of: c.parent, in: drafts) {
                    still.append(c)
                    continue
                }
                drafts[c.child]?.parent = c.parent
                changed = true
            }
            open = still
        }
        if let c = open.first {
            throw corrupt("an object of \(c.child) is in a relationship to \(c.parent), but \(c.child) is already a kind of \(drafts[c.child]?.parent ?? "?")", line: c.line)
        }
    }

    /// Removes from each sub-entity the properties it inherits (they were written on its objects too).
    private func hoistInheritedProperties(_ drafts: inout [String: EntityDraft]) throws {
        func chain(_ name: String) -> [String] {
            var out: [String] = []
            var cursor = drafts[name]?.parent
            while let p = cursor, out.count <= drafts.count { out.append(p); cursor = drafts[p]?.parent }
            return out
        }
        let original = drafts
        for name in entityOrder {
            guard var d = drafts[name], d.parent != nil else { continue }
            for ancestor in chain(name) {
                guard let a = original[ancestor] else { continue }
                for inherited in a.attributes {
                    if let j = d.attribute(inherited.name) {
                        guard d.attributes[j].type == inherited.type else {
                            throw corrupt("attribute '\(inherited.name)' of \(name) is \(XMLStoreFormat.typeName(d.attributes[j].type)), but \(XMLStoreFormat.typeName(inherited.type)) on its parent \(ancestor)", line: d.attributes[j].line)
                        }
                        d.attributes.remove(at: j)
                    }
                    if let j = d.relationship(inherited.name) {
                        throw corrupt("'\(inherited.name)' of \(name) is a relationship, but an attribute on its parent \(ancestor)", line: d.relationships[j].line)
                    }
                }
                for inherited in a.relationships {
                    if let j = d.relationship(inherited.name) {
                        guard d.relationships[j].destination == inherited.destination, d.relationships[j].isToMany == inherited.isToMany else {
                            throw corrupt("relationship '\(inherited.name)' of \(name) differs from the one on its parent \(ancestor)", line: d.relationships[j].line)
                        }
                        d.relationships.remove(at: j)
                    }
                    if let j = d.attribute(inherited.name) {
                        throw corrupt("'\(inherited.name)' of \(name) is an attribute, but a relationship on its parent \(ancestor)", line: d.attributes[j].line)
                    }
                }
            }
            drafts[name] = d
        }
    }

    /// A parent without objects of its own knows no properties; the ones all its sub-entities have alike (same
    /// name, type, destination and cardinality) are its own, so they move up — deepest parents first.
    private func hoistSharedPropertiesToEmptyParents(_ drafts: inout [String: EntityDraft]) {
        func depth(_ name: String) -> Int {
            var n = 0
            var cursor = drafts[name]?.parent
            while let p = cursor, n <= drafts.count { n += 1; cursor = drafts[p]?.parent }
            return n
        }
        let parents = entityOrder.filter { name in
            drafts[name]?.hasObjects == false && drafts.values.contains { $0.parent == name }
        }.sorted { depth($0) > depth($1) }
        for parent in parents {
            let children = entityOrder.filter { drafts[$0]?.parent == parent }
            guard let first = children.first.flatMap({ drafts[$0] }) else { continue }
            let shared = first.attributes.filter { a in
                children.allSatisfy { c in drafts[c]?.attributes.contains { $0.name == a.name && $0.type == a.type } == true }
            }
            let sharedRelationships = first.relationships.filter { r in
                children.allSatisfy { c in
                    drafts[c]?.relationships.contains { $0.name == r.name && $0.destination == r.destination && $0.isToMany == r.isToMany } == true
                }
            }
            for a in shared where drafts[parent]?.attribute(a.name) == nil { drafts[parent]?.attributes.append(a) }
            for r in sharedRelationships where drafts[parent]?.relationship(r.name) == nil {
                var merged = r
                for c in children {
                    guard let other = drafts[c]?.relationships.first(where: { $0.name == r.name }) else { continue }
                    merged.minCount = min(merged.minCount, other.minCount)
                    merged.maxCount = merged.maxCount == 0 || other.maxCount == 0 ? 0 : max(merged.maxCount, other.maxCount)
                }
                drafts[parent]?.relationships.append(merged)
            }
            let attributeNames = Set(shared.map(\.name))
            let relationshipNames = Set(sharedRelationships.map(\.name))
            for c in children {
                drafts[c]?.attributes.removeAll { attributeNames.contains($0.name) }
                drafts[c]?.relationships.removeAll { relationshipNames.contains($0.name) }
            }
        }
    }

    // MARK: Inverses

    private struct RelationshipID: Hashable {
        var entity: String
        var name: String
    }

    private func inferInverses(_ drafts: inout [String: EntityDraft], targets: [[[Int]]]) {
        // The entity that declares each property an object carries (itself or an ancestor).
        func declaringEntity(_ type: String, _ property: String) -> String? {
            var cursor: String? = type
            var steps = 0
            while let e = cursor, steps <= drafts.count {
                if drafts[e]?.relationship(property) != nil { return e }
                cursor = drafts[e]?.parent
                steps += 1
            }
            return nil
        }
        var edges: [RelationshipID: Set<UInt64>] = [:]
        for (i, o) in objects.enumerated() {
            for (j, rel) in o.relationships.enumerated() {
                guard let owner = declaringEntity(o.type, rel.name) else { continue }
                let id = RelationshipID(entity: owner, name: rel.name)
                for t in targets[i][j] { edges[id, default: []].insert(UInt64(i) << 32 | UInt64(t)) }
            }
        }
        func reversed(_ s: Set<UInt64>) -> Set<UInt64> { Set(s.map { ($0 & 0xFFFF_FFFF) << 32 | $0 >> 32 }) }
        func consistentCandidates(_ r: RelationshipID) -> [RelationshipID] {
            guard let rel = drafts[r.entity]?.relationships.first(where: { $0.name == r.name }),
                  let destination = drafts[rel.destination] else { return [] }
            let mine = edges[r] ?? []
            return destination.relationships.filter { $0.destination == r.entity }
                .map { RelationshipID(entity: rel.destination, name: $0.name) }
                .filter { reversed(edges[$0] ?? []) == mine }
        }
        var inverses: [RelationshipID: String] = [:]
        for (entity, d) in drafts {
            for rel in d.relationships {
                let id = RelationshipID(entity: entity, name: rel.name)
                let mine = consistentCandidates(id)
                guard mine.count == 1, let other = mine.first, consistentCandidates(other) == [id] else { continue }
                inverses[id] = other.name
            }
        }
        for (id, inverse) in inverses {
            guard let j = drafts[id.entity]?.relationship(id.name) else { continue }
            drafts[id.entity]?.relationships[j].inverse = inverse
        }
    }

    // MARK: Schema

    /// Original spellings of upper-cased entity names, from the metadata's version-hash keys.
    private func recoveredNames(_ drafts: [String: EntityDraft]) -> [String: String] {
        guard case .dictionary(let hashes)? = info.plist["NSStoreModelVersionHashes"] else { return [:] }
        var byUpper: [String: [String]] = [:]
        for key in hashes.keys { byUpper[key.uppercased(), default: []].append(key) }
        var rename: [String: String] = [:]
        for name in drafts.keys where drafts[name] != nil {
            guard let spellings = byUpper[name], spellings.count == 1, let original = spellings.first,
                  original != name, drafts[original] == nil
            else { continue }
            rename[name] = original
        }
        return rename
    }

    private func makeSchema(_ drafts: [String: EntityDraft], rename: [String: String]) throws -> Schema {
        func n(_ s: String) -> String { rename[s] ?? s }
        let descriptions = entityOrder.compactMap { name -> EntityDescription? in
            guard let d = drafts[name] else { return nil }
            return EntityDescription(
                name: n(d.name), parent: d.parent.map(n),
                attributes: d.attributes.map { AttributeDescription(name: $0.name, type: $0.type) },
                relationships: d.relationships.map { r in
                    RelationshipDescription(
                        name: r.name, destination: n(r.destination), inverse: r.inverse, isToMany: r.isToMany,
                        isOptional: r.minCount == 0, minCount: r.minCount, maxCount: r.maxCount)
                })
        }
        do {
            return try Schema(entities: descriptions)
        } catch {
            throw StoreError.corruptStore(url, reason: "the schema inferred from the objects is inconsistent: \(error)")
        }
    }
}
