import Foundation
@_spi(BackendKit) import StoreAPI

/// Core Data's SQLite layout of a model: the tables, columns, indexes and entity numbers Core Data creates for it,
/// and the `CREATE` statements as Core Data writes them.
///
/// Computed from a ``CoreDataModel`` (a store's own `Z_MODELCACHE`, or a model built for a new store). For every
/// corpus store that carries its model, the layout computed from that model has the store's tables, columns
/// (names, types and order), index names and statement text, leaving aside what Core Data adds for store options
/// rather than for the model (persistent-history tables) and derived-attribute triggers.
///
/// What the corpus cannot settle (column order between FLOAT and TIMESTAMP, which property of an inheritance tree
/// gets a collision counter, which side names a many-to-many join table, self-referential join columns, to-many
/// relationships without an inverse, descending and R-tree fetch indexes) is decided in one internal place and
/// documented there; ``notes`` lists what of a model was not laid out.
@_spi(BackendKit) public struct CoreDataLayout: Sendable, Hashable {
    /// An entity's place in the store.
    public struct EntityLayout: Sendable, Hashable {
        public var name: String
        /// `Z_ENT`.
        public var number: Int
        /// The parent's `Z_ENT`, 0 for a root (`Z_PRIMARYKEY.Z_SUPER`).
        public var superNumber: Int
        /// The table holding the entity's rows: its root entity's.
        public var table: String
    }

    /// What a column holds.
    public enum ColumnRole: Sendable, Hashable {
        /// `Z_PK`.
        case primaryKey
        /// `Z_ENT`.
        case entityNumber
        /// `Z_OPT`.
        case optimisticLock
        /// An attribute's value.
        case attribute(entity: String, name: String)
        /// A to-one relationship's destination `Z_PK`.
        case foreignKey(entity: String, relationship: String)
        /// A to-one relationship's destination `Z_ENT` (`Z<ent>_<REL>`), when the destination has sub-entities.
        case foreignEntity(entity: String, relationship: String)
        /// `Z_FOK_<REL>`: the position of this row in the ordered to-many inverse of the to-one `relationship`.
        case orderKey(entity: String, relationship: String)
        /// The hidden foreign key of a to-many `relationship` of `entity` without an inverse, in the destination's
        /// table.
        case inverselessForeignKey(entity: String, relationship: String)
        /// The position column of such a relationship when it is ordered.
        case inverselessOrderKey(entity: String, relationship: String)
        /// A join-table column holding the keys of `relationship`'s destinations (the relationship is `entity`'s).
        case joinKey(entity: String, relationship: String)
        /// A join-table column holding the position of each destination in the ordered `relationship`.
        case joinOrderKey(entity: String, relationship: String)
        /// A column of a bookkeeping table.
        case bookkeeping
    }

    /// A column of a table.
    public struct Column: Sendable, Hashable {
        public var name: String
        /// The declared SQL type: `INTEGER`, `TIMESTAMP`, `FLOAT`, `DECIMAL`, `VARCHAR`, `BLOB`.
        public var type: String
        public var role: ColumnRole
    }

    /// What a table is for.
    public enum TableKind: Sendable, Hashable {
        /// The rows of a root entity and its sub-entities.
        case entity(root: String)
        /// A many-to-many join table; `relationship` (declared on `entity`) names it.
        case join(entity: String, relationship: String)
        /// `Z_PRIMARYKEY`, `Z_METADATA` or `Z_MODELCACHE`.
        case bookkeeping
    }

    /// A table with its columns in Core Data's order.
    public struct Table: Sendable, Hashable {
        public var name: String
        public var kind: TableKind
        public var columns: [Column]
        /// The statement Core Data creates the table with.
        public var createStatement: String

        /// The column named `name`.
        public func column(named name: String) -> Column? { columns.first { $0.name == name } }
    }

