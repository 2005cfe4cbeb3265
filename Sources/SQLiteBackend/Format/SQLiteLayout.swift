import Foundation
import SQLiteFiles
import Synchronization
@_spi(BackendKit) import StoreAPI

/// How a schema is laid out in an SQLite database: derived deterministically from the schema stored in the
/// database's own metadata (never from the caller's), so every open of a store sees the same tables.
///
/// ## Names
/// Identifiers are always double-quoted and keep their case. Three disjoint name spaces mean a user entity can
/// never collide with a framework table, whatever it is called:
/// - `_storeapi_*` — framework tables:
///   - `_storeapi_metadata(id = 1, json)` — the ``StoreMetadata`` JSON (``StoreMetadata/encoded()``).
///   - `_storeapi_keys(root, next)` — the primary-key high-water mark of each hierarchy (the next key to hand out).
///   - `_storeapi_entities(code, name, root, tableName)` — the entity code of every entity (informational).
///   - `_storeapi_history(token, json)` — history transactions (``HistoryTransaction/encoded()``: binary, or
///     JSON in entries written before; the column keeps its first name).
/// - `E_<Root>` — one table per inheritance hierarchy, named after its root entity.
/// - `J_<Entity>.<relationship>` — join and order tables, named after the relationship that owns them.
/// - Indexes are `X_<table>.<column>` (plain), `U_<table>.<Entity>.<n>` (the entity's n-th uniqueness
///   constraint) and `F_<table>.<Entity>.<name>` (the entity's fetch index `name`).
///
/// ## Entity tables
/// `_pk INTEGER PRIMARY KEY` (the record's primary key), one column per stored attribute and per to-one
/// relationship of every entity in the hierarchy (NULL for records of entities that lack it), then
/// `_ent INTEGER NOT NULL` (the concrete entity's code: its 1-based position in the schema's entity list) and
/// `_gid BLOB NOT NULL` (the 16-byte global ID, unique index). The framework's two columns come last because
/// SQLite reads a row's values by walking its header from the first column: a scan that tests an attribute
/// then walks past no column it does not need. Every statement names its columns, so stores made with these
/// two columns first (as before) read and write the same.
///
/// A column is named after its property; names beginning with `_` get one more
/// `_` (so `_pk`, `_ent` and `_gid`, which begin with a single `_`, stay the framework's), and when two
/// entities of a hierarchy declare the same name, the later one (parents first, then schema order) is named
/// `<name>.<Entity>`.
///
/// Column types keep values bit-exact (see ``SQLiteValueCodec``): integers and booleans `INTEGER`; strings and URIs
/// `TEXT` (BINARY collation, i.e. Unicode scalar order); decimals `TEXT` (exact, compacted); binary, transformable
/// and UUID (16 bytes) `BLOB`; doubles, floats and dates are declared with *no type* (no affinity) so `-0.0` and
/// integral values stay REAL, with NaN (which SQLite would turn into NULL) stored as its 8-byte (4 for floats)
/// big-endian bit pattern in a BLOB.
///
/// ## Relationships
/// - To-one: a foreign-key column holding the related primary key (both sides of a one-to-one are stored).
/// - To-many whose inverse is to-one: membership is not stored; it is derived from the inverse's foreign-key column.
///   When ordered, the positions live in an order table `J_<Entity>.<relationship>` `(src, dst, src_ord)` written
///   from the to-many side and joined on the foreign key when read (members it does not list come first, by key).
///   A table rather than a column beside the foreign key, because the to-many side may be saved before its members
///   exist (a transfer writes one entity after another) and its order must not be lost.
/// - Many-to-many: one join table per relationship pair, named after the side whose `(entity, name)` sorts first
///   (`src`: that side's record, `dst`: the other), with `src_ord` / `dst_ord` holding each side's positions.
/// - To-many without an inverse (or whose inverse does not name it back, or that is its own inverse): its own join
///   table `(src, dst, src_ord)` holding exactly that side.
/// Join tables record positions for unordered relationships too (it costs one integer), so every to-many read
/// from a join table comes back in the order it was saved; derived unordered ones come back in key order.
/// Join tables are `WITHOUT ROWID` with primary key `(src, dst)`; shared ones also index `(dst, dst_ord)`.
/// Foreign-key columns are indexed.
///
/// A record's delete removes its row and the join rows only it reads; rows the other side of a many-to-many still
/// reads stay until that side is saved (a dangling reference, as with `noAction`), and go once both records are gone.
///
/// Stores are created (and copied) in WAL mode, so opening one with the default journal mode rewrites nothing.
///
/// ## Constraints
/// Uniqueness constraints are unique indexes over the hierarchy table, restricted (partial index) to the entities
/// the constraint applies to and to rows whose floating-point values are not NaN: as in ``PredicateEvaluator``, nil
/// and NaN equal nothing, so they never conflict.
///
/// ## Fetch indexes
/// Each of an entity's fetch indexes (`EntityDescription.allFetchIndexes`, indexed attributes included) is an index
/// over the hierarchy table's columns of its properties, descending where the element says so. An index with an
/// R-tree element, or over a property without a column (a to-many or derived one), is not made. Fetch indexes only
/// speed fetches up: they are not part of ``fingerprint``, so schemas that differ in them alone share a database.
///
/// A class, immutable once made: the readers and writers that hold it are copied into closures, and copying a
/// structure of this many collections retained and released each of them for every record read.
final class SQLiteLayout: Sendable {
    /// Incremented when the layout rules change; stored as `PRAGMA user_version`.
    static let layoutVersion: Int32 = 1
    /// `PRAGMA application_id` of every store: "SAPI".
    static let applicationID: Int32 = 0x5341_5049

