import Foundation
@_spi(BackendKit) import StoreAPI

/// Writes one ``StoreChanges`` inside the caller's transaction.
///
/// Order: deletes, updates, inserts (so a value freed by a delete or an update can be taken by an insert), then the
/// join rows, the key allocators, history. Updates of records with uniqueness constraints first clear the
/// constrained columns of every updated record, so two records may swap values in one save.
///
/// Optimistic locking: an update or delete of a record whose version this store read is made conditional on that
/// version (`WHERE _ver = …`); when another writer changed the row since, nothing matches and the save fails with
/// ``StoreError/conflict(_:object:reason:)`` — never overwriting what the other writer saved.
struct PostgresSaveWriter {
    let layout: PostgresLayout
    let connection: PostgresConnection
    let url: URL
    let storeUUID: UUID
    /// The versions this store read, by hierarchy and key.
    let knownVersions: [String: [Int64: Int64]]
    /// The versions the save leaves, to remember once it commits (`nil`: the record is gone).
    private(set) var newVersions: [(root: String, key: Int64, version: Int64?)] = []

    init(layout: PostgresLayout, connection: PostgresConnection, url: URL, storeUUID: UUID,
         knownVersions: [String: [Int64: Int64]]) {
        self.layout = layout
        self.connection = connection
        self.url = url
        self.storeUUID = storeUUID
        self.knownVersions = knownVersions
    }

    mutating func apply(_ changes: StoreChanges) throws {
        for key in changes.deleted { try delete(key) }
        try clearConstrainedColumns(of: changes.updated)
        for r in changes.updated { try update(r) }
        var highest: [String: Int64] = [:]
        for r in changes.inserted {
            let root = try entity(r.entity).entity.rootName
            highest[root] = max(highest[root] ?? .min, r.primaryKey)
        }
        if changes.inserted.count < Self.copyThreshold {
            for r in changes.inserted { try insert(r, try entity(r.entity)) }
        } else {
            try copyInserted(changes.inserted)
        }
        for r in changes.updated { try writeJoins(r, replacing: true) }
        if changes.inserted.count < Self.copyThreshold {
            for r in changes.inserted { try writeJoins(r, replacing: false) }
        } else {
            try copyJoins(of: changes.inserted)
        }
        for (root, key) in highest.sorted(by: { $0.key < $1.key }) {
            let next = key == .max ? key : key + 1
            try connection.execute(
                "UPDATE \(PostgresLayout.quote(PostgresLayout.keysTable)) SET next = GREATEST(next, $2::bigint) WHERE root = $1",
                [root, String(next)])
        }
        try appendHistory(changes.history)
    }

    private func entity(_ name: String) throws -> PGEntity {
        guard let el = layout.entities[name] else { throw StoreError.unknownEntity(name) }
        return el
    }

    private func objectID(_ entity: String, _ key: Int64) -> ObjectID {
        ObjectID(storeUUID: storeUUID, entity: entity, primaryKey: key)
    }

    // MARK: Rows

    private mutating func delete(_ key: RecordKey) throws {
        let el = try entity(key.entity)
        let table = PostgresLayout.quote(el.table.name)
        if let known = knownVersions[el.entity.rootName]?[key.primaryKey] {
            let rows = try connection.execute("DELETE FROM \(table) WHERE _pk = $1 AND _ver = $2", [String(key.primaryKey), String(known)])
            if rows.affected == 0, let now = try currentVersion(el, key.primaryKey) {
                throw StoreError.conflict(url, object: objectID(key.entity, key.primaryKey),
                                          reason: "another writer changed it since it was read (version \(known), now \(now))")
            }
        } else {
            try connection.execute("DELETE FROM \(table) WHERE _pk = $1", [String(key.primaryKey)])
        }
        for storage in el.relationships {
            guard case .join(let j) = storage else { continue }
            try connection.execute("DELETE FROM \(PostgresLayout.quote(j.name)) WHERE src = $1", [String(key.primaryKey)])
        }
        newVersions.append((el.entity.rootName, key.primaryKey, nil))
    }

    private func currentVersion(_ el: PGEntity, _ key: Int64) throws -> Int64? {
        try connection.execute("SELECT _ver FROM \(PostgresLayout.quote(el.table.name)) WHERE _pk = $1", [String(key)]).int64(0, 0)
    }