    /// What an index is for.
    public enum IndexKind: Sendable, Hashable {
        /// `<TABLE>_<COLUMN>_INDEX` on a foreign key.
        case foreignKey
        /// `<TABLE>_Z_ENT_INDEX` on a table holding an inheritance tree.
        case entityNumber
        /// `<JOIN TABLE>_<SECOND COLUMN>_INDEX`.
        case join
        /// `Z_<Entity>_<name>`: a fetch index (an indexed attribute is one too).
        case fetchIndex(entity: String, name: String)
        /// `Z_<Entity>_UNIQUE_<p1>_<p2>`: a uniqueness constraint.
        case uniqueness(entity: String, properties: [String])
    }

    /// An index.
    public struct Index: Sendable, Hashable {
        public var name: String
        public var table: String
        public var kind: IndexKind
        public var isUnique: Bool
        /// The indexed terms as written in the statement (`ZNAME COLLATE BINARY ASC`, or a bare column name).
        public var terms: [String]
        /// The statement Core Data creates the index with.
        public var createStatement: String
    }

    /// A trigger Core Data creates to keep a derived attribute up to date.
    public struct Trigger: Sendable, Hashable {
        public var name: String
        /// The table whose changes fire it.
        public var table: String
        /// The statement Core Data creates the trigger with.
        public var createStatement: String
    }

    /// Every entity, by `Z_ENT`.
    public let entities: [EntityLayout]
    /// The model's tables: each root entity's in `Z_ENT` order, then the join tables.
    public let tables: [Table]
    /// The model's indexes, table by table.
    public let indexes: [Index]
    /// The triggers that maintain derived attributes. They call functions only Core Data registers
    /// (`NSCoreDataDATriggerUpdatedAffectedObjectValue`, `NSCoreDataDATriggerInsertUpdatedAffectedObjectValue`):
    /// a connection that writes to their tables has to register functions of those names.
    public let triggers: [Trigger]
    /// What of the model was not laid out, and why (an R-tree or partial fetch index, an index naming an unknown
    /// property). Empty for every corpus model.
    public let notes: [String]

    /// Core Data's bookkeeping tables, with the statements it creates them with.
    public static let bookkeepingTables: [Table] = [
        Table(
            name: "Z_PRIMARYKEY", kind: .bookkeeping,
            columns: [
                Column(name: "Z_ENT", type: "INTEGER", role: .bookkeeping),
                Column(name: "Z_NAME", type: "VARCHAR", role: .bookkeeping),
                Column(name: "Z_SUPER", type: "INTEGER", role: .bookkeeping),
                Column(name: "Z_MAX", type: "INTEGER", role: .bookkeeping),
            ],
            createStatement:
                "CREATE TABLE Z_PRIMARYKEY (Z_ENT INTEGER PRIMARY KEY, Z_NAME VARCHAR, Z_SUPER INTEGER, Z_MAX INTEGER)"),
        Table(
            name: "Z_METADATA", kind: .bookkeeping,
            columns: [
                Column(name: "Z_VERSION", type: "INTEGER", role: .bookkeeping),
                Column(name: "Z_UUID", type: "VARCHAR(255)", role: .bookkeeping),
                Column(name: "Z_PLIST", type: "BLOB", role: .bookkeeping),
            ],
            createStatement: "CREATE TABLE Z_METADATA (Z_VERSION INTEGER PRIMARY KEY, Z_UUID VARCHAR(255), Z_PLIST BLOB)"),
        Table(
            name: "Z_MODELCACHE", kind: .bookkeeping,
            columns: [Column(name: "Z_CONTENT", type: "BLOB", role: .bookkeeping)],
            createStatement: "CREATE TABLE Z_MODELCACHE (Z_CONTENT BLOB)"),
    ]

    /// The rows of `Z_PRIMARYKEY` for a new store: one per entity, abstract ones included, `Z_MAX` 0.
    public var primaryKeyRows: [CoreDataPrimaryKeyRow] {
        entities.map {
            CoreDataPrimaryKeyRow(
                entityNumber: Int64($0.number), name: $0.name, superNumber: Int64($0.superNumber), maxPrimaryKey: 0)
        }
    }