    static let metadataTable = "_storeapi_metadata"
    static let keysTable = "_storeapi_keys"
    static let entitiesTable = "_storeapi_entities"
    static let historyTable = "_storeapi_history"

    let schema: Schema
    /// Tables by root entity name.
    let tables: [String: TableLayout]
    /// Layouts by entity name.
    let entities: [String: EntityLayout]
    /// Layouts in code order: codes are 1…n in schema order, so the code is an index. (Not a dictionary keyed by
    /// `Int64`: see the rule at `LMDBLayout.entitiesByID` in LMDBBackend.)
    private let entitiesInCodeOrder: [EntityLayout?]

    /// The layout of the entity stored with `code` in `_ent`, or `nil` for a code no entity has.
    func entity(code: Int64) -> EntityLayout? {
        guard code >= 1, code <= Int64(entitiesInCodeOrder.count) else { return nil }
        return entitiesInCodeOrder[Int(code - 1)]
    }
    /// Every distinct to-many storage (an inherited relationship is one storage for the whole hierarchy), and for
    /// each entity its to-many relationships as (relationship index, storage index): reading records groups
    /// their to-many relationships by storage with integers, not by comparing storages' table and column names.
    let toManyStorages: [RelationshipStorage]
    let toManySlots: [String: [(relationship: Int, storage: Int)]]
    /// Every join table.
    let joinTables: [JoinTableLayout]
    /// Index definitions, in creation order.
    let indexStatements: [String]
    /// The fetch indexes' definitions, in schema order.
    let fetchIndexStatements: [String]
    /// Hierarchies with an entity that has a to-many relationship (reading their records takes several queries).
    let rootsWithToMany: Set<String>

    init(schema: Schema) {
        self.schema = schema
        var plan = LayoutPlan(schema: schema)
        plan.layOutTables()
        let entities = plan.layOutEntities()
        plan.addUniquenessIndexes()
        plan.addFetchIndexes()
        self.tables = plan.tables
        self.entities = entities
        self.entitiesInCodeOrder = schema.entities.map { entities[$0.name] }
        (self.toManyStorages, self.toManySlots) = LayoutPlan.toManySlots(of: entities)
        self.joinTables = plan.joinOrder.compactMap { plan.joinTables[$0] }
        self.indexStatements = plan.indexes
        self.fetchIndexStatements = plan.fetchIndexes
        self.rootsWithToMany = Set(entities.values.filter { $0.hasToMany }.map(\.root))
    }

    // MARK: DDL

    /// Every statement that creates the framework and entity tables, their indexes and the fixed rows, for a new
    /// store (metadata is inserted separately).
    var creationStatements: [String] {
        var s: [String] = [
            "CREATE TABLE \(Self.quote(Self.metadataTable)) (id INTEGER PRIMARY KEY CHECK (id = 1), json BLOB NOT NULL)",
            "CREATE TABLE \(Self.quote(Self.keysTable)) (root TEXT PRIMARY KEY NOT NULL, next INTEGER NOT NULL) WITHOUT ROWID",
            "CREATE TABLE \(Self.quote(Self.entitiesTable)) (code INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, root TEXT NOT NULL, tableName TEXT NOT NULL)",
            "CREATE TABLE \(Self.quote(Self.historyTable)) (token INTEGER PRIMARY KEY, json BLOB NOT NULL)",
        ]
        s += tableStatements
        s += indexStatements
        s += fetchIndexStatements
        for root in schema.rootEntities {
            s.append("INSERT INTO \(Self.quote(Self.keysTable)) (root, next) VALUES (\(Self.literal(root.name)), 1)")
        }
        for e in schema.entities {
            guard let l = entities[e.name] else { continue }
            s.append(
                "INSERT INTO \(Self.quote(Self.entitiesTable)) (code, name, root, tableName) VALUES (\(l.code), \(Self.literal(e.name)), \(Self.literal(e.rootName)), \(Self.literal(l.tableName)))")
        }
        return s
    }

