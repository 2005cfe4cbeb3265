import Foundation

/// The checking and linking half of ``NDJSONImporter``: turns parsed lines into the exact records and updates one
/// save will write, or reports every reason it cannot.
///
/// Records are *nodes*: `0..<records.count` are the file's lines, `records.count + j` is ``existing``[j], a stored
/// record some line refers to.
struct ImportPlan {
    let schema: Schema
    private(set) var records: [ParsedRecord]
    let indexOfID: [UUID: Int]
    private var problems: ProblemList

    /// Stored records the file refers to.
    private var existing: [Record] = []
    private var existingIndex: [UUID: Int] = [:]
    /// Per new record, per relationship: the final targets (nodes), in order.
    private var final: [[[Int]]] = []
    /// Per referenced stored record: relationship index → new nodes to append.
    private var additions: [Int: [Int: [Int]]] = [:]

    init(schema: Schema, records: [ParsedRecord], indexOfID: [UUID: Int], file: String, maxProblems: Int) {
        self.schema = schema
        self.records = records
        self.indexOfID = indexOfID
        self.problems = ProblemList(file: file, limit: maxProblems)
    }

    // MARK: Checking

    mutating func resolve(against store: any PersistentStore) throws {
        let constraints = ConstraintGroups(schema: schema)
        var fileTuples = checkUniquenessWithinFile(constraints)
        try scanStore(store, constraints: constraints, fileTuples: &fileTuples)
        linkRelationships()
        checkCounts()
        try problems.throwIfAny()
    }

    /// Uniqueness among the file's own records; returns each constraint's values → record index, for the store check.
    private mutating func checkUniquenessWithinFile(_ constraints: ConstraintGroups) -> [[UniqueKey: Int]] {
        var tuples = [[UniqueKey: Int]](repeating: [:], count: constraints.groups.count)
        for (i, record) in records.enumerated() {
            for (group, indices) in constraints.applying(to: record.entity) {
                // Like SQL UNIQUE, a constraint with an empty value cannot conflict.
                guard let key = UniqueKey(indices.map { record.attributes[$0] }) else { continue }
                if let first = tuples[group].updateValue(i, forKey: key) {
                    tuples[group][key] = first
                    problems.add(line: record.line, "\(constraints.describe(group, key.values)) is already used on line \(records[first].line)")
                }
            }
        }
        return tuples
    }

    /// One pass over the store: ids the file reuses, the stored records the file refers to, and uniqueness against
    /// stored records.
    private mutating func scanStore(_ store: any PersistentStore, constraints: ConstraintGroups,
                                    fileTuples: inout [[UniqueKey: Int]]) throws {
        var wanted: Set<UUID> = []
        for record in records {
            for targets in record.relationships {
                for id in targets ?? [] where indexOfID[id] == nil { wanted.insert(id) }
            }
        }
        let checkUniqueness = fileTuples.contains { !$0.isEmpty }
        let metadata = store.metadata
        for entity in try schema.entities(inConfiguration: metadata.configuration) where !entity.isAbstract {
            let applicable = checkUniqueness ? constraints.applying(to: entity) : []
            var after: Int64?
            while true {
                let page = try store.scan(entity: entity.name, after: after, limit: 5_000)
                guard let last = page.last else { break }
                for stored in page {
                    if let i = indexOfID[stored.globalID] {
                        problems.add(line: records[i].line, "id \(stored.globalID.uuidString) already exists in the store (\(stored.entity) p\(stored.primaryKey)); importing adds records and never replaces one")
                    } else if wanted.contains(stored.globalID) {
                        existingIndex[stored.globalID] = existing.count
                        existing.append(stored)
                    }
                    for (group, indices) in applicable where !fileTuples[group].isEmpty {
                        guard indices.allSatisfy({ $0 < stored.attributes.count }),
                              let key = UniqueKey(indices.map { stored.attributes[$0] }),
                              let i = fileTuples[group][key]
                        else { continue }
                        problems.add(line: records[i].line, "\(constraints.describe(group, key.values)) is already used by a stored record (\(stored.entity) p\(stored.primaryKey), id \(stored.globalID.uuidString))")
                    }
                }
                if page.count < 5_000 { break }
                after = last.primaryKey
            }
        }
    }

    private func entity(ofNode node: Int) -> Entity? {
        node < records.count ? records[node].entity : schema.entity(named: existing[node - records.count].entity)
    }

    private func describe(node: Int) -> String {
        if node < records.count {
            let r = records[node]
            return "\(r.entity.name) \(r.globalID.uuidString) (line \(r.line))"
        }
        let r = existing[node - records.count]
        return "\(r.entity) \(r.globalID.uuidString) (stored, p\(r.primaryKey))"
    }

    /// An implied link: `source`'s relationship `sourceRelationship` names `target`, so `target`'s inverse
    /// relationship `relationship` must hold `source`.
    private struct Edge {
        var target: Int
        var relationship: Int
        var source: Int
        var sourceRelationship: Int
        var sequence: Int
    }

