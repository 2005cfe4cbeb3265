import Foundation

/// The checks an upgrade makes on the source store's data before it writes anything: values for properties that
/// become required, no duplicates under a new uniqueness constraint, no links left pointing at dropped records.
struct MigrationPreflight {
    let mapper: MigrationRecordMapper
    let batchSize: Int

    /// Every problem found (empty when the data fits the new schema). Reads the store page by page; only the
    /// values of new uniqueness constraints are kept while it reads.
    func problems(in store: any PersistentStore) throws -> [SchemaMigrationProblem] {
        var problems: [SchemaMigrationProblem] = []
        let plan = mapper.plan
        // Added constraints, by the entity that declares them: they cover its sub-entities' records too.
        let constrained = plan.entities.filter { !$0.addedUniquenessConstraints.isEmpty }
        var seen: [String: [Int: [[StoreValue]: [RecordKey]]]] = [:]
        for entity in mapper.destination.entities where !entity.isAbstract {
            guard let step = mapper.steps[entity.name], let migration = plan.entities.first(where: { $0.name == entity.name })
            else { continue }
            let required = migration.attributes.indices.filter { migration.attributes[$0].requiresValue }
            let requiredLinks = migration.relationships.indices.filter { migration.relationships[$0].requiresValue }
            let boundedLinks = migration.relationships.indices.compactMap { i in
                migration.relationships[i].checkedMaximum.map { (i, $0) }
            }
            let constraints = constrained.filter { entity.isKind(of: $0.name) }
                .flatMap { c in c.addedUniquenessConstraints.enumerated().map { (c.name, $0.offset, $0.element) } }
            guard !required.isEmpty || !requiredLinks.isEmpty || !boundedLinks.isEmpty || !constraints.isEmpty else { continue }
            var missing: [Int: (keys: [RecordKey], count: Int)] = [:]
            var missingLinks: [Int: (keys: [RecordKey], count: Int)] = [:]
            var excessLinks: [Int: (keys: [RecordKey], count: Int)] = [:]
            let positions = constraints.map { c in c.2.compactMap { entity.attributeIndex($0) } }
            try KeyedPages.forEach(
                size: batchSize, next: { try store.scan(entity: step.source.name, after: $0, limit: batchSize) },
                count: \.count, lastKey: { $0.last?.primaryKey }
            ) { page in
                for source in page {
                    let record = try mapper.migrate(source, with: step)
                    let key = record.key
                    for i in required where record.attributes[i].isNull { Self.note(key, in: &missing, at: i) }
                    for i in requiredLinks {
                        let minimum = max(1, entity.relationships[i].minCount)
                        if record.relationships[i].keys.count < minimum { Self.note(key, in: &missingLinks, at: i) }
                    }
                    for (i, maximum) in boundedLinks where record.relationships[i].keys.count > maximum {
                        Self.note(key, in: &excessLinks, at: i)
                    }
                    for (n, c) in constraints.enumerated() {
                        let values = positions[n].map { record.attributes[$0] }
                        // As in SQL, a record with no value in the constraint is not a duplicate of anything.
                        if values.contains(where: \.isNull) { continue }
                        seen[c.0, default: [:]][c.1, default: [:]][values, default: []].append(key)
                    }
                }
            }
            for (i, m) in missing.sorted(by: { $0.key < $1.key }) {
                problems.append(.missingValues(entity: entity.name, property: entity.attributes[i].name, records: m.keys, count: m.count))
            }
            for (i, m) in missingLinks.sorted(by: { $0.key < $1.key }) {
                problems.append(.missingValues(entity: entity.name, property: entity.relationships[i].name, records: m.keys, count: m.count))
            }
            for (i, m) in excessLinks.sorted(by: { $0.key < $1.key }) {
                problems.append(.tooManyLinks(entity: entity.name, relationship: entity.relationships[i].name,
                                              maximum: entity.relationships[i].maxCount, records: m.keys, count: m.count))
            }
        }
        for c in constrained {
            for (index, constraint) in c.addedUniquenessConstraints.enumerated() {
                let groups = (seen[c.name]?[index] ?? [:]).filter { $0.value.count > 1 }
                    .sorted { ($0.value.first?.primaryKey ?? 0) < ($1.value.first?.primaryKey ?? 0) }
                for (values, keys) in groups.prefix(StoreMigrationLimits.listedDuplicateGroups) {
                    problems.append(.duplicateValues(entity: c.name, attributes: constraint, values: values.map(\.description),
                                                     records: keys))
                }
            }
        }
        problems += try droppedLinkedRecords(in: store)
        return problems
    }

    /// Records of removed sub-entities whose hierarchy stays: a kept relationship into that hierarchy may link them.
    private func droppedLinkedRecords(in store: any PersistentStore) throws -> [SchemaMigrationProblem] {
        var problems: [SchemaMigrationProblem] = []
        for name in mapper.plan.removedEntities {
            guard let removed = mapper.source.entity(named: name), !removed.isAbstract,
                  let keptRoot = mapper.destinationNames[removed.rootName] else { continue }
            let linkedFrom = mapper.destination.definitions.flatMap { d in
                d.relationships.filter { r in mapper.destination.entity(named: r.destination)?.rootName == keptRoot }
                    .map { "\(d.name).\($0.name)" }
            }
            guard !linkedFrom.isEmpty else { continue }
            let count = try store.count(FetchRequest(entity: name, includesSubentities: false))
            if count > 0 { problems.append(.linkedRecordsDropped(entity: name, count: count, linkedFrom: linkedFrom)) }
        }
        return problems
    }

    private static func note(_ key: RecordKey, in table: inout [Int: (keys: [RecordKey], count: Int)], at i: Int) {
        var entry = table[i] ?? ([], 0)
        if entry.keys.count < StoreMigrationLimits.listedRecords { entry.keys.append(key) }
        entry.count += 1
        table[i] = entry
    }
}