    /// Every `CREATE` statement, in the order Core Data runs them for a new store: the model's tables, their
    /// indexes, the derived-attribute triggers, then (unless left out) the bookkeeping tables, then (when asked
    /// for) the persistent-history tables.
    public func statements(includingBookkeeping: Bool = true, persistentHistory: Bool = false) -> [String] {
        tables.map(\.createStatement) + indexes.map(\.createStatement) + triggers.map(\.createStatement)
            + (includingBookkeeping ? Self.bookkeepingTables.map(\.createStatement) : [])
            + (persistentHistory ? Self.historyStatements : [])
    }

    /// The layout of the entity named `name`.
    public func entity(named name: String) -> EntityLayout? { entities.first { $0.name == name } }

    /// The table holding the rows of the entity named `entity`.
    public func table(forEntity entity: String) -> Table? {
        guard let e = self.entity(named: entity) else { return nil }
        return tables.first { $0.name == e.table }
    }

    /// The column holding `property` of `entity` (an attribute's value or a to-one's foreign key), looking through
    /// the entity's ancestors for inherited properties.
    public func column(entity: String, property: String) -> Column? {
        guard let table = table(forEntity: entity) else { return nil }
        var cursor = self.entity(named: entity)
        var depth = 0
        while let e = cursor, depth < 256 {
            let roles: [ColumnRole] = [
                .attribute(entity: e.name, name: property), .foreignKey(entity: e.name, relationship: property),
            ]
            if let c = table.columns.first(where: { roles.contains($0.role) }) { return c }
            cursor = e.superNumber == 0 ? nil : entities.first { $0.number == e.superNumber }
            depth += 1
        }
        return nil
    }

    /// Lays out `model` as Core Data does.
    ///
    /// - Throws: ``CoreDataFormatError`` when the model is inconsistent (a relationship to an entity it does not
    ///   have, an inheritance cycle).
    public init(model: CoreDataModel) throws(CoreDataFormatError) {
        var builder = Builder(model: model)
        try builder.build()
        entities = builder.entityLayouts
        tables = builder.tables
        indexes = builder.indexes
        triggers = builder.triggers
        notes = builder.notes
    }
}

extension CoreDataLayout {
    /// The SQL type Core Data declares for an attribute type code, or `nil` for codes that are never stored.
    public static func sqlType(typeCode: Int) -> String? {
        switch typeCode {
        case 100, 200, 300, 800: return "INTEGER"
        case 400: return "DECIMAL"
        case 500, 600: return "FLOAT"
        case 700, 1200: return "VARCHAR"
        case 900: return "TIMESTAMP"
        case 1000, 1100, 1800: return "BLOB"
        default: return nil
        }
    }

    /// Builds the layout; a separate type so that the layout's stored properties stay immutable.
    struct Builder {
        let model: CoreDataModel
        let numbers: [String: Int]
        var entityLayouts: [EntityLayout] = []
        var tables: [Table] = []
        var indexes: [Index] = []
        var triggers: [Trigger] = []
        var notes: [String] = []
        /// Root entity names in `Z_ENT` order, and each root's tree (itself first) in `Z_ENT` order.
        var roots: [String] = []
        var members: [String: [String]] = [:]
        /// Each root table's columns before they are sorted and named.
        var pending: [String: [Pending]] = [:]
        var joins: [Join] = []

        init(model: CoreDataModel) {
            self.model = model
            numbers = model.entityNumbers()
        }