    /// Sets the constrained columns of the updated records that have uniqueness constraints to NULL, so the
    /// updates that follow can exchange values.
    private func clearConstrainedColumns(of records: [Record]) throws {
        var byTable: [String: (columns: Set<String>, keys: [Int64])] = [:]
        for r in records {
            let el = try entity(r.entity)
            guard !el.entity.uniquenessConstraints.isEmpty else { continue }
            var entry = byTable[el.table.name] ?? ([], [])
            for attr in el.entity.uniquenessConstraints.joined() {
                guard let i = el.entity.attributeIndex(attr), el.attributeColumns[i] >= 0 else { continue }
                entry.columns.insert(el.table.columns[el.attributeColumns[i]].name)
            }
            entry.keys.append(r.primaryKey)
            byTable[el.table.name] = entry
        }
        for (table, entry) in byTable.sorted(by: { $0.key < $1.key }) where !entry.columns.isEmpty {
            let sets = entry.columns.sorted().map { "\(PostgresLayout.quote($0)) = NULL" }.joined(separator: ", ")
            try connection.execute(
                "UPDATE \(PostgresLayout.quote(table)) SET \(sets) WHERE _pk = ANY($1::bigint[])",
                [PostgresRecordReader.array(entry.keys)])
        }
    }

    /// The values of `r`'s columns, in ``PGTable/columns`` order (NULL for the columns of other entities).
    private func columnValues(_ r: Record, _ el: PGEntity) throws -> [String?] {
        guard r.attributes.count == el.entity.attributes.count, r.relationships.count == el.entity.relationships.count else {
            throw StoreError.invalidArgument("record \(r.key) does not match the layout of entity \(el.entity.name)")
        }
        var values = [String?](repeating: nil, count: el.table.columns.count)
        for (k, column) in el.attributeColumns.enumerated() where column >= 0 {
            let a = el.entity.attributes[k]
            values[column] = try PostgresValueCodec.parameter(r.attributes[k], type: a.type, entity: el.entity.name, property: a.name)
        }
        for (k, storage) in el.relationships.enumerated() {
            guard case .foreignKey(let column) = storage else { continue }
            values[column] = r.relationships[k].keys.first.map(String.init)
        }
        return values
    }

    private mutating func insert(_ r: Record, _ el: PGEntity) throws {
        let values = try columnValues(r, el)
        let names = ["_pk", "_ent", "_gid"] + el.table.columns.map { PostgresLayout.quote($0.name) }
        let placeholders = (1...names.count).map { "$\($0)" }.joined(separator: ", ")
        try connection.execute(
            "INSERT INTO \(PostgresLayout.quote(el.table.name)) (\(names.joined(separator: ", "))) VALUES (\(placeholders))",
            [String(r.primaryKey), String(el.code), r.globalID.uuidString] + values)
        newVersions.append((el.entity.rootName, r.primaryKey, 1))
    }

    /// Inserts from this many records on go through `COPY`: below it, one `INSERT` each costs fewer round trips
    /// than a `COPY`'s start and end.
    static let copyThreshold = 4

    /// Inserts `records` with one `COPY … FROM STDIN` per hierarchy table.
    private mutating func copyInserted(_ records: [Record]) throws {
        var byTable: [String: (el: PGEntity, records: [Int])] = [:]
        var order: [String] = []
        for (i, r) in records.enumerated() {
            let el = try entity(r.entity)
            if byTable[el.table.name] == nil { order.append(el.table.name) }
            byTable[el.table.name, default: (el, [])].records.append(i)
        }
        for name in order {
            guard let entry = byTable[name] else { continue }
            let table = entry.el.table
            let columns = (["_pk", "_ent", "_gid"] + table.columns.map { PostgresLayout.quote($0.name) }).joined(separator: ", ")
            try connection.copyIn("COPY \(PostgresLayout.quote(table.name)) (\(columns)) FROM STDIN") { copy in
                // What each column holds for each entity of the table, worked out once per entity.
                var sources: [String: (PGEntity, [ColumnSource])] = [:]
                for i in entry.records {
                    let r = records[i]
                    if sources[r.entity] == nil {
                        let el = try entity(r.entity)
                        sources[r.entity] = (el, Self.columnSources(el))
                    }
                    guard let found = sources[r.entity] else { continue }
                    let (el, columns) = found
                    guard r.attributes.count == el.entity.attributes.count, r.relationships.count == el.entity.relationships.count else {
                        throw StoreError.invalidArgument("record \(r.key) does not match the layout of entity \(el.entity.name)")
                    }
                    copy.field(r.primaryKey)
                    copy.field(el.code)
                    copy.field(r.globalID.uuidString)
                    for column in columns {
                        switch column {
                        case .none:
                            copy.field(nil)
                        case .attribute(let k):
                            let a = el.entity.attributes[k]
                            try copy.field(r.attributes[k], type: a.type, entity: el.entity.name, property: a.name)
                        case .toOne(let k):
                            if let key = r.relationships[k].keys.first { copy.field(key) } else { copy.field(nil) }
                        }
                    }
                    try copy.endRow()
                }
            }
            for i in entry.records {
                newVersions.append((entry.el.entity.rootName, records[i].primaryKey, 1))
            }
        }
    }

    /// What one column of a hierarchy table holds for records of one entity.
    enum ColumnSource {
        case none
        case attribute(Int)
        case toOne(Int)
    }