    /// The `CREATE TABLE` statements of the entity and join tables (and their always-present indexes).
    var tableStatements: [String] {
        schema.rootEntities.flatMap { tables[$0.name].map(Self.creationStatements(of:)) ?? [] }
            + joinTables.flatMap(Self.creationStatements(of:))
    }

    /// `CREATE TABLE` of one hierarchy's table, and its always-present indexes.
    static func creationStatements(of t: TableLayout) -> [String] {
        // The framework's columns after the properties' (see the type's documentation).
        let cols = ["_pk INTEGER PRIMARY KEY"]
            + t.columns.map { $0.declaredType.isEmpty ? quote($0.name) : "\(quote($0.name)) \($0.declaredType)" }
            + ["_ent INTEGER NOT NULL", "_gid BLOB NOT NULL"]
        var s = ["CREATE TABLE \(quote(t.name)) (\(cols.joined(separator: ", ")))",
                 "CREATE UNIQUE INDEX \(quote("X_\(t.name)._gid")) ON \(quote(t.name)) (_gid)"]
        if t.hasSubentities { s.append(entityIndexStatement(of: t)) }
        return s
    }

    /// The index on `_ent` of a table more than one entity shares.
    static func entityIndexStatement(of t: TableLayout) -> String {
        "CREATE INDEX \(quote("X_\(t.name)._ent")) ON \(quote(t.name)) (_ent)"
    }

    /// `CREATE TABLE` of one join table, and its always-present index.
    static func creationStatements(of j: JoinTableLayout) -> [String] {
        var cols = ["src INTEGER NOT NULL", "dst INTEGER NOT NULL", "src_ord INTEGER"]
        if j.isShared { cols.append("dst_ord INTEGER") }
        cols.append("PRIMARY KEY (src, dst)")
        var s = ["CREATE TABLE \(quote(j.name)) (\(cols.joined(separator: ", "))) WITHOUT ROWID"]
        if j.isShared {
            // `dst_ord` too, so reading the dst side's rows never leaves the index (stores made before it
            // have an index on `dst` alone, which reads the same rows with a search of the table for each).
            s.append("CREATE INDEX \(quote("X_\(j.name).dst")) ON \(quote(j.name)) (dst, dst_ord)")
        }
        return s
    }

    /// A fingerprint of everything that determines where data lives: two schemas with the same fingerprint can
    /// share one database (metadata may then be replaced freely).
    var fingerprint: [String] {
        tableStatements + indexStatements
            + schema.entities.map { "\($0.name)=\(entities[$0.name]?.code ?? 0)" }
    }

    // MARK: Names and types

    /// Column name for a property: a leading `_` is doubled, keeping single-underscore names for the framework.
    static func escape(_ name: String) -> String { name.hasPrefix("_") ? "_" + name : name }

    /// A double-quoted SQL identifier.
    static func quote(_ identifier: String) -> String {
        // Statements are built per fetch, and names almost never hold a quote: Foundation's replacingOccurrences
        // is only paid for the names that do.
        guard identifier.utf8.contains(UInt8(ascii: "\"")) else { return "\"" + identifier + "\"" }
        return "\"" + identifier.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }

    /// A single-quoted SQL string literal.
    static func literal(_ text: String) -> String {
        guard text.utf8.contains(UInt8(ascii: "'")) else { return "'" + text + "'" }
        return "'" + text.replacingOccurrences(of: "'", with: "''") + "'"
    }

    /// The declared column type of an attribute type (see the type notes above).
    static func declaredType(_ type: AttributeType) -> String {
        switch type {
        case .integer16, .integer32, .integer64, .boolean: "INTEGER"
        case .double, .float, .date: ""
        case .decimal, .string, .uri: "TEXT"
        case .binary, .transformable, .uuid: "BLOB"
        }
    }
}

/// `"<entity>\0<property>"`: a sortable key naming a declared property.
/// The working state of ``SQLiteLayout/init(schema:)``, one method a step: the hierarchy tables and their columns,
/// then each entity's layout (with the join tables its to-many relationships need), then the uniqueness indexes.
private struct LayoutPlan {
    let schema: Schema
    /// Entity codes (`_ent`): 1…n in schema order.
    let codes: [String: Int64]
    let byName: [String: Entity]
    let schemaIndex: [String: Int]
    /// Tables by root entity name.
    var tables: [String: TableLayout] = [:]
    /// Column names keyed by a string (entity NUL property), not a struct of the two: see the rule at
    /// `LMDBLayout.entitiesByID` in LMDBBackend.
    var columnOf: [String: String] = [:]
    /// Index definitions, in creation order.
    var indexes: [String] = []
    /// Fetch index definitions, in schema order.
    var fetchIndexes: [String] = []
    var joinTables: [String: JoinTableLayout] = [:]
    var joinOrder: [String] = []