        /// A column before naming: what sorts it into place (group, entity, kind, subrank, name, tie) and its name.
        struct Pending {
            var group = 0
            var entityOrder: Int
            /// 0 attribute, 1 foreign key (and its entity column), 2 order key.
            var kind: Int
            var subrank = 0
            var sortName: String
            var tie = 0
            var base: String
            var type = "INTEGER"
            var role: ColumnRole
            /// Taken literally (no collision counter): `Z<ent>_` and `Z_FOK_` names cannot clash with `Z` + a name.
            var fixed: Bool
            /// The declaring entity's depth in its tree (1 for the root) and name: the order collision counters
            /// are handed out in (``CoreDataLayoutGuesses/namingPrecedes(_:_:)``).
            var depth = 1
            var entity = ""

            func precedes(_ b: Pending) -> Bool {
                if group != b.group { return group < b.group }
                if entityOrder != b.entityOrder { return entityOrder < b.entityOrder }
                if kind != b.kind { return kind < b.kind }
                if subrank != b.subrank { return subrank < b.subrank }
                if sortName != b.sortName { return Builder.codePointLess(sortName, b.sortName) }
                return tie < b.tie
            }
        }

        /// A join table with the columns its index covers.
        struct Join {
            var table: Table
            var firstColumn: String
            var secondColumn: String
        }

        func number(_ entity: String) throws(CoreDataFormatError) -> Int {
            guard let n = numbers[entity] else { throw CoreDataFormatError("model", "no entity named \(entity)") }
            return n
        }

        func entity(_ name: String) throws(CoreDataFormatError) -> CoreDataModel.Entity {
            guard let e = model.entity(named: name) else { throw CoreDataFormatError("model", "no entity named \(name)") }
            return e
        }

        /// The root of `name`'s inheritance tree.
        func root(of name: String) throws(CoreDataFormatError) -> String {
            var cursor = try entity(name)
            var depth = 0
            while let p = cursor.parent, let parent = model.entity(named: p) {
                depth += 1
                guard depth < 256 else { throw CoreDataFormatError("entity \(name)", "an inheritance cycle") }
                cursor = parent
            }
            return cursor.name
        }

        /// The relationship `name` of `entity` or one of its ancestors, with the entity that declares it.
        func relationship(_ name: String, of entity: String) -> (CoreDataModel.Relationship, owner: String)? {
            guard let e = model.entity(named: entity) else { return nil }
            for owner in model.lineage(of: e) {
                if let r = owner.relationships.first(where: { $0.name == name }) { return (r, owner.name) }
            }
            return nil
        }

        func hasSubentities(_ name: String) -> Bool { model.entities.contains { $0.parent == name } }

        static func codePointLess(_ a: String, _ b: String) -> Bool {
            a.unicodeScalars.lexicographicallyPrecedes(b.unicodeScalars)
        }

        mutating func build() throws(CoreDataFormatError) {
            try numberEntities()
            var joinPairs: Set<[String]> = []
            for r in roots {
                for (order, name) in (members[r] ?? []).enumerated() {
                    let e = try entity(name)
                    addAttributeColumns(e, root: r, order: order)
                    for rel in e.relationships where !rel.isTransient {
                        try addRelationship(rel, of: e, root: r, order: order, joinPairs: &joinPairs)
                    }
                }
            }
            for r in roots { makeEntityTable(root: r) }
            tables += joins.map(\.table)
            let layout = CoreDataLayout(entities: entityLayouts, tables: tables, indexes: [], notes: [])
            for (position, r) in roots.enumerated() { keyIndexes(tables[position], treeSize: members[r]?.count ?? 1) }
            for j in joins {
                addIndex(
                    name: "\(j.table.name)_\(j.secondColumn)_INDEX", table: j.table.name, kind: .join, unique: false,
                    terms: [j.secondColumn, j.firstColumn])
            }
            for (position, r) in roots.enumerated() {
                for name in members[r] ?? [] {
                    let e = try entity(name)
                    modelIndexes(e, table: tables[position].name, layout: layout)
                }
            }
            for r in roots {
                for name in members[r] ?? [] {
                    let e = try entity(name)
                    for a in e.attributes where a.isDerived && !a.isTransient { derivedTriggers(e, a, layout: layout) }
                }
            }
        }

