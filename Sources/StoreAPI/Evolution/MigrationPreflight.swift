import Foundation

/// The checks an upgrade makes on the source store's data before it writes anything: values for properties that
/// become required, no more links than a lowered maximum, no duplicates under a new uniqueness constraint, no links
/// left pointing at dropped records. Records are fed one at a time (``check(_:)``), from a store's pages or an
/// atomic file's stream; only the values of new uniqueness constraints are kept.
struct MigrationPreflight {
    let mapper: MigrationRecordMapper

    /// What is checked for the records of one source entity.
    private struct Checks {
        let step: MigrationRecordMapper.EntityStep
        let required: [Int]
        let requiredLinks: [Int]
        let boundedLinks: [(Int, Int)]
        /// (declaring entity, constraint index, attribute positions in this entity).
        let constraints: [(String, Int, [Int])]
    }

    private var checks: [String: Checks] = [:]
    private var missing: [String: [Int: (keys: [RecordKey], count: Int)]] = [:]
    private var missingLinks: [String: [Int: (keys: [RecordKey], count: Int)]] = [:]
    private var excessLinks: [String: [Int: (keys: [RecordKey], count: Int)]] = [:]
    private var seen: [String: [Int: [[StoreValue]: [RecordKey]]]] = [:]
    /// Records of removed entities, by source entity name.
    var removedCounts: [String: Int] = [:]
    /// What the custom step inserts, counted for laying out the inserted records' keys.
    private var insertionCounts = MigrationInsertions.Counts()
    /// Destination hierarchies whose records come from more than one source hierarchy: each key seen, with the first
    /// record that had it, and the keys that more than one record has.
    private let mergedRoots: Set<String>
    private var keysSeen: [String: [Int64: RecordKey]] = [:]
    private var sharedKeys: [String: [Int64: [RecordKey]]] = [:]

    init(mapper: MigrationRecordMapper) {
        self.mapper = mapper
        let plan = mapper.plan
        let constrained = plan.entities.filter { !$0.addedUniquenessConstraints.isEmpty }
        var sourceRoots: [String: Set<String>] = [:]
        for entity in mapper.destination.entities {
            if let step = mapper.steps[entity.name] { sourceRoots[entity.rootName, default: []].insert(step.source.rootName) }
        }
        let merged = Set(sourceRoots.filter { $0.value.count > 1 }.keys)
        mergedRoots = merged
        for entity in mapper.destination.entities where !entity.isAbstract {
            guard let step = mapper.steps[entity.name], let migration = plan.entities.first(where: { $0.name == entity.name })
            else { continue }
            let c = Checks(
                step: step,
                required: migration.attributes.indices.filter { migration.attributes[$0].requiresValue },
                requiredLinks: migration.relationships.indices.filter { migration.relationships[$0].requiresValue },
                boundedLinks: migration.relationships.indices.compactMap { i in migration.relationships[i].checkedMaximum.map { (i, $0) } },
                constraints: constrained.filter { entity.isKind(of: $0.name) }.flatMap { c in
                    c.addedUniquenessConstraints.enumerated().map { (c.name, $0.offset, $0.element.compactMap { entity.attributeIndex($0) }) }
                })
            // A custom step runs on every record: its errors must surface before anything is written.
            if mapper.customStep != nil || merged.contains(entity.rootName) || !c.required.isEmpty || !c.requiredLinks.isEmpty || !c.boundedLinks.isEmpty || !c.constraints.isEmpty {
                checks[step.source.name] = c
            }
        }
    }

    /// The source entities whose records must be read.
    var entitiesToRead: [String] { Array(checks.keys) }

    /// Checks one record of the source store.
    mutating func check(_ source: Record) throws {
        guard let c = checks[source.entity] else { return }
        let (record, requested, _) = try mapper.migrateInserting(source, with: c.step)
        if mapper.customStep != nil {
            insertionCounts.note(source: source, destinationRoot: c.step.destination.rootName, primaryKey: record.primaryKey,
                                 inserted: requested)
        }
        let name = c.step.destination.name
        let key = record.key
        let root = c.step.destination.rootName
        if mergedRoots.contains(root) {
            if let first = keysSeen[root]?[record.primaryKey] {
                sharedKeys[root, default: [:]][record.primaryKey, default: [first]].append(key)
            } else {
                keysSeen[root, default: [:]][record.primaryKey] = key
            }
        }
        for i in c.required where record.attributes[i].isNull { Self.note(key, in: &missing[name, default: [:]], at: i) }
        // Records the step inserts will be linked to this one through the inverses of their back links.
        var insertedLinks: [Int: Int] = [:]
        for r in requested {
            if let inverse = r.entity.relationships[r.backLink].inverse, let i = c.step.destination.relationshipIndex(inverse) {
                insertedLinks[i, default: 0] += 1
            }
        }
        func links(_ i: Int) -> Int { record.relationships[i].keys.count + (insertedLinks[i] ?? 0) }
        for i in c.requiredLinks {
            let minimum = max(1, c.step.destination.relationships[i].minCount)
            if links(i) < minimum { Self.note(key, in: &missingLinks[name, default: [:]], at: i) }
        }
        for (i, maximum) in c.boundedLinks where links(i) > maximum {
            Self.note(key, in: &excessLinks[name, default: [:]], at: i)
        }
        for (declaring, index, positions) in c.constraints {
            let values = positions.map { record.attributes[$0] }
            // As in SQL, a record with no value in the constraint is not a duplicate of anything.
            if values.contains(where: \.isNull) { continue }
            seen[declaring, default: [:]][index, default: [:]][values, default: []].append(key)
        }
    }

