import Foundation
@_spi(BackendKit) import StoreAPI

/// How a schema is laid out in one PostgreSQL schema: derived deterministically from the schema stored in the
/// store's own metadata (never from the caller's), so every open of a store sees the same tables.
///
/// ## Names
/// Identifiers are always double-quoted and keep their case; names PostgreSQL would truncate (over 63 bytes) are
/// replaced by short numbered ones, so two long names can never end up as one. Framework tables start with
/// `_storeapi_`, hierarchy tables with `E_`, join tables with `J_`, indexes with `X_`, `U_` and `F_` (fetch
/// indexes), so a user entity never collides with the framework:
/// - `_storeapi_metadata(id = 1, json)` — the ``StoreMetadata`` JSON;
/// - `_storeapi_keys(root, next)` — each hierarchy's next primary key, a row locked by every allocation, so two
///   processes never get the same key;
/// - `_storeapi_history(token, json)` — history transactions (``HistoryTransaction/encoded()`` in a `bytea`: binary,
///   or JSON in entries written before; the column keeps its first name), appended under a table lock so tokens
///   commit in order.
///
/// ## Entity tables
/// One table per inheritance hierarchy: `_pk bigint PRIMARY KEY`, `_ent integer` (the concrete entity's 1-based
/// position in the schema), `_gid uuid` (the global ID, unique index), `_ver bigint` (the row version every update
/// increments: optimistic locking), then one column per attribute and per to-one relationship of every entity in
/// the hierarchy (a later entity's column is named `<name>.<Entity>` when a name repeats).
///
/// Types keep values exact: integers `smallint`/`integer`/`bigint`, booleans `boolean`, doubles `double
/// precision`, floats `real`, dates `double precision` seconds since 2001 (a timestamp keeps only microseconds),
/// decimals `numeric`, UUIDs `uuid`; strings and URIs are `bytea` holding UTF-8, because PostgreSQL text cannot
/// hold U+0000 and its collations do not order by Unicode scalars; binary and transformable values `bytea`.
///
/// ## Relationships
/// A to-one is a `bigint` column holding the related primary key. Every to-many is a join table
/// `J_<Entity>.<relationship>(src, dst, ord)` of the entity that declares it, holding exactly that side in its
/// order (`ord`), so ordered relationships keep their order and the two sides of a many-to-many are saved
/// independently, as the framework hands them over.
///
/// ## Constraints
/// Uniqueness constraints are unique indexes over the hierarchy table, partial to the entities they apply to and
/// leaving out NaN (as in ``PredicateEvaluator``, nil and NaN equal nothing, so they never conflict).
struct PostgresLayout: Sendable {
    /// Incremented when these rules change; stored in the metadata table's `layout` column.
    static let layoutVersion = 1

    static let metadataTable = "_storeapi_metadata"
    static let keysTable = "_storeapi_keys"
    static let historyTable = "_storeapi_history"

    let schema: Schema
    let tables: [String: PGTable]
    let entities: [String: PGEntity]
    let joinTables: [PGJoinTable]
    let indexStatements: [String]
    /// Each uniqueness constraint's index name, with its entity and attributes (to name a violation).
    let uniqueIndexes: [String: UniqueIndex]