    init(schema: Schema) {
        self.schema = schema
        var codes: [String: Int64] = [:]
        for (i, e) in schema.entities.enumerated() { codes[e.name] = Int64(i + 1) }
        self.codes = codes
        self.byName = Dictionary(uniqueKeysWithValues: schema.entities.map { ($0.name, $0) })
        self.schemaIndex = Dictionary(uniqueKeysWithValues: schema.entities.enumerated().map { ($1.name, $0) })
    }

    /// The entity among `entity` and its ancestors that declares `property`.
    func declaringEntity(of property: String, in entity: Entity, attribute: Bool) -> String {
        for name in [entity.name] + entity.ancestorNames {
            guard let d = byName[name]?.definition else { continue }
            if attribute ? d.attributes.contains(where: { $0.name == property })
                : d.relationships.contains(where: { $0.name == property })
            {
                return name
            }
        }
        return entity.name
    }

    /// Whether `r` (declared on `entity`) and its inverse name each other.
    func mutualInverse(_ r: RelationshipDescription, declaredOn entity: String) -> (RelationshipDescription, String)? {
        guard let inv = schema.inverse(of: r), inv.inverse == r.name,
            let dest = byName[r.destination]
        else { return nil }
        let invDecl = declaringEntity(of: inv.name, in: dest, attribute: false)
        if invDecl == entity && inv.name == r.name { return nil }  // its own inverse: stored per side
        return (inv, invDecl)
    }

    /// The column of `property` as stored for `entity` (declared there or on an ancestor).
    func column(of property: String, in entity: Entity, attribute: Bool) -> String? {
        columnOf[PropertyKeyString(declaringEntity(of: property, in: entity, attribute: attribute), property)]
    }

    // MARK: Tables

    /// One table per hierarchy.
    mutating func layOutTables() {
        for root in schema.rootEntities { layOutTable(root: root) }
    }

    /// The hierarchy's columns, parents before children, then schema order; an index on each to-one foreign key.
    private mutating func layOutTable(root: Entity) {
        let tableName = "E_" + root.name
        let members = root.hierarchyNames.compactMap { byName[$0] }
            .sorted { ($0.ancestorNames.count, schemaIndex[$0.name] ?? 0) < ($1.ancestorNames.count, schemaIndex[$1.name] ?? 0) }
        var used: Set<String> = ["_pk", "_ent", "_gid"]
        var columns: [ColumnLayout] = []
        func claim(_ base: String, _ entity: String) -> String {
            var name = base
            if used.contains(name) { name = "\(base).\(entity)" }
            var n = 2
            while used.contains(name) {
                name = "\(base).\(entity)#\(n)"
                n += 1
            }
            used.insert(name)
            return name
        }
        for member in members {
            for a in member.definition.attributes where !a.isTransient {
                let col = claim(SQLiteLayout.escape(a.name), member.name)
                columnOf[PropertyKeyString(member.name, a.name)] = col
                columns.append(ColumnLayout(name: col, declaredType: SQLiteLayout.declaredType(a.type)))
            }
            for r in member.definition.relationships where !r.isTransient && !r.isToMany {
                let col = claim(SQLiteLayout.escape(r.name), member.name)
                columnOf[PropertyKeyString(member.name, r.name)] = col
                columns.append(ColumnLayout(name: col, declaredType: "INTEGER"))
                indexes.append(
                    "CREATE INDEX \(SQLiteLayout.quote("X_\(tableName).\(col)")) ON \(SQLiteLayout.quote(tableName)) (\(SQLiteLayout.quote(col)))")
            }
        }
        tables[root.name] = TableLayout(
            root: root.name, name: tableName, columns: columns,
            entityCodes: root.hierarchyNames.compactMap { codes[$0] },
            hasSubentities: root.hierarchyNames.count > 1)
    }

    /// The join table of `owner`'s relationship `r`, made on first use.
    mutating func joinTable(owner: String, relationship r: RelationshipDescription, shared: Bool) -> String {
        var name = "J_\(owner).\(r.name)"
        var n = 2
        while let existing = joinTables[name], existing.owner != PropertyKeyString(owner, r.name) {
            name = "J_\(owner).\(r.name)#\(n)"
            n += 1
        }
        if joinTables[name] == nil {
            joinTables[name] = JoinTableLayout(name: name, owner: PropertyKeyString(owner, r.name), isShared: shared)
            joinOrder.append(name)
        }
        return name
    }

    // MARK: Entities

    /// Every entity's layout, by name.
    mutating func layOutEntities() -> [String: EntityLayout] {
        var entities: [String: EntityLayout] = [:]
        for entity in schema.entities {
            let table = tables[entity.rootName]
            let attributeColumns: [Int] = entity.attributes.map { a in
                let col = column(of: a.name, in: entity, attribute: true) ?? ""
                return table?.columns.firstIndex { $0.name == col } ?? -1
            }
            let storages = entity.relationships.map { storage(of: $0, in: entity, table: table) }
            entities[entity.name] = EntityLayout(
                entity: entity, code: codes[entity.name] ?? 0, table: table, attributeColumns: attributeColumns,
                relationships: storages)
        }
        return entities
    }