        /// Entities by `Z_ENT`, grouped into their inheritance trees.
        mutating func numberEntities() throws(CoreDataFormatError) {
            let ordered = model.entities.sorted { (numbers[$0.name] ?? Int.max) < (numbers[$1.name] ?? Int.max) }
            for e in ordered {
                let r = try root(of: e.name)
                if members[r] == nil { roots.append(r) }
                members[r, default: []].append(e.name)
                entityLayouts.append(EntityLayout(
                    name: e.name, number: try number(e.name), superNumber: e.parent.flatMap { numbers[$0] } ?? 0,
                    table: "Z" + r.uppercased()))
            }
        }

        mutating func addAttributeColumns(_ e: CoreDataModel.Entity, root r: String, order: Int) {
            for a in e.attributes where !a.isTransient {
                guard let type = CoreDataLayout.sqlType(typeCode: a.typeCode) else { continue }
                let rank = CoreDataLayoutGuesses.groupRank(typeCode: a.typeCode)
                pending[r, default: []].append(Pending(
                    group: rank.group, entityOrder: order, kind: 0, subrank: rank.subrank, sortName: a.name,
                    base: "Z" + a.name.uppercased(), type: type, role: .attribute(entity: e.name, name: a.name),
                    fixed: false, depth: model.lineage(of: e).count, entity: e.name))
            }
        }

        /// A relationship's columns: a to-one's foreign key (with the entity column and order key it needs), a
        /// many-to-many's join table, or a to-many without an inverse's hidden key in the destination's table.
        mutating func addRelationship(
            _ rel: CoreDataModel.Relationship, of e: CoreDataModel.Entity, root r: String, order: Int,
            joinPairs: inout Set<[String]>
        ) throws(CoreDataFormatError) {
            let destinationNumber = try number(rel.destination)
            let found = rel.inverse.flatMap { relationship($0, of: rel.destination) }
            let upper = rel.name.uppercased()
            if !rel.isToMany {
                pending[r, default: []].append(Pending(
                    entityOrder: order, kind: 1, sortName: rel.name, base: "Z" + upper,
                    role: .foreignKey(entity: e.name, relationship: rel.name), fixed: false,
                    depth: model.lineage(of: e).count, entity: e.name))
                if hasSubentities(rel.destination) {
                    pending[r, default: []].append(Pending(
                        entityOrder: order, kind: 1, sortName: rel.name, tie: 1, base: "Z\(destinationNumber)_" + upper,
                        role: .foreignEntity(entity: e.name, relationship: rel.name), fixed: true))
                }
                if let (inverse, _) = found, inverse.isToMany, inverse.isOrdered {
                    pending[r, default: []].append(Pending(
                        entityOrder: order, kind: 2, sortName: rel.name, base: "Z_FOK_" + upper,
                        role: .orderKey(entity: e.name, relationship: rel.name), fixed: true))
                }
            } else if let (inverse, inverseOwner) = found, inverse.isToMany {
                let pair = [e.name, rel.name, inverseOwner, inverse.name]
                guard !joinPairs.contains(pair), !joinPairs.contains([inverseOwner, inverse.name, e.name, rel.name]) else {
                    return
                }
                joinPairs.insert(pair)
                let mine = (entityNumber: try number(e.name), relationship: rel.name)
                let theirs = (entityNumber: try number(inverseOwner), relationship: inverse.name)
                if CoreDataLayoutGuesses.namesJoinTable(mine, over: theirs) {
                    joins.append(try joinTable(owner: e.name, rel, inverse: inverse, inverseOwner: inverseOwner))
                } else {
                    joins.append(try joinTable(owner: inverseOwner, inverse, inverse: rel, inverseOwner: e.name))
                }
            } else if found == nil {
                let destinationRoot = try root(of: rel.destination)
                let destinationOrder = (members[destinationRoot] ?? []).firstIndex(of: rel.destination) ?? 0
                let source = try number(e.name)
                pending[destinationRoot, default: []].append(Pending(
                    entityOrder: destinationOrder, kind: 1, sortName: "\(source)" + rel.name,
                    base: CoreDataLayoutGuesses.inverselessForeignKey(sourceNumber: source, relationship: rel.name),
                    role: .inverselessForeignKey(entity: e.name, relationship: rel.name), fixed: true))
                if rel.isOrdered {
                    pending[destinationRoot, default: []].append(Pending(
                        entityOrder: destinationOrder, kind: 2, sortName: "\(source)" + rel.name,
                        base: CoreDataLayoutGuesses.inverselessOrderKey(sourceNumber: source, relationship: rel.name),
                        role: .inverselessOrderKey(entity: e.name, relationship: rel.name), fixed: true))
                }
            }
            // A to-many whose inverse is a to-one has no column of its own: the destination's foreign key is it.
        }