    init(schema: Schema) {
        self.schema = schema
        var tables: [String: PGTable] = [:]
        var columnOf: [String: Int] = [:]  // "root\0entity\0property" → column index
        var indexes: [String] = []
        var joins: [PGJoinTable] = []
        var joinOf: [String: Int] = [:]
        var uniqueIndexes: [String: UniqueIndex] = [:]  // "declaring entity\0relationship" → join index
        let codes = Dictionary(uniqueKeysWithValues: schema.entities.enumerated().map { ($1.name, Int64($0 + 1)) })
        let byName = Dictionary(uniqueKeysWithValues: schema.entities.map { ($0.name, $0) })

        func declaring(_ property: String, of entity: Entity, attribute: Bool) -> String {
            for name in [entity.name] + entity.ancestorNames {
                guard let d = byName[name]?.definition else { continue }
                if attribute ? d.attributes.contains(where: { $0.name == property })
                    : d.relationships.contains(where: { $0.name == property }) { return name }
            }
            return entity.name
        }

        for (rootIndex, root) in schema.rootEntities.enumerated() {
            let tableName = Self.fit("E_" + root.name, fallback: "E\(rootIndex + 1)_")
            var columns: [PGColumn] = []
            var used = Set(["_pk", "_ent", "_gid", "_ver"])
            // Parents before children: a hierarchy's names are in schema order, which lists parents first.
            let members = schema.entities.filter { $0.rootName == root.name }
            for e in members {
                for a in e.attributes where declaring(a.name, of: e, attribute: true) == e.name {
                    var name = Self.fit(Self.escape(a.name), fallback: "c\(columns.count)_")
                    if used.contains(name) { name = Self.fit(Self.escape(a.name) + "." + e.name, fallback: "c\(columns.count)_") }
                    used.insert(name)
                    columnOf[root.name + "\0" + e.name + "\0" + a.name] = columns.count
                    columns.append(PGColumn(name: name, type: Self.columnType(a.type), attributeType: a.type))
                }
                for r in e.relationships where !r.isToMany && declaring(r.name, of: e, attribute: false) == e.name {
                    var name = Self.fit(Self.escape(r.name), fallback: "c\(columns.count)_")
                    if used.contains(name) { name = Self.fit(Self.escape(r.name) + "." + e.name, fallback: "c\(columns.count)_") }
                    used.insert(name)
                    columnOf[root.name + "\0" + e.name + "\0" + r.name] = columns.count
                    columns.append(PGColumn(name: name, type: "bigint", attributeType: nil))
                    indexes.append("CREATE INDEX \(Self.quote(Self.fit("X_\(tableName).\(name)", fallback: "X\(rootIndex + 1)_\(columns.count)"))) ON \(Self.quote(tableName)) (\(Self.quote(name)))")
                }
                for r in e.relationships where r.isToMany && declaring(r.name, of: e, attribute: false) == e.name {
                    let key = e.name + "\0" + r.name
                    let name = Self.fit("J_\(e.name).\(r.name)", fallback: "J\(joins.count + 1)_")
                    joinOf[key] = joins.count
                    joins.append(PGJoinTable(name: name, ordered: r.isOrdered))
                }
            }
            tables[root.name] = PGTable(
                root: root.name, name: tableName, columns: columns,
                entityCodes: members.compactMap { codes[$0.name] })
        }

        var entities: [String: PGEntity] = [:]
        for e in schema.entities {
            guard let table = tables[e.rootName], let code = codes[e.name] else { continue }
            let attributeColumns = e.attributes.map {
                columnOf[e.rootName + "\0" + declaring($0.name, of: e, attribute: true) + "\0" + $0.name] ?? -1
            }
            let relationships: [PGRelationship] = e.relationships.map { r in
                let owner = declaring(r.name, of: e, attribute: false)
                if r.isToMany {
                    let j = joinOf[owner + "\0" + r.name].map { joins[$0] }
                    return j.map { .join($0) } ?? .missing
                }
                return columnOf[e.rootName + "\0" + owner + "\0" + r.name].map { .foreignKey($0) } ?? .missing
            }
            entities[e.name] = PGEntity(entity: e, code: code, table: table, attributeColumns: attributeColumns,
                                        relationships: relationships)
        }

        // Uniqueness constraints: one partial unique index each.
        for e in schema.entities {
            guard let table = tables[e.rootName] else { continue }
            for (n, constraint) in e.uniquenessConstraints.enumerated() {
                var cols: [String] = []
                var conditions: [String] = []
                for attr in constraint {
                    guard let i = e.attributeIndex(attr), let el = entities[e.name], el.attributeColumns[i] >= 0 else { continue }
                    let col = Self.quote(table.columns[el.attributeColumns[i]].name)
                    cols.append(col)
                    if [.double, .float, .date].contains(e.attributes[i].type) { conditions.append("\(col) <> 'NaN'") }
                }
                guard !cols.isEmpty else { continue }
                if Set(e.hierarchyNames) != Set(table.entityCodes.compactMap { c in schema.entities[Int(c - 1)].name }) {
                    let list = e.hierarchyNames.compactMap { codes[$0] }.map(String.init).joined(separator: ", ")
                    conditions.append("_ent IN (\(list))")
                }
                let name = Self.fit("U_\(table.name).\(e.name).\(n)", fallback: "U\(codes[e.name] ?? 0)_\(n)")
                uniqueIndexes[name] = UniqueIndex(entity: e.name, attributes: constraint)
                let whereClause = conditions.isEmpty ? "" : " WHERE " + conditions.joined(separator: " AND ")
                indexes.append("CREATE UNIQUE INDEX \(Self.quote(name)) ON \(Self.quote(table.name)) (\(cols.joined(separator: ", ")))\(whereClause)")
            }
        }
        self.tables = tables
        self.entities = entities
        self.joinTables = joins
        self.indexStatements = indexes
        self.uniqueIndexes = uniqueIndexes
    }