    /// Where `r` of `entity` is stored: a foreign key column of its own table (to-one), the inverse's foreign key
    /// in the destination's table (one-to-many), or a join table (many-to-many, or no mutual inverse).
    private mutating func storage(of r: RelationshipDescription, in entity: Entity, table: TableLayout?) -> RelationshipStorage {
        let decl = declaringEntity(of: r.name, in: entity, attribute: false)
        if !r.isToMany {
            let col = columnOf[PropertyKeyString(decl, r.name)] ?? ""
            return .foreignKey(column: table?.columns.firstIndex { $0.name == col } ?? -1)
        }
        let destRoot = byName[r.destination]?.rootName ?? r.destination
        guard let (inv, invDecl) = mutualInverse(r, declaredOn: decl) else {
            let name = joinTable(owner: decl, relationship: r, shared: false)
            return .joinTable(JoinStorage(
                table: name, ownColumn: "src", otherColumn: "dst", ownOrderColumn: "src_ord", otherRoot: destRoot,
                isShared: false))
        }
        if !inv.isToMany {
            let fk = columnOf[PropertyKeyString(invDecl, inv.name)] ?? ""
            let orderTable = r.isOrdered ? joinTable(owner: decl, relationship: r, shared: false) : nil
            let destHierarchy = byName[r.destination]?.hierarchyNames ?? []
            let invHierarchy = byName[invDecl]?.hierarchyNames ?? []
            let filter = Set(destHierarchy) == Set(invHierarchy) ? nil : destHierarchy.compactMap { codes[$0] }
            return .inverseForeignKey(InverseForeignKey(
                table: tables[destRoot]?.name ?? "E_" + destRoot, column: fk, orderTable: orderTable,
                entityCodes: filter, ownerRoot: entity.rootName))
        }
        let mine = PropertyKeyString(decl, r.name)
        let theirs = PropertyKeyString(invDecl, inv.name)
        let iAmSource = mine < theirs
        let name = iAmSource
            ? joinTable(owner: decl, relationship: r, shared: true)
            : joinTable(owner: invDecl, relationship: inv, shared: true)
        return .joinTable(JoinStorage(
            table: name, ownColumn: iAmSource ? "src" : "dst", otherColumn: iAmSource ? "dst" : "src",
            ownOrderColumn: iAmSource ? "src_ord" : "dst_ord", otherRoot: destRoot, isShared: true))
    }

    // MARK: Constraints

    /// A unique index per declared uniqueness constraint (inherited ones are the parent's index).
    mutating func addUniquenessIndexes() {
        for entity in schema.entities {
            guard let table = tables[entity.rootName] else { continue }
            for (n, constraint) in entity.definition.uniquenessConstraints.enumerated() {
                if let index = uniquenessIndex(constraint, number: n + 1, of: entity, table: table) { indexes.append(index) }
            }
        }
    }

    /// An index per fetch index of each entity, over the columns of its properties (see "Fetch indexes" above).
    mutating func addFetchIndexes() {
        for entity in schema.entities {
            guard let table = tables[entity.rootName] else { continue }
            for index in entity.definition.allFetchIndexes {
                var terms: [String] = []
                for element in index.elements where element.kind == .binary {
                    let isAttribute = entity.attribute(element.property) != nil
                    guard isAttribute || entity.relationship(element.property)?.isToMany == false,
                          let col = column(of: element.property, in: entity, attribute: isAttribute)
                    else { break }
                    terms.append(SQLiteLayout.quote(col) + (element.isAscending ? "" : " DESC"))
                }
                guard !terms.isEmpty, terms.count == index.elements.count else { continue }
                fetchIndexes.append(
                    "CREATE INDEX \(SQLiteLayout.quote("F_\(table.name).\(entity.name).\(index.name)")) ON \(SQLiteLayout.quote(table.name)) (\(terms.joined(separator: ", ")))")
            }
        }
    }