    /// Maps global IDs to nodes, checks target kinds, and fills the inverse side of every link.
    private mutating func linkRelationships() {
        var edges: [Edge] = []
        final = []
        final.reserveCapacity(records.count)
        for (i, record) in records.enumerated() {
            var values: [[Int]] = []
            values.reserveCapacity(record.relationships.count)
            for (k, targets) in record.relationships.enumerated() {
                guard let targets, !targets.isEmpty else { values.append([]); continue }
                let relationship = record.entity.relationships[k]
                var nodes: [Int] = []
                nodes.reserveCapacity(targets.count)
                for id in targets {
                    guard let node = indexOfID[id] ?? existingIndex[id].map({ records.count + $0 }) else {
                        problems.add(line: record.line, "relationship '\(relationship.name)' of \(record.entity.name) refers to \(id.uuidString), which is neither in the file nor in the store")
                        continue
                    }
                    guard let targetEntity = entity(ofNode: node), targetEntity.isKind(of: relationship.destination) else {
                        problems.add(line: record.line, "relationship '\(relationship.name)' of \(record.entity.name) must point to \(relationship.destination) records; \(describe(node: node)) is not one")
                        continue
                    }
                    nodes.append(node)
                    if let inverse = relationship.inverse, let k2 = targetEntity.relationshipIndex(inverse) {
                        edges.append(Edge(target: node, relationship: k2, source: i, sourceRelationship: k, sequence: edges.count))
                    }
                }
                values.append(nodes)
            }
            final.append(values)
        }
        edges.sort { ($0.target, $0.relationship, $0.sequence) < ($1.target, $1.relationship, $1.sequence) }
        var start = 0
        while start < edges.count {
            var end = start + 1
            while end < edges.count, edges[end].target == edges[start].target, edges[end].relationship == edges[start].relationship {
                end += 1
            }
            applyInverse(edges[start..<end])
            start = end
        }
    }

    /// Makes `target.relationship` hold every source of `group` (all edges share target and relationship).
    private mutating func applyInverse(_ group: ArraySlice<Edge>) {
        guard let first = group.first, let targetEntity = entity(ofNode: first.target) else { return }
        let x = first.target
        let k = first.relationship
        let relationship = targetEntity.relationships[k]
        var sources: [Int] = []
        var seen: Set<Int> = []
        for e in group where seen.insert(e.source).inserted { sources.append(e.source) }
        let inverseName = records[first.source].entity.relationships[first.sourceRelationship].name

        if x < records.count {
            let given = records[x].relationships[k] != nil
            let current = final[x][k]
            if !relationship.isToMany {
                if given {
                    for s in sources where current.first != s {
                        problems.add(line: records[x].line, "'\(relationship.name)' of \(describe(node: x)) is \(current.first.map(describe(node:)) ?? "null"), but \(describe(node: s)) lists it in '\(inverseName)'")
                    }
                } else if sources.count > 1 {
                    problems.add(line: records[sources[1]].line, "'\(relationship.name)' of \(describe(node: x)) is to-one, but both \(describe(node: sources[0])) and \(describe(node: sources[1])) list it in '\(inverseName)'")
                } else {
                    final[x][k] = sources
                }
            } else {
                let present = Set(current)
                final[x][k] = current + sources.filter { !present.contains($0) }
            }
            return
        }
        let j = x - records.count
        let stored = existing[j]
        guard k < stored.relationships.count else { return }
        if !relationship.isToMany {
            if case .toOne(let key?) = stored.relationships[k] {
                problems.add(line: records[sources[0]].line, "\(describe(node: sources[0])) lists \(describe(node: x)) in '\(inverseName)', but that stored record already has a '\(relationship.name)' (p\(key)); importing adds records and never re-points stored relationships")
            } else if sources.count > 1 {
                problems.add(line: records[sources[1]].line, "'\(relationship.name)' of \(describe(node: x)) is to-one, but both \(describe(node: sources[0])) and \(describe(node: sources[1])) list it in '\(inverseName)'")
            } else {
                additions[j, default: [:]][k] = sources
            }
        } else {
            additions[j, default: [:]][k] = sources
        }
    }

    /// Required relationships and min/max counts, on the final values.
    private mutating func checkCounts() {
        for (i, record) in records.enumerated() {
            for (k, relationship) in record.entity.relationships.enumerated() {
                let n = final[i][k].count
                if n == 0 {
                    if !relationship.isOptional {
                        problems.add(line: record.line, "relationship '\(relationship.name)' of \(record.entity.name) is required but empty")
                    }
                    continue
                }
                if relationship.isToMany, n < relationship.minCount || (relationship.maxCount > 0 && n > relationship.maxCount) {
                    problems.add(line: record.line, "relationship '\(relationship.name)' of \(record.entity.name) would hold \(n) records; it allows \(Self.bounds(relationship))")
                }
            }
        }
        for (j, changes) in additions {
            let stored = existing[j]
            guard let entity = schema.entity(named: stored.entity) else { continue }
            for (k, added) in changes {
                let relationship = entity.relationships[k]
                let n = stored.relationships[k].keys.count + added.count
                if relationship.isToMany, relationship.maxCount > 0, n > relationship.maxCount, let s = added.first {
                    problems.add(line: records[s].line, "relationship '\(relationship.name)' of \(describe(node: records.count + j)) would hold \(n) records; it allows \(Self.bounds(relationship))")
                }
            }
        }
    }