    /// For each column of `el`'s table (in ``PGTable/columns`` order), what `el`'s records store there — as
    /// ``columnValues(_:_:)`` fills them.
    static func columnSources(_ el: PGEntity) -> [ColumnSource] {
        var out = [ColumnSource](repeating: .none, count: el.table.columns.count)
        for (k, column) in el.attributeColumns.enumerated() where column >= 0 { out[column] = .attribute(k) }
        for (k, storage) in el.relationships.enumerated() {
            if case .foreignKey(let column) = storage { out[column] = .toOne(k) }
        }
        return out
    }

    /// Writes the to-many sides of the inserted `records` with one `COPY` per join table.
    private func copyJoins(of records: [Record]) throws {
        var byJoin: [String: (join: PGJoinTable, members: [(record: Int, relationship: Int)])] = [:]
        var order: [String] = []
        for (i, r) in records.enumerated() {
            for (k, storage) in try entity(r.entity).relationships.enumerated() {
                guard case .join(let j) = storage, !r.relationships[k].keys.isEmpty else { continue }
                if byJoin[j.name] == nil { order.append(j.name) }
                byJoin[j.name, default: (j, [])].members.append((i, k))
            }
        }
        for name in order {
            guard let entry = byJoin[name] else { continue }
            try connection.copyIn("COPY \(PostgresLayout.quote(name)) (src, dst, ord) FROM STDIN") { copy in
                for m in entry.members {
                    let r = records[m.record]
                    for (n, key) in r.relationships[m.relationship].keys.enumerated() {
                        copy.field(r.primaryKey)
                        copy.field(key)
                        copy.field(Int64(n + 1))
                        try copy.endRow()
                    }
                }
            }
        }
    }

    private mutating func update(_ r: Record) throws {
        let el = try entity(r.entity)
        let values = try columnValues(r, el)
        let names = ["_ent", "_gid"] + el.table.columns.map { PostgresLayout.quote($0.name) }
        let sets = names.enumerated().map { "\($1) = $\($0 + 2)" }.joined(separator: ", ")
        var parameters: [String?] = [String(r.primaryKey), String(el.code), r.globalID.uuidString] + values
        var condition = "_pk = $1"
        let known = knownVersions[el.entity.rootName]?[r.primaryKey]
        if let known {
            parameters.append(String(known))
            condition += " AND _ver = $\(parameters.count)"
        }
        let rows = try connection.execute(
            "UPDATE \(PostgresLayout.quote(el.table.name)) SET \(sets), _ver = _ver + 1 WHERE \(condition) RETURNING _ver",
            parameters)
        guard let version = rows.count == 1 ? rows.int64(0, 0) : nil else {
            let id = objectID(r.entity, r.primaryKey)
            guard let now = try currentVersion(el, r.primaryKey) else { throw StoreError.objectNotFound(id) }
            throw StoreError.conflict(url, object: id,
                                      reason: "another writer changed it since it was read (version \(known ?? 0), now \(now))")
        }
        newVersions.append((el.entity.rootName, r.primaryKey, version))
    }

    // MARK: Join rows

    /// Writes `r`'s to-many sides: each its join table's rows of `r`, in order.
    private func writeJoins(_ r: Record, replacing: Bool) throws {
        let el = try entity(r.entity)
        for (k, storage) in el.relationships.enumerated() {
            guard case .join(let j) = storage else { continue }
            let table = PostgresLayout.quote(j.name)
            if replacing { try connection.execute("DELETE FROM \(table) WHERE src = $1", [String(r.primaryKey)]) }
            let keys = r.relationships[k].keys
            guard !keys.isEmpty else { continue }
            try connection.execute(
                "INSERT INTO \(table) (src, dst, ord) SELECT $1::bigint, d, o FROM unnest($2::bigint[]) WITH ORDINALITY AS x(d, o)",
                [String(r.primaryKey), PostgresRecordReader.array(keys)])
        }
    }

    // MARK: History

    /// Appends history; new transactions get the next tokens under a lock held to the commit, so tokens become
    /// visible in order to readers in other processes.
    private func appendHistory(_ history: [HistoryTransaction]) throws {
        guard !history.isEmpty else { return }
        let table = PostgresLayout.quote(PostgresLayout.historyTable)
        try connection.execute("LOCK TABLE \(table) IN EXCLUSIVE MODE")
        var next = (try connection.execute("SELECT COALESCE(MAX(token), 0) FROM \(table)").int64(0, 0) ?? 0) + 1
        for var t in history {
            if t.token == HistoryTransaction.assignToken {
                t.token = next
            }
            next = max(next, t.token + 1)
            try connection.execute("INSERT INTO \(table) (token, json) VALUES ($1, $2)",
                                   [String(t.token), PostgresValueCodec.hex(try t.encoded())])
        }
    }
}
