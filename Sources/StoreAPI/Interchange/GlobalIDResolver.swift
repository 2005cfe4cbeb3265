import Foundation

/// Translates related primary keys into global IDs, a page at a time, with one
/// ``PersistentStore/records(withKeys:root:)`` call per destination hierarchy per page instead of one per record.
///
/// Keys seen recently are cached in two generations of at most `capacity / 2` entries each (the older generation
/// is dropped when the newer fills up), so memory stays bounded whatever the store's size while the records of
/// recent pages — often the targets of the next ones — stay resolvable without another read. Keys fetched for the
/// current page are kept apart until the next page, so a page never loses a key it needs, however many it needs.
final class GlobalIDResolver {
    let store: any PersistentStore
    let schema: Schema
    private let generationSize: Int
    private var current: [String: [Int64: UUID]] = [:]
    private var previous: [String: [Int64: UUID]] = [:]
    private var currentCount = 0
    private var page: [String: [Int64: UUID]] = [:]
    /// Destination root of each entity's relationships, aligned with ``Entity/relationships``.
    private var destinationRoots: [String: [String]] = [:]

    init(store: any PersistentStore, schema: Schema, capacity: Int = 2_000_000) {
        self.store = store
        self.schema = schema
        self.generationSize = max(capacity / 2, 10_000)
    }

    func destinationRoots(of entity: Entity) -> [String] {
        if let known = destinationRoots[entity.name] { return known }
        let roots = entity.relationships.map { schema.entity(named: $0.destination)?.rootName ?? $0.destination }
        destinationRoots[entity.name] = roots
        return roots
    }

    /// Makes every key the page's relationships refer to resolvable with ``globalID(root:key:)`` until the next
    /// call.
    func prepare(page records: [Record], entity: Entity) throws {
        for (root, ids) in page {
            for (key, id) in ids { insert(root: root, key: key, id: id) }
        }
        page.removeAll(keepingCapacity: true)
        for r in records { insert(root: entity.rootName, key: r.primaryKey, id: r.globalID) }
        let roots = destinationRoots(of: entity)
        var missing: [String: Set<Int64>] = [:]
        for record in records {
            for (i, value) in record.relationships.enumerated() where i < roots.count {
                let root = roots[i]
                for key in value.keys where cached(root: root, key: key) == nil {
                    missing[root, default: []].insert(key)
                }
            }
        }
        for (root, keys) in missing {
            let all = Array(keys)
            var found: [Int64: UUID] = [:]
            for start in stride(from: 0, to: all.count, by: 10_000) {
                for r in try store.records(withKeys: Array(all[start..<min(start + 10_000, all.count)]), root: root) {
                    found[r.primaryKey] = r.globalID
                }
            }
            page[root] = found
        }
    }

    private func cached(root: String, key: Int64) -> UUID? {
        current[root]?[key] ?? previous[root]?[key]
    }

    private func insert(root: String, key: Int64, id: UUID) {
        if current[root, default: [:]].updateValue(id, forKey: key) == nil { currentCount += 1 }
        if currentCount >= generationSize {
            previous = current
            current.removeAll()
            currentCount = 0
        }
    }

    /// The global ID of the record `key` of hierarchy `root`, if it exists (after ``prepare(page:entity:)``).
    func globalID(root: String, key: Int64) -> UUID? {
        page[root]?[key] ?? cached(root: root, key: key)
    }
}