    /// Every statement that creates the store's tables in the current schema (the caller sets `search_path`).
    var creationStatements: [String] {
        var s = [
            "CREATE TABLE \(Self.quote(Self.metadataTable)) (id integer PRIMARY KEY CHECK (id = 1), layout integer NOT NULL, json bytea NOT NULL)",
            "CREATE TABLE \(Self.quote(Self.keysTable)) (root text PRIMARY KEY, next bigint NOT NULL)",
            "CREATE TABLE \(Self.quote(Self.historyTable)) (token bigint PRIMARY KEY, json bytea NOT NULL)",
        ]
        s += tableStatements
        s += indexStatements
        s += fetchIndexStatements
        return s
    }

    /// An index per fetch index of each entity (`EntityDescription.allFetchIndexes`: Xcode's fetch indexes and
    /// `indexed` attributes) over the hierarchy table's columns of its properties, descending where the element
    /// says so — as the SQLite backend makes them. An index with an R-tree element, or over a property without a
    /// column (a to-many or derived one), is not made. Fetch indexes only speed fetches up: they are not part of
    /// ``fingerprint``, so schemas that differ in them alone share the tables.
    var fetchIndexStatements: [String] {
        var s: [String] = []
        for (n, e) in schema.entities.enumerated() {
            guard let pe = entities[e.name] else { continue }
            let table = pe.table
            for (k, index) in e.definition.allFetchIndexes.enumerated() {
                var terms: [String] = []
                for element in index.elements {
                    guard element.kind == .binary else { break }
                    var column = -1
                    if let ai = e.attributeIndex(element.property) {
                        column = pe.attributeColumns[ai]
                    } else if let ri = e.relationshipIndex(element.property), case .foreignKey(let c) = pe.relationships[ri] {
                        column = c
                    }
                    guard column >= 0, column < table.columns.count else { break }
                    terms.append(Self.quote(table.columns[column].name) + (element.isAscending ? "" : " DESC"))
                }
                guard !terms.isEmpty, terms.count == index.elements.count else { continue }
                let name = Self.fit("F_\(table.name).\(e.name).\(index.name)", fallback: "F\(n + 1)_\(k)_")
                s.append("CREATE INDEX \(Self.quote(name)) ON \(Self.quote(table.name)) (\(terms.joined(separator: ", ")))")
            }
        }
        return s
    }

    /// The entity and join tables with their always-present indexes.
    var tableStatements: [String] {
        var s: [String] = []
        for root in schema.rootEntities { s += hierarchyTableStatements(root.name) }
        for j in joinTables { s.append(Self.creationStatement(of: j)) }
        return s
    }