        /// The root's table: `Z_PK, Z_ENT, Z_OPT`, then the gathered columns in Core Data's order, named.
        mutating func makeEntityTable(root r: String) {
            let name = "Z" + r.uppercased()
            var columns = [
                Column(name: "Z_PK", type: "INTEGER", role: .primaryKey),
                Column(name: "Z_ENT", type: "INTEGER", role: .entityNumber),
                Column(name: "Z_OPT", type: "INTEGER", role: .optimisticLock),
            ]
            // Names first, in the order counters are handed out; then the columns in Core Data's column order.
            let all = pending[r] ?? []
            var taken = Set(["Z_PK", "Z_ENT", "Z_OPT"] + all.filter(\.fixed).map(\.base))
            var names: [Int: String] = [:]
            let naming = all.indices.filter { !all[$0].fixed }.sorted {
                CoreDataLayoutGuesses.namingPrecedes(
                    (all[$0].depth, all[$0].entity, all[$0].sortName), (all[$1].depth, all[$1].entity, all[$1].sortName))
            }
            for i in naming {
                let column = CoreDataLayoutGuesses.uniqueColumnName(all[i].base, taken: taken)
                taken.insert(column)
                names[i] = column
            }
            for i in all.indices.sorted(by: { all[$0].precedes(all[$1]) }) {
                columns.append(Column(name: names[i] ?? all[i].base, type: all[i].type, role: all[i].role))
            }
            let definitions = columns.map { $0.role == .primaryKey ? "Z_PK INTEGER PRIMARY KEY" : "\($0.name) \($0.type)" }
            tables.append(Table(
                name: name, kind: .entity(root: r), columns: columns,
                createStatement: "CREATE TABLE \(name) ( \(definitions.joined(separator: ", ")) )"))
        }

        /// An index on every foreign key, and on `Z_ENT` when the table holds more than one entity.
        mutating func keyIndexes(_ table: Table, treeSize: Int) {
            for c in table.columns {
                switch c.role {
                case .foreignKey, .inverselessForeignKey:
                    addIndex(
                        name: "\(table.name)_\(c.name)_INDEX", table: table.name, kind: .foreignKey, unique: false,
                        terms: [c.name])
                default: break
                }
            }
            if treeSize > 1 {
                addIndex(
                    name: "\(table.name)_Z_ENT_INDEX", table: table.name, kind: .entityNumber, unique: false,
                    terms: ["Z_ENT"])
            }
        }