    /// The unique index of `entity`'s `number`th constraint: partial, leaving out NaN (stored as a blob) and, for
    /// a constraint of a subentity, the hierarchy's other entities.
    private func uniquenessIndex(_ constraint: [String], number: Int, of entity: Entity, table: TableLayout) -> String? {
        var cols: [String] = []
        var conditions: [String] = []
        for attrName in constraint {
            guard let attr = entity.attribute(attrName) else { continue }
            let col = column(of: attrName, in: entity, attribute: true) ?? attrName
            cols.append(SQLiteLayout.quote(col))
            if [.double, .float, .date].contains(attr.type) {
                conditions.append("typeof(\(SQLiteLayout.quote(col))) <> 'blob'")
            }
        }
        guard !cols.isEmpty else { return nil }
        if Set(entity.hierarchyNames) != Set(byName[entity.rootName]?.hierarchyNames ?? []) {
            let list = entity.hierarchyNames.compactMap { codes[$0] }.map(String.init).joined(separator: ", ")
            conditions.append("_ent IN (\(list))")
        }
        let whereClause = conditions.isEmpty ? "" : " WHERE " + conditions.joined(separator: " AND ")
        return "CREATE UNIQUE INDEX \(SQLiteLayout.quote("U_\(table.name).\(entity.name).\(number)")) ON \(SQLiteLayout.quote(table.name)) (\(cols.joined(separator: ", ")))\(whereClause)"
    }

    // MARK: To-many storages

    /// Every distinct to-many storage, and for each entity its to-many relationships as (relationship index,
    /// storage index).
    static func toManySlots(of entities: [String: EntityLayout])
        -> ([RelationshipStorage], [String: [(relationship: Int, storage: Int)]])
    {
        var toManyStorages: [RelationshipStorage] = []
        var toManySlots: [String: [(relationship: Int, storage: Int)]] = [:]
        for (name, el) in entities {
            var slots: [(relationship: Int, storage: Int)] = []
            for (k, storage) in el.relationships.enumerated() {
                if case .foreignKey = storage { continue }
                if let existing = toManyStorages.firstIndex(of: storage) {
                    slots.append((k, existing))
                } else {
                    slots.append((k, toManyStorages.count))
                    toManyStorages.append(storage)
                }
            }
            toManySlots[name] = slots
        }
        return (toManyStorages, toManySlots)
    }
}

private func PropertyKeyString(_ entity: String, _ property: String) -> String { entity + "\u{0}" + property }

/// One column of an entity table (besides `_pk`, `_ent`, `_gid`).
struct ColumnLayout: Sendable, Hashable {
    let name: String
    let declaredType: String
}

/// The table of one hierarchy.
struct TableLayout: Sendable {
    /// The root entity's name.
    let root: String
    /// The table's name (`E_<Root>`).
    let name: String
    /// Attribute, foreign-key and order columns; a row's values are read at result index `3 + position`.
    let columns: [ColumnLayout]
    /// The codes of every entity stored here.
    let entityCodes: [Int64]
    /// Whether more than one entity shares the table (then `_ent` is indexed).
    let hasSubentities: Bool
    /// `t._pk, t._ent, t._gid, t."col", …` — the select list every record read uses (alias `t`).
    let selectList: String
    /// The select list's columns before ``columns``: `_pk`, `_ent`, `_gid`.
    static let selectListPrefix = 3
    /// The table's records by key, in key order.
    let recordsByKey: KeyedQuery

    init(root: String, name: String, columns: [ColumnLayout], entityCodes: [Int64], hasSubentities: Bool) {
        self.root = root
        self.name = name
        self.columns = columns
        self.entityCodes = entityCodes
        self.hasSubentities = hasSubentities
        selectList = (["_pk", "_ent", "_gid"].map { "t.\($0)" } + columns.map { "t.\(SQLiteLayout.quote($0.name))" })
            .joined(separator: ", ")
        recordsByKey = KeyedQuery("SELECT \(selectList) FROM \(SQLiteLayout.quote(name)) AS t WHERE ", keyColumn: "t._pk",
                                  tail: " ORDER BY t._pk")
    }
}

/// A join table.
struct JoinTableLayout: Sendable {
    let name: String
    /// The declared relationship the table is named after.
    let owner: String
    /// Whether both sides of a many-to-many read it (then `dst` is indexed, and `dst_ord` holds the other side's
    /// positions).
    let isShared: Bool
}

/// Where one entity's values live.
final class EntityLayout: Sendable {
    /// The resolved entity.
    let entity: Entity
    let name: String
    let code: Int64
    let root: String
    let tableName: String
    /// For each of ``Entity/attributes``: its column's position in ``TableLayout/columns``.
    let attributeColumns: [Int]
    /// For each of ``Entity/relationships``: how it is stored.
    let relationships: [RelationshipStorage]
    /// `INSERT` of a record's row: `_pk, _ent, _gid`, the attributes in order, then the foreign keys in order.
    let insertSQL: String
    /// The parameters of one row of ``insertSQL``.
    let insertParameterCount: Int32
    /// How many rows ``insertBatchSQL`` inserts (``MultiRowInsert/rows(parametersPerRow:)``).
    let insertBatchRows: Int
    /// ``insertSQL`` up to its `VALUES`, and its row of placeholders.
    private let insertHead: String
    private let insertRow: String
    /// ``insertBatchSQL`` once made: most layouts are made to read, and the text is long.
    private let madeInsertBatchSQL = Mutex<String?>(nil)