    /// The table of hierarchy `root` and its global-ID index.
    func hierarchyTableStatements(_ root: String) -> [String] {
        guard let i = schema.rootEntities.firstIndex(where: { $0.name == root }), let t = tables[root] else { return [] }
        let cols = ["_pk bigint PRIMARY KEY", "_ent integer NOT NULL", "_gid uuid NOT NULL", "_ver bigint NOT NULL DEFAULT 1"]
            + t.columns.map { "\(Self.quote($0.name)) \($0.type)" }
        return [
            "CREATE TABLE \(Self.quote(t.name)) (\(cols.joined(separator: ", ")))",
            "CREATE UNIQUE INDEX \(Self.quote(Self.fit("X_\(t.name)._gid", fallback: "X\(i + 1)_gid_"))) ON \(Self.quote(t.name)) (_gid)",
        ]
    }

    /// A join table.
    static func creationStatement(of j: PGJoinTable) -> String {
        "CREATE TABLE \(quote(j.name)) (src bigint NOT NULL, dst bigint NOT NULL, ord integer NOT NULL, PRIMARY KEY (src, dst))"
    }

    /// Everything that decides where data lives: two schemas with the same fingerprint can share the tables.
    var fingerprint: [String] {
        tableStatements + indexStatements + schema.entities.map { "\($0.name)=\(entities[$0.name]?.code ?? 0)" }
    }

    // MARK: Names and types

    /// A property's column name: a leading `_` is doubled, keeping `_pk`, `_ent`, `_gid` and `_ver` the framework's.
    static func escape(_ name: String) -> String { name.hasPrefix("_") ? "_" + name : name }

    /// `name` when PostgreSQL keeps it whole; otherwise `fallback` followed by as much of `name` as fits (the
    /// fallback's number keeps it distinct).
    static func fit(_ name: String, fallback: String) -> String {
        guard name.utf8.count > PostgresLocation.maxIdentifierBytes else { return name }
        var out = fallback
        for ch in name.unicodeScalars {
            let s = String(ch)
            guard out.utf8.count + s.utf8.count <= PostgresLocation.maxIdentifierBytes else { break }
            out += s
        }
        return out
    }

    /// A double-quoted identifier.
    static func quote(_ identifier: String) -> String {
        "\"" + identifier.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }

    static func columnType(_ type: AttributeType) -> String {
        switch type {
        case .integer16: "smallint"
        case .integer32: "integer"
        case .integer64: "bigint"
        case .boolean: "boolean"
        case .double, .date: "double precision"
        case .float: "real"
        case .decimal: "numeric"
        case .uuid: "uuid"
        case .string, .uri, .binary, .transformable: "bytea"
        }
    }
}

/// A uniqueness constraint's index.
struct UniqueIndex: Sendable {
    let entity: String
    let attributes: [String]
}

/// One column of a hierarchy table besides `_pk`, `_ent`, `_gid` and `_ver`.
struct PGColumn: Sendable {
    let name: String
    let type: String
    /// The attribute type, `nil` for a foreign key.
    let attributeType: AttributeType?
}

/// The table of one hierarchy.
struct PGTable: Sendable {
    let root: String
    let name: String
    let columns: [PGColumn]
    let entityCodes: [Int64]

    /// The select list every record read uses (alias `t`): `_pk, _ent, _gid, _ver`, then the columns; decimals as
    /// the text of their `numeric`, which is exact and the same in results of either form.
    var selectList: String {
        (["t._pk", "t._ent", "t._gid", "t._ver"] + columns.map {
            "t." + PostgresLayout.quote($0.name) + ($0.attributeType == .decimal ? "::text" : "")
        }).joined(separator: ", ")
    }
    /// The select list's columns before ``columns``.
    static let prefix = 4
}

/// A join table: one to-many side.
struct PGJoinTable: Sendable, Hashable {
    let name: String
    let ordered: Bool
}

/// How one relationship of an entity is stored.
enum PGRelationship: Sendable {
    case foreignKey(Int)
    case join(PGJoinTable)
    /// No storage (only for a layout that does not match its schema).
    case missing
}

/// Where one entity's values live.
struct PGEntity: Sendable {
    let entity: Entity
    let code: Int64
    let table: PGTable
    /// For each attribute, its column's position in ``PGTable/columns``.
    let attributeColumns: [Int]
    let relationships: [PGRelationship]
}