    private static func bounds(_ r: RelationshipDescription) -> String {
        r.maxCount > 0 ? "\(r.minCount)…\(r.maxCount)" : "at least \(r.minCount)"
    }

    // MARK: Writing

    /// Allocates primary keys and builds the save. Called only once every check passed.
    func changes(allocatingKeysIn store: any PersistentStore) throws -> StoreChanges {
        var counts: [String: Int] = [:]
        var rootOrder: [String] = []
        for r in records {
            if counts[r.entity.rootName] == nil { rootOrder.append(r.entity.rootName) }
            counts[r.entity.rootName, default: 0] += 1
        }
        var next: [String: Int64] = [:]
        for root in rootOrder {
            next[root] = try store.allocatePrimaryKeys(root: root, count: counts[root] ?? 0)
        }
        var keys = [Int64](repeating: 0, count: records.count)
        for (i, r) in records.enumerated() {
            let key = next[r.entity.rootName] ?? 1
            keys[i] = key
            next[r.entity.rootName] = key + 1
        }
        func key(_ node: Int) -> Int64 {
            node < records.count ? keys[node] : existing[node - records.count].primaryKey
        }
        var inserted: [Record] = []
        inserted.reserveCapacity(records.count)
        for (i, r) in records.enumerated() {
            let relationships: [RelationshipValue] = r.entity.relationships.enumerated().map { k, relationship in
                relationship.isToMany ? .toMany(final[i][k].map(key)) : .toOne(final[i][k].first.map(key))
            }
            inserted.append(Record(entity: r.entity.name, primaryKey: keys[i], globalID: r.globalID,
                                   attributes: r.attributes, relationships: relationships))
        }
        var updated: [Record] = []
        for j in additions.keys.sorted() {
            guard let changes = additions[j] else { continue }
            var record = existing[j]
            for (k, added) in changes.sorted(by: { $0.key < $1.key }) {
                switch record.relationships[k] {
                case .toOne: record.relationships[k] = .toOne(added.first.map(key))
                case .toMany(let current): record.relationships[k] = .toMany(current + added.map(key))
                }
            }
            updated.append(record)
        }
        return StoreChanges(inserted: inserted, updated: updated)
    }

    /// The relationship names each updated record gained links in (for history).
    func updatedKeys(_ updated: [Record]) -> [(record: Record, keys: [String])] {
        updated.map { record in
            guard let j = existingIndex[record.globalID], let entity = schema.entity(named: record.entity) else {
                return (record, [])
            }
            let names = (additions[j] ?? [:]).keys.sorted().map { entity.relationships[$0].name }
            return (record, names)
        }
    }
}

/// The values of one uniqueness constraint for one record; single values are kept without an array (most
/// constraints have one attribute, and an import holds one key per record).
enum UniqueKey: Hashable {
    case single(StoreValue)
    case compound([StoreValue])

    /// `nil` when a value is null (a constraint with an empty value cannot conflict).
    init?(_ values: [StoreValue]) {
        if values.contains(where: \.isNull) { return nil }
        self = values.count == 1 ? .single(values[0]) : .compound(values)
    }

    var values: [StoreValue] {
        switch self {
        case .single(let v): [v]
        case .compound(let vs): vs
        }
    }
}

/// Every uniqueness constraint of a schema, with the entity that declares it (its hierarchy is the scope).
struct ConstraintGroups {
    /// (declaring entity, attribute names).
    let groups: [(owner: Entity, attributes: [String])]
    private var byEntity: [String: [(group: Int, indices: [Int])]] = [:]

    init(schema: Schema) {
        var groups: [(owner: Entity, attributes: [String])] = []
        var indexOfGroup: [String: Int] = [:]
        for e in schema.entities {
            for c in e.definition.uniquenessConstraints {
                indexOfGroup[e.name + "\u{1}" + c.joined(separator: "\u{1}")] = groups.count
                groups.append((e, c))
            }
        }
        self.groups = groups
        for e in schema.entities {
            var applicable: [(group: Int, indices: [Int])] = []
            for owner in [e.name] + e.ancestorNames {
                guard let o = schema.entity(named: owner) else { continue }
                for c in o.definition.uniquenessConstraints {
                    guard let g = indexOfGroup[o.name + "\u{1}" + c.joined(separator: "\u{1}")] else { continue }
                    let indices = c.compactMap { e.attributeIndex($0) }
                    if indices.count == c.count { applicable.append((g, indices)) }
                }
            }
            byEntity[e.name] = applicable
        }
    }

    func applying(to entity: Entity) -> [(group: Int, indices: [Int])] { byEntity[entity.name] ?? [] }

    func describe(_ group: Int, _ values: [StoreValue]) -> String {
        let (owner, attributes) = groups[group]
        let pairs = zip(attributes, values).map { "\($0) = \($1)" }.joined(separator: ", ")
        return "\(owner.name) must be unique on (\(attributes.joined(separator: ", "))): \(pairs)"
    }
}