    /// `INSERT` of ``insertBatchRows`` rows in one statement, each row's parameters as in ``insertSQL``.
    ///
    /// One statement per row seeks each row's place in the table again from its root and runs the statement's
    /// set-up again; within one statement the table cursor stays where the last row went.
    var insertBatchSQL: String {
        madeInsertBatchSQL.withLock { made in
            if let made { return made }
            let sql = MultiRowInsert.sql(head: insertHead, row: insertRow, rows: insertBatchRows)
            made = sql
            return sql
        }
    }
    /// `UPDATE` of a record's row: `_ent, _gid`, attributes, foreign keys, then `_pk` in the `WHERE` clause.
    let updateSQL: String
    /// `SELECT 1` of a record's row by key.
    let existsSQL: String
    /// Whether every property has a column (a layout built from a schema always does).
    let isComplete: Bool
    /// What decoding a row reads for each attribute, in plain values: the row loop then copies no attribute
    /// descriptions (each copy retains their names, default values and user info).
    let attributeReads: [ColumnRead]
    /// For each relationship, what decoding a row reads for it.
    let relationshipReads: [RelationshipRead]
    /// Whether a to-many relationship must be read from other rows or tables.
    let hasToMany: Bool

    init(entity: Entity, code: Int64, table: TableLayout?, attributeColumns: [Int], relationships: [RelationshipStorage]) {
        self.entity = entity
        self.name = entity.name
        self.code = code
        self.root = entity.rootName
        self.tableName = table?.name ?? "E_" + entity.rootName
        self.attributeColumns = attributeColumns
        self.relationships = relationships
        hasToMany = relationships.contains { if case .foreignKey = $0 { false } else { true } }
        attributeReads = zip(attributeColumns, entity.attributes).map {
            ColumnRead(column: $0 >= 0 ? Int32(TableLayout.selectListPrefix + $0) : -1, type: $1.type)
        }
        relationshipReads = relationships.map {
            guard case .foreignKey(let col) = $0 else { return .toMany }
            return col >= 0 ? .foreignKey(column: Int32(TableLayout.selectListPrefix + col)) : .missingColumn
        }
        var cols = attributeColumns
        for storage in relationships {
            if case .foreignKey(let col) = storage { cols.append(col) }
        }
        let columnCount = table?.columns.count ?? 0
        isComplete = table != nil && cols.allSatisfy { $0 >= 0 && $0 < columnCount }
        let names = isComplete ? cols.map { SQLiteLayout.quote(table?.columns[$0].name ?? "") } : []
        let quoted = SQLiteLayout.quote(tableName)
        let all = ["_pk", "_ent", "_gid"] + names
        insertHead = "INSERT INTO \(quoted) (\(all.joined(separator: ", "))) VALUES "
        insertRow = "(\(KeyedQuery.placeholders(all.count)))"
        insertSQL = insertHead + insertRow
        insertParameterCount = Int32(all.count)
        insertBatchRows = MultiRowInsert.rows(parametersPerRow: all.count)
        existsSQL = "SELECT 1 FROM \(quoted) WHERE _pk = ?"
        updateSQL = "UPDATE \(quoted) SET \((["_ent", "_gid"] + names).map { "\($0) = ?" }.joined(separator: ", ")) WHERE _pk = ?"
    }
}

/// An attribute's position in a table's select list (-1 when the table has no column for it) and its type.
struct ColumnRead: Sendable {
    let column: Int32
    let type: AttributeType
}

/// What decoding a row reads for one relationship.
enum RelationshipRead: Sendable {
    /// A to-one's foreign key at this position of the select list.
    case foreignKey(column: Int32)
    /// A to-many, read from other rows afterwards.
    case toMany
    /// A to-one the table has no column for.
    case missingColumn
}

/// How one relationship of an entity is stored.
enum RelationshipStorage: Sendable, Hashable {
    /// A to-one: the foreign-key column at this position of ``TableLayout/columns``.
    case foreignKey(column: Int)
    /// A to-many derived from its to-one inverse's foreign key.
    case inverseForeignKey(InverseForeignKey)
    /// A to-many kept in a join table.
    case joinTable(JoinStorage)
}

/// A to-many relationship read from the foreign-key column of its to-one inverse.
struct InverseForeignKey: Sendable, Hashable {
    /// The destination hierarchy's table.
    let table: String
    /// The inverse's foreign-key column there.
    let column: String
    /// The order table `(src, dst, src_ord)`, for ordered relationships.
    let orderTable: String?
    /// The destination entity codes to keep, when the inverse is declared on a wider entity.
    let entityCodes: [Int64]?
    /// The order table seen from the owner, for ordered relationships.
    let orderJoin: JoinStorage?
    /// `(owner, related key)` rows of a set of owners, in owner order (positions are read from ``orderJoin``).
    let memberRows: KeyedQuery

