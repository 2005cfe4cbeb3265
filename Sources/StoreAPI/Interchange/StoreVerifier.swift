import Foundation

/// Checks a store's records against its own schema, beyond what the storage engine checks: every record's layout
/// and values fit its entity, required values are present, global IDs are unique, every relationship key points to
/// an existing record of the right entity, and both sides of every relationship agree.
///
/// The store is read in pages (with the related records of each page), so memory stays bounded except for the set
/// of global IDs seen (16 bytes per record).
public struct StoreVerifier {
    /// Records per page.
    public var batchSize: Int
    /// The most problems reported (the rest are counted in a last line).
    public var maxProblems: Int
    /// Called after every page; throw to stop.
    public var progress: ProgressHandler?

    /// Creates a verifier.
    public init(batchSize: Int = 1_000, maxProblems: Int = 1_000, progress: ProgressHandler? = nil) {
        self.batchSize = max(1, batchSize)
        self.maxProblems = max(1, maxProblems)
        self.progress = progress
    }

    /// The problems found in `store`, one sentence each; empty when the store is consistent.
    public func verify(_ store: any PersistentStore) throws -> [String] {
        var problems: [String] = []
        var dropped = 0
        func add(_ p: String) {
            if problems.count < maxProblems { problems.append(p) } else { dropped += 1 }
        }
        let metadata = store.metadata
        let schema = metadata.schema
        let differing = metadata.incompatibleEntities(with: schema)
        if !differing.isEmpty {
            add("metadata: the stored version hashes do not match the stored schema (entities: \(differing.joined(separator: ", ")))")
        }
        let entities = try schema.entities(inConfiguration: metadata.configuration).filter { !$0.isAbstract }
        let total = progress == nil ? nil : try entities.reduce(0) {
            $0 + (try store.count(FetchRequest(entity: $1.name, includesSubentities: false)))
        }
        // Global ID → (entity position, primary key): 16 bytes of payload per record, no strings.
        var seenIDs: [UUID: (entity: Int32, key: Int64)] = [:]
        let related = RelatedRecords(store: store)
        var done = 0
        for (position, entity) in entities.enumerated() {
            let roots = entity.relationships.map { schema.entity(named: $0.destination)?.rootName ?? $0.destination }
            try KeyedPages.forEach(
                size: batchSize, next: { try store.scan(entity: entity.name, after: $0, limit: batchSize) },
                count: \.count, lastKey: { $0.last?.primaryKey }
            ) { page in
                var pageProblems: [(order: [Int], message: String)] = []
                var references: [String: [Reference]] = [:]
                for (i, r) in page.enumerated() {
                    var n = 0
                    check(r, entity: entity, roots: roots, references: &references, index: i) { message in
                        pageProblems.append(([i, -1, n], message))
                        n += 1
                    }
                    if let other = seenIDs.updateValue((Int32(position), r.primaryKey), forKey: r.globalID) {
                        let owner = RecordKey(entity: entities[Int(other.entity)].name, primaryKey: other.key)
                        pageProblems.append(([i, Int.max, 0], "\(r.key): global ID \(r.globalID.uuidString) is also used by \(owner)"))
                    }
                }
                // Related records, a chunk of keys at a time per destination hierarchy, so a page whose records
                // refer to a million others (a publisher's books) still reads them in bounded memory.
                for (root, refs) in references {
                    let sorted = refs.sorted { $0.key < $1.key }
                    var start = 0
                    while start < sorted.count {
                        var end = start
                        var keys: [Int64] = []
                        while end < sorted.count, keys.count < 10_000 || sorted[end].key == keys.last {
                            if sorted[end].key != keys.last { keys.append(sorted[end].key) }
                            end += 1
                        }
                        try related.load(root: root, keys: keys)
                        for ref in sorted[start..<end] {
                            if let message = checkReference(ref, in: page, entity: entity, root: root, schema: schema, related: related) {
                                pageProblems.append(([ref.record, ref.relationship, ref.ordinal], message))
                            }
                        }
                        start = end
                    }
                }
                for p in pageProblems.sorted(by: { $0.order.lexicographicallyPrecedes($1.order) }) { add(p.message) }
                done += page.count
                try StoreTransfer.report(to: progress, done, total, entity.name)
            }
        }
        var lastToken: Int64?
        for t in try store.history(after: nil) {
            if let lastToken, t.token <= lastToken { add("history: token \(t.token) follows token \(lastToken)") }
            lastToken = t.token
        }
        if dropped > 0 { problems.append("… and \(dropped) more problems") }
        return problems
    }

    /// One relationship key of one record of the page.
    private struct Reference {
        let record: Int
        let relationship: Int
        let ordinal: Int
        let key: Int64
    }