    /// Every problem found (empty when the data fits the new schema).
    func problems() -> [SchemaMigrationProblem] {
        var problems: [SchemaMigrationProblem] = []
        for entity in mapper.destination.entities {
            for (i, m) in (missing[entity.name] ?? [:]).sorted(by: { $0.key < $1.key }) {
                problems.append(.missingValues(entity: entity.name, property: entity.attributes[i].name, records: m.keys, count: m.count))
            }
            for (i, m) in (missingLinks[entity.name] ?? [:]).sorted(by: { $0.key < $1.key }) {
                problems.append(.missingValues(entity: entity.name, property: entity.relationships[i].name, records: m.keys, count: m.count))
            }
            for (i, m) in (excessLinks[entity.name] ?? [:]).sorted(by: { $0.key < $1.key }) {
                problems.append(.tooManyLinks(entity: entity.name, relationship: entity.relationships[i].name,
                                              maximum: entity.relationships[i].maxCount, records: m.keys, count: m.count))
            }
        }
        for c in mapper.plan.entities where !c.addedUniquenessConstraints.isEmpty {
            for (index, constraint) in c.addedUniquenessConstraints.enumerated() {
                let groups = (seen[c.name]?[index] ?? [:]).filter { $0.value.count > 1 }
                    .sorted { ($0.value.first?.primaryKey ?? 0) < ($1.value.first?.primaryKey ?? 0) }
                for (values, keys) in groups.prefix(StoreMigrationLimits.listedDuplicateGroups) {
                    problems.append(.duplicateValues(entity: c.name, attributes: constraint, values: values.map(\.description),
                                                     records: keys))
                }
            }
        }
        for (root, shared) in sharedKeys.sorted(by: { $0.key < $1.key }) {
            let groups = shared.sorted { $0.key < $1.key }.map(\.value)
            problems.append(.sharedPrimaryKeys(hierarchy: root, records: Array(groups.prefix(StoreMigrationLimits.listedDuplicateGroups)),
                                               count: groups.count))
        }
        for (name, linkedFrom) in droppedLinkTargets() {
            let count = removedCounts[name] ?? 0
            if count > 0 { problems.append(.linkedRecordsDropped(entity: name, count: count, linkedFrom: linkedFrom)) }
        }
        return problems
    }

    /// The mapper with the layout of the records its custom step inserts (unchanged when it inserts none), for the
    /// store whose metadata is `stored`.
    func mapperWithInsertions(stored: StoreMetadata) throws -> MigrationRecordMapper {
        guard !insertionCounts.most.isEmpty else { return mapper }
        var floors: [String: Int64] = [:]
        for (root, next) in stored.primaryKeyCounters ?? [:] {
            if let name = mapper.destinationNames[root] { floors[name] = max(floors[name] ?? 0, next - 1) }
        }
        let order = mapper.destination.entities.compactMap { mapper.steps[$0.name]?.source.name }
        var m = mapper
        m.insertions = try MigrationInsertions(counts: insertionCounts, sourceOrder: order, floors: floors)
        return m
    }

    /// Removed sub-entities whose hierarchy stays, with the kept relationships into that hierarchy that may link
    /// their records.
    func droppedLinkTargets() -> [(String, [String])] {
        mapper.plan.removedEntities.compactMap { name in
            guard let removed = mapper.source.entity(named: name), !removed.isAbstract,
                  let keptRoot = mapper.destinationNames[removed.rootName] else { return nil }
            let linkedFrom = mapper.destination.definitions.flatMap { d in
                d.relationships.filter { r in mapper.destination.entity(named: r.destination)?.rootName == keptRoot }
                    .map { "\(d.name).\($0.name)" }
            }
            return linkedFrom.isEmpty ? nil : (name, linkedFrom)
        }
    }

    /// The checks of an open store, read page by page.
    static func run(in store: any PersistentStore, mapper: MigrationRecordMapper, batchSize: Int) throws -> MigrationPreflight {
        var preflight = MigrationPreflight(mapper: mapper)
        for name in preflight.entitiesToRead.sorted() {
            try KeyedPages.forEach(
                size: batchSize, next: { try store.scan(entity: name, after: $0, limit: batchSize) },
                count: \.count, lastKey: { $0.last?.primaryKey }
            ) { page in
                for r in page { try preflight.check(r) }
            }
        }
        for (name, _) in preflight.droppedLinkTargets() {
            preflight.removedCounts[name] = try store.count(FetchRequest(entity: name, includesSubentities: false))
        }
        return preflight
    }

    /// The checks of an atomic store file, read in one streaming pass.
    static func run(inFileAt url: URL, of backend: any AtomicStoreBackend, mapper: MigrationRecordMapper) throws -> MigrationPreflight {
        var preflight = MigrationPreflight(mapper: mapper)
        let removed = Set(preflight.droppedLinkTargets().map(\.0))
        guard !preflight.entitiesToRead.isEmpty || !removed.isEmpty else { return preflight }
        try backend.readStore(at: url) { element in
            guard case .record(let r) = element else { return }
            if removed.contains(r.entity) { preflight.removedCounts[r.entity, default: 0] += 1 }
            try preflight.check(r)
        }
        return preflight
    }

    private static func note(_ key: RecordKey, in table: inout [Int: (keys: [RecordKey], count: Int)], at i: Int) {
        var entry = table[i] ?? ([], 0)
        if entry.keys.count < StoreMigrationLimits.listedRecords { entry.keys.append(key) }
        entry.count += 1
        table[i] = entry
    }
}