        /// The entity's fetch indexes and uniqueness constraints.
        mutating func modelIndexes(_ e: CoreDataModel.Entity, table: String, layout: CoreDataLayout) {
            for fetchIndex in e.fetchIndexes {
                let name = "Z_\(e.name)_\(fetchIndex.name)"
                if fetchIndex.isPartial || fetchIndex.elements.contains(where: { $0.type != 0 }) {
                    notes.append("\(name): a partial or R-tree fetch index is not created")
                    continue
                }
                var terms: [String] = []
                for element in fetchIndex.elements {
                    guard let c = layout.column(entity: e.name, property: element.property) else {
                        notes.append("\(name): no column for \(element.property)")
                        terms = []
                        break
                    }
                    let order = element.isAscending ? "COLLATE BINARY ASC" : CoreDataLayoutGuesses.descendingSuffix
                    terms.append(c.name + " " + order)
                }
                guard !terms.isEmpty else { continue }
                addIndex(
                    name: name, table: table, kind: .fetchIndex(entity: e.name, name: fetchIndex.name), unique: false,
                    terms: terms)
            }
            for constraint in e.uniquenessConstraints where !constraint.isEmpty {
                let name = "Z_\(e.name)_UNIQUE_" + constraint.joined(separator: "_")
                let columns = constraint.compactMap { layout.column(entity: e.name, property: $0) }
                guard columns.count == constraint.count else {
                    notes.append("\(name): a property of the constraint has no column")
                    continue
                }
                addIndex(
                    name: name, table: table, kind: .uniqueness(entity: e.name, properties: constraint), unique: true,
                    terms: columns.map { $0.name + " COLLATE BINARY ASC" })
            }
        }

        /// The triggers of a derived attribute `count:(relationship)` over a to-many whose inverse is a to-one (the
        /// one shape in the corpus); any other derivation is listed in ``notes``.
        mutating func derivedTriggers(_ e: CoreDataModel.Entity, _ a: CoreDataModel.Attribute, layout: CoreDataLayout) {
            let expression = a.derivationExpression ?? ""
            let prefix = "count:(", suffix = ")"
            let path = expression.hasPrefix(prefix) && expression.hasSuffix(suffix)
                && expression.count > prefix.count + suffix.count
                ? String(expression.dropFirst(prefix.count).dropLast(suffix.count)) : nil
            guard let path, let (rel, _) = relationship(path, of: e.name), rel.isToMany, let inverseName = rel.inverse,
                  let (inverse, _) = relationship(inverseName, of: rel.destination), !inverse.isToMany,
                  let source = layout.table(forEntity: e.name)?.name,
                  let destination = layout.table(forEntity: rel.destination)?.name,
                  let c = layout.column(entity: e.name, property: a.name)?.name,
                  let f = layout.column(entity: rel.destination, property: inverseName)?.name
            else {
                notes.append("derived attribute \(e.name).\(a.name): no triggers for the derivation \(expression)")
                return
            }
            let s = source, d = destination
            let updated = "NSCoreDataDATriggerUpdatedAffectedObjectValue"
            let inserted = "NSCoreDataDATriggerInsertUpdatedAffectedObjectValue"
            // Each trigger reports the new value to Core Data through a function it registers on its connections.
            func report(_ function: String, _ key: String) -> String {
                "SELECT \(function)('\(s)', Z_ENT, Z_PK, '\(a.name)', \(c)) FROM \(s) WHERE Z_PK = \(key);"
            }
            func add(_ name: String, on table: String, _ head: String, _ body: String) {
                triggers.append(Trigger(
                    name: name, table: table, createStatement: "CREATE TRIGGER \(name) \(head) BEGIN \(body) END"))
            }
            let stem = "Z_DA_\(d)_\(e.name)_\(a.name)_PARAMETER_"
            let new = "NEW.\(f)", old = "OLD.\(f)"
            add(stem + "INSERT", on: d, "AFTER INSERT ON \(d) FOR EACH ROW WHEN (\(new) NOT NULL)",
                "UPDATE \(s) SET \(c) = IFNULL(\(c), 0) + 1 WHERE Z_PK = \(new); \(report(updated, new))")
            add(stem + "UPDATE_INCREMENT", on: d, "AFTER UPDATE OF \(f) ON \(d) FOR EACH ROW WHEN (\(new) NOT NULL)",
                "UPDATE \(s) SET \(c) = \(c) + 1 WHERE Z_PK = \(new); \(report(updated, new))")
            add(stem + "UPDATE_DECREMENT", on: d, "AFTER UPDATE OF \(f) ON \(d) FOR EACH ROW WHEN (\(old) NOT NULL)",
                "UPDATE \(s) SET \(c) = \(c) - 1 WHERE Z_PK = \(old); \(report(updated, old))")
            add(stem + "DELETE", on: d, "AFTER DELETE ON \(d) FOR EACH ROW WHEN (\(old) NOT NULL)",
                "UPDATE \(s) SET \(c) = \(c) - 1 WHERE Z_PK = \(old); \(report(updated, old))")
            add("Z_DA_\(s)_\(e.name)_\(a.name)_SOURCE_INSERT", on: s, "AFTER INSERT ON \(s) FOR EACH ROW",
                "UPDATE \(s) SET \(c) = (SELECT IFNULL(COUNT(\(f)), 0) FROM \(d) WHERE \(f) = NEW.Z_PK) "
                    + "WHERE Z_PK = NEW.Z_PK; \(report(inserted, "NEW.Z_PK"))")
        }