    /// The checks of one record that need no other record; collects its relationship keys for the others.
    private func check(_ r: Record, entity: Entity, roots: [String], references: inout [String: [Reference]], index: Int,
                       add: (String) -> Void) {
        let name = "\(r.key) (id \(r.globalID.uuidString))"
        guard r.entity == entity.name else {
            add("\(name): listed under entity '\(entity.name)' but says it is a '\(r.entity)'")
            return
        }
        guard r.attributes.count == entity.attributes.count, r.relationships.count == entity.relationships.count else {
            add("\(name): has \(r.attributes.count) attributes and \(r.relationships.count) relationships; entity '\(entity.name)' has \(entity.attributes.count) and \(entity.relationships.count)")
            return
        }
        for (i, a) in entity.attributes.enumerated() {
            let v = r.attributes[i]
            if !v.fits(a.type) { add("\(name): attribute '\(a.name)' is a \(a.type.rawValue) but holds a value of type \(v.type?.rawValue ?? "?") (\(v))") }
            if v.isNull && !a.isOptional { add("\(name): required attribute '\(a.name)' is empty") }
        }
        for (k, rel) in entity.relationships.enumerated() {
            let value = r.relationships[k]
            switch (value, rel.isToMany) {
            case (.toMany, false): add("\(name): to-one relationship '\(rel.name)' holds a list")
            case (.toOne, true): add("\(name): to-many relationship '\(rel.name)' holds a single key")
            default: break
            }
            let keys = value.keys
            if keys.isEmpty && !rel.isOptional { add("\(name): required relationship '\(rel.name)' is empty") }
            if rel.isToMany, !keys.isEmpty, keys.count < rel.minCount || (rel.maxCount > 0 && keys.count > rel.maxCount) {
                add("\(name): relationship '\(rel.name)' holds \(keys.count) records, outside its min/max count")
            }
            var seen: Set<Int64> = []
            let distinct = keys.filter { seen.insert($0).inserted }
            if distinct.count != keys.count { add("\(name): relationship '\(rel.name)' lists a record twice") }
            for (ordinal, key) in distinct.enumerated() {
                references[roots[k], default: []].append(Reference(record: index, relationship: k, ordinal: ordinal, key: key))
            }
        }
    }

    /// Whether one relationship key points to an existing record of the right entity that points back.
    private func checkReference(_ ref: Reference, in page: [Record], entity: Entity, root: String, schema: Schema,
                                related: RelatedRecords) -> String? {
        let r = page[ref.record]
        let rel = entity.relationships[ref.relationship]
        let name = "\(r.key) (id \(r.globalID.uuidString))"
        guard let target = related.record(root: root, key: ref.key) else {
            return "\(name): relationship '\(rel.name)' points to \(root)/p\(ref.key), which does not exist"
        }
        guard let targetEntity = schema.entity(named: target.entity), targetEntity.isKind(of: rel.destination) else {
            return "\(name): relationship '\(rel.name)' points to \(target.key), which is not a \(rel.destination)"
        }
        guard let inverse = rel.inverse, let index = targetEntity.relationshipIndex(inverse), index < target.relationships.count
        else { return nil }
        if !related.relationship(index, of: target, root: root, contains: r.primaryKey) {
            return "\(name): relationship '\(rel.name)' points to \(target.key), whose '\(inverse)' does not point back"
        }
        return nil
    }
}

/// The records a verification refers to, loaded a page at a time and kept across pages while they fit a fixed
/// budget (counted in keys held), with the large to-many lists turned into sets for the "does it point back"
/// question.
///
/// Two generations: when the newer one outgrows half the budget it becomes the older one and the previous older one
/// is dropped; a record the current page needs is moved back into the newer generation, so records every page refers
/// to (a publisher, a tag) are read once, and a page never loses a record it needs.
private final class RelatedRecords {
    private struct ListKey: Hashable {
        let root: String
        let primaryKey: Int64
        let index: Int
    }

    private struct Generation {
        var records: [String: [Int64: Record]] = [:]
        var absent: [String: Set<Int64>] = [:]
        var sets: [ListKey: Set<Int64>] = [:]
        var weight = 0
    }

    let store: any PersistentStore
    private let budget = 8_000_000
    private var current = Generation()
    private var previous = Generation()

    init(store: any PersistentStore) {
        self.store = store
    }

    /// A rough size in units of about 16 bytes: the record itself, its values and its related keys.
    private static func weight(of r: Record) -> Int {
        8 + r.attributes.count * 2 + r.relationships.reduce(0) { $0 + $1.keys.count }
    }

    /// Makes the records `keys` of hierarchy `root` available to ``record(root:key:)`` until the next call.
    func load(root: String, keys: [Int64]) throws {
        if current.weight > budget / 2 {
            previous = current
            current = Generation()
        }
        do {
            var missing: [Int64] = []
            for key in keys where current.records[root]?[key] == nil && current.absent[root]?.contains(key) != true {
                if let r = previous.records[root]?.removeValue(forKey: key) {
                    current.records[root, default: [:]][key] = r
                    current.weight += Self.weight(of: r)
                    for index in r.relationships.indices {
                        let id = ListKey(root: root, primaryKey: key, index: index)
                        if let set = previous.sets.removeValue(forKey: id) { current.sets[id] = set }
                    }
                } else if previous.absent[root]?.remove(key) != nil {
                    current.absent[root, default: []].insert(key)
                    current.weight += 1
                } else {
                    missing.append(key)
                }
            }
            var found: Set<Int64> = []
            for start in stride(from: 0, to: missing.count, by: 10_000) {
                for r in try store.records(withKeys: Array(missing[start..<min(start + 10_000, missing.count)]), root: root) {
                    current.records[root, default: [:]][r.primaryKey] = r
                    current.weight += Self.weight(of: r)
                    found.insert(r.primaryKey)
                }
            }
            for key in missing where !found.contains(key) {
                current.absent[root, default: []].insert(key)
                current.weight += 1
            }
        }
    }

    /// A record loaded for the current page (`nil` when it does not exist).
    func record(root: String, key: Int64) -> Record? { current.records[root]?[key] }

    func relationship(_ index: Int, of target: Record, root: String, contains key: Int64) -> Bool {
        let keys = target.relationships[index].keys
        guard keys.count > 16 else { return keys.contains(key) }
        let id = ListKey(root: root, primaryKey: target.primaryKey, index: index)
        if let set = current.sets[id] { return set.contains(key) }
        let set = Set(keys)
        current.sets[id] = set
        current.weight += keys.count
        return set.contains(key)
    }
}
