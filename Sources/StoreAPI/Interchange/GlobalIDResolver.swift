import Foundation

/// Translates related primary keys into global IDs, a page at a time, with one
/// ``PersistentStore/records(withKeys:root:)`` call per destination hierarchy per page instead of one per record.
///
/// Keys seen recently are cached up to a fixed number of entries, so memory stays bounded whatever the store's size.
final class GlobalIDResolver {
    let store: any PersistentStore
    let schema: Schema
    private let capacity: Int
    private var cache: [String: [Int64: UUID]] = [:]
    private var cached = 0
    /// Destination root of each entity's relationships, aligned with ``Entity/relationships``.
    private var destinationRoots: [String: [String]] = [:]

    init(store: any PersistentStore, schema: Schema, capacity: Int = 1_000_000) {
        self.store = store
        self.schema = schema
        self.capacity = max(capacity, 1)
    }

    func destinationRoots(of entity: Entity) -> [String] {
        if let known = destinationRoots[entity.name] { return known }
        let roots = entity.relationships.map { schema.entity(named: $0.destination)?.rootName ?? $0.destination }
        destinationRoots[entity.name] = roots
        return roots
    }

    /// Makes every key the page's relationships refer to resolvable with ``globalID(root:key:)``.
    func prepare(page: [Record], entity: Entity) throws {
        if cached > capacity {
            cache.removeAll(keepingCapacity: true)
            cached = 0
        }
        remember(page, root: entity.rootName)
        let roots = destinationRoots(of: entity)
        var missing: [String: Set<Int64>] = [:]
        for record in page {
            for (i, value) in record.relationships.enumerated() where i < roots.count {
                let root = roots[i]
                let known = cache[root]
                for key in value.keys where known?[key] == nil {
                    missing[root, default: []].insert(key)
                }
            }
        }
        for (root, keys) in missing {
            let all = Array(keys)
            for start in stride(from: 0, to: all.count, by: 10_000) {
                let found = try store.records(withKeys: Array(all[start..<min(start + 10_000, all.count)]), root: root)
                for r in found { insert(root: root, key: r.primaryKey, id: r.globalID) }
            }
        }
    }

    /// Caches the global IDs of records just read (other pages often refer to them).
    func remember(_ records: [Record], root: String) {
        for r in records { insert(root: root, key: r.primaryKey, id: r.globalID) }
    }

    private func insert(root: String, key: Int64, id: UUID) {
        if cache[root, default: [:]].updateValue(id, forKey: key) == nil { cached += 1 }
    }

    /// The global ID of the record `key` of hierarchy `root`, if it exists (after ``prepare(page:entity:)``).
    func globalID(root: String, key: Int64) -> UUID? { cache[root]?[key] }
}