    init(table: String, column: String, orderTable: String?, entityCodes: [Int64]?, ownerRoot: String) {
        self.table = table
        self.column = column
        self.orderTable = orderTable
        self.entityCodes = entityCodes
        orderJoin = orderTable.map {
            JoinStorage(table: $0, ownColumn: "src", otherColumn: "dst", ownOrderColumn: "src_ord", otherRoot: ownerRoot, isShared: false)
        }
        let owner = "d.\(SQLiteLayout.quote(column))"
        let codes = entityCodes.map { " AND d._ent IN (\($0.map(String.init).joined(separator: ", ")))" } ?? ""
        memberRows = KeyedQuery("SELECT \(owner), d._pk FROM \(SQLiteLayout.quote(table)) AS d WHERE ",
                                keyColumn: owner, tail: codes + " ORDER BY \(owner)")
    }

    // Equal when stored alike; the statement texts follow from the rest.
    static func == (a: InverseForeignKey, b: InverseForeignKey) -> Bool {
        a.table == b.table && a.column == b.column && a.orderTable == b.orderTable && a.entityCodes == b.entityCodes
            && a.orderJoin == b.orderJoin
    }

    func hash(into hasher: inout Hasher) {
        hasher.combine(table)
        hasher.combine(column)
    }
}

/// A to-many relationship kept in a join table, seen from one side.
struct JoinStorage: Sendable, Hashable {
    let table: String
    /// The column holding this side's record (`src` or `dst`).
    let ownColumn: String
    /// The column holding the related record.
    let otherColumn: String
    /// This side's position column (`src_ord` or `dst_ord`).
    let ownOrderColumn: String?
    /// The related hierarchy's root entity.
    let otherRoot: String
    /// Whether the other side of a many-to-many reads the same rows.
    let isShared: Bool
    /// The statements that keep one record's rows in step, made once: saves run them for every record.
    let sql: SQL
    /// `(owner, related key[, position])` rows of a set of owners, in owner order.
    let relatedRows: KeyedQuery

    struct SQL: Sendable, Hashable {
        /// This side's rows of one record: the other column, then the position when ordered.
        let selectRows: String
        let deleteRow: String
        let insertRow: String
        /// Sets this side's position (ordered relationships only).
        let moveRow: String?
        /// Adds a row, or (ordered) sets this side's position in the row the other side added: a bulk load's
        /// way, which needs no read of the rows first.
        let upsertRow: String
    }

    init(table: String, ownColumn: String, otherColumn: String, ownOrderColumn: String?, otherRoot: String, isShared: Bool) {
        self.table = table
        self.ownColumn = ownColumn
        self.otherColumn = otherColumn
        self.ownOrderColumn = ownOrderColumn
        self.otherRoot = otherRoot
        self.isShared = isShared
        let j = SQLiteLayout.quote(table)
        sql = SQL(
            selectRows: "SELECT \(otherColumn)\(ownOrderColumn.map { ", \($0)" } ?? "") FROM \(j) WHERE \(ownColumn) = ?",
            deleteRow: "DELETE FROM \(j) WHERE \(ownColumn) = ? AND \(otherColumn) = ?",
            insertRow: ownOrderColumn.map { "INSERT INTO \(j) (\(ownColumn), \(otherColumn), \($0)) VALUES (?, ?, ?)" }
                ?? "INSERT INTO \(j) (\(ownColumn), \(otherColumn)) VALUES (?, ?)",
            moveRow: ownOrderColumn.map { "UPDATE \(j) SET \($0) = ? WHERE \(ownColumn) = ? AND \(otherColumn) = ?" },
            upsertRow: ownOrderColumn.map {
                "INSERT INTO \(j) (\(ownColumn), \(otherColumn), \($0)) VALUES (?, ?, ?) ON CONFLICT (src, dst) DO UPDATE SET \($0) = excluded.\($0)"
            } ?? "INSERT OR IGNORE INTO \(j) (\(ownColumn), \(otherColumn)) VALUES (?, ?)")
        relatedRows = KeyedQuery("SELECT \(ownColumn), \(otherColumn)\(ownOrderColumn.map { ", \($0)" } ?? "") FROM \(j) WHERE ",
                                 keyColumn: ownColumn, tail: " ORDER BY \(ownColumn)")
    }

    // Equal when stored alike; the statement texts follow from the rest.
    static func == (a: JoinStorage, b: JoinStorage) -> Bool {
        a.table == b.table && a.ownColumn == b.ownColumn && a.otherColumn == b.otherColumn
            && a.ownOrderColumn == b.ownOrderColumn && a.otherRoot == b.otherRoot && a.isShared == b.isShared
    }

    func hash(into hasher: inout Hasher) {
        hasher.combine(table)
        hasher.combine(ownColumn)
    }
}