        mutating func addIndex(name: String, table: String, kind: IndexKind, unique: Bool, terms: [String]) {
            let statement = "CREATE \(unique ? "UNIQUE " : "")INDEX \(name) ON \(table) (\(terms.joined(separator: ", ")))"
            indexes.append(Index(
                name: name, table: table, kind: kind, isUnique: unique, terms: terms, createStatement: statement))
        }

        /// The join table of the many-to-many pair `rel` (declared on `owner`, which names the table) and `inverse`
        /// (declared on `inverseOwner`): `Z_<owner><REL> (Z_<owner><INVERSE>, Z_<destination><REL>[, Z_FOK_…])`.
        func joinTable(
            owner: String, _ rel: CoreDataModel.Relationship, inverse: CoreDataModel.Relationship, inverseOwner: String
        ) throws(CoreDataFormatError) -> Join {
            let ownerNumber = try number(owner)
            let destinationNumber = try number(rel.destination)
            let name = "Z_\(ownerNumber)\(rel.name.uppercased())"
            let reflexive = owner == inverseOwner && rel.name == inverse.name
            let first = "Z_\(ownerNumber)\(inverse.name.uppercased())"
            let second = reflexive
                ? CoreDataLayoutGuesses.reflexiveColumn : "Z_\(destinationNumber)\(rel.name.uppercased())"
            var columns = [
                Column(name: first, type: "INTEGER", role: .joinKey(entity: inverseOwner, relationship: inverse.name)),
                Column(name: second, type: "INTEGER", role: .joinKey(entity: owner, relationship: rel.name)),
            ]
            if rel.isOrdered {
                columns.append(Column(
                    name: reflexive
                        ? CoreDataLayoutGuesses.reflexiveOrderColumn : "Z_FOK_\(destinationNumber)\(rel.name.uppercased())",
                    type: "INTEGER", role: .joinOrderKey(entity: owner, relationship: rel.name)))
            }
            if inverse.isOrdered && !reflexive {
                columns.append(Column(
                    name: "Z_FOK_\(ownerNumber)\(inverse.name.uppercased())", type: "INTEGER",
                    role: .joinOrderKey(entity: inverseOwner, relationship: inverse.name)))
            }
            let definitions = columns.map { "\($0.name) \($0.type)" } + ["PRIMARY KEY (\(first), \(second))"]
            let table = Table(
                name: name, kind: .join(entity: owner, relationship: rel.name), columns: columns,
                createStatement: "CREATE TABLE \(name) ( \(definitions.joined(separator: ", ")) )")
            return Join(table: table, firstColumn: first, secondColumn: second)
        }
    }

    /// The layout from its parts (used while building, to look columns up before the indexes exist).
    init(entities: [EntityLayout], tables: [Table], indexes: [Index], notes: [String]) {
        self.entities = entities
        self.tables = tables
        self.indexes = indexes
        self.triggers = []
        self.notes = notes
    }
}
