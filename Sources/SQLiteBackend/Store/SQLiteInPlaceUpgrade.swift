import Foundation
@_spi(BackendKit) import StoreAPI

/// The statements that turn a store laid out for one schema into the layout of the next, where the store is: new
/// columns (`ALTER TABLE … ADD COLUMN`, with the added attribute's default as the column default, which SQLite
/// returns for every existing row without writing one), new tables, join tables and indexes, and the entity rows.
///
/// It exists only when every record keeps its storage: each entity keeps its code and table, each property both
/// schemas have keeps its column or join table, nothing the old layout stored is dropped, and each new column
/// belongs to an added property. Anything else (a removed column, an entity inserted before others so that codes
/// shift, a relationship whose storage moves) is left to the streaming upgrade.
struct SQLiteInPlaceUpgrade {
    /// What to run, in order, inside one write transaction (metadata is written separately).
    let statements: [String]
    /// Columns whose default stands for an added attribute's default value: an existing row must read back as that
    /// value, checked after the columns are added (SQLite may store a literal in another class than the codec would,
    /// an integral REAL as an INTEGER, say), or the upgrade is rolled back and left to the streaming one.
    let defaults: [(table: String, column: String, value: StoreValue, type: AttributeType)]
    /// The old layout's fetch indexes the new one no longer has (they only speed fetches up, so they may go).
    let droppedFetchIndexes: [String]

    init?(from old: SQLiteLayout, to new: SQLiteLayout, plan: SchemaMigrationPlan) {
        guard plan.onlyAdds else { return nil }
        let added = Self.addedProperties(plan)
        var statements: [String] = []
        var defaults: [(String, String, StoreValue, AttributeType)] = []

        // Entities keep their code and table; none is dropped.
        for e in old.schema.entities {
            guard let was = old.entities[e.name], let now = new.entities[e.name],
                  was.code == now.code, was.tableName == now.tableName else { return nil }
        }
        // Properties both schemas have keep their storage.
        for (name, was) in old.entities {
            guard let now = new.entities[name] else { return nil }
            for (i, a) in was.entity.attributes.enumerated() {
                guard let j = now.entity.attributeIndex(a.name),
                      Self.column(was.attributeColumns[i], in: old, was.root) == Self.column(now.attributeColumns[j], in: new, now.root)
                else { return nil }
            }
            for (i, r) in was.entity.relationships.enumerated() {
                guard let j = now.entity.relationshipIndex(r.name),
                      Self.sameStorage(was.relationships[i], old, was.root, now.relationships[j], new, now.root) else { return nil }
            }
        }
        // Hierarchy tables: the old ones grow by the columns of added properties; new ones are created.
        let owners = Self.columnOwners(new)
        for root in new.schema.rootEntities {
            guard let t = new.tables[root.name] else { return nil }
            guard let before = old.tables[root.name] else {
                statements += SQLiteLayout.creationStatements(of: t)
                continue
            }
            let existing = Dictionary(before.columns.map { ($0.name, $0.declaredType) }, uniquingKeysWith: { a, _ in a })
            guard before.columns.allSatisfy({ c in t.columns.contains(c) }) else { return nil }
            for c in t.columns where existing[c.name] == nil {
                guard let owner = owners[t.name + "\u{0}" + c.name], added.contains(owner.entity + "\u{0}" + owner.property) else { return nil }
                var definition = "ALTER TABLE \(SQLiteLayout.quote(t.name)) ADD COLUMN \(SQLiteLayout.quote(c.name))"
                if !c.declaredType.isEmpty { definition += " \(c.declaredType)" }
                if let attribute = owner.attribute, let value = attribute.defaultValue, !value.isNull {
                    // Every row of the table reads a column default, so it may stand for the added attribute's
                    // default only when every entity stored in the table has the attribute.
                    guard t.entityCodes.allSatisfy({ owner.users.contains($0) }), let literal = Self.literal(value) else { return nil }
                    definition += " DEFAULT \(literal)"
                    defaults.append((t.name, c.name, value, attribute.type))
                }
                statements.append(definition)
            }
            if t.hasSubentities && !before.hasSubentities { statements.append(SQLiteLayout.entityIndexStatement(of: t)) }
        }
        // Join tables: none dropped or changed; new ones created.
        let oldJoins = Dictionary(old.joinTables.map { ($0.name, $0) }, uniquingKeysWith: { a, _ in a })
        let newJoins = Set(new.joinTables.map(\.name))
        guard oldJoins.keys.allSatisfy(newJoins.contains) else { return nil }
        for j in new.joinTables {
            if let was = oldJoins[j.name] {
                guard was.owner == j.owner, was.isShared == j.isShared else { return nil }
            } else {
                statements += SQLiteLayout.creationStatements(of: j)
            }
        }
        // Indexes: none of the old layout's dropped; new ones created.
        let oldIndexes = Set(old.indexStatements)
        guard oldIndexes.isSubset(of: new.indexStatements) else { return nil }
        statements += new.indexStatements.filter { !oldIndexes.contains($0) }
        let oldFetchIndexes = Set(old.fetchIndexStatements)
        statements += new.fetchIndexStatements.filter { !oldFetchIndexes.contains($0) }
        let newFetchIndexes = Set(new.fetchIndexStatements)
        droppedFetchIndexes = old.fetchIndexStatements.filter { !newFetchIndexes.contains($0) }
        // New entities' rows, as a new store has them.
        for e in new.schema.entities where old.entities[e.name] == nil {
            guard let l = new.entities[e.name] else { return nil }
            statements.append("INSERT INTO \(SQLiteLayout.quote(SQLiteLayout.entitiesTable)) (code, name, root, tableName) VALUES (\(l.code), \(SQLiteLayout.literal(e.name)), \(SQLiteLayout.literal(e.rootName)), \(SQLiteLayout.literal(l.tableName)))")
            if e.rootName == e.name {
                statements.append("INSERT INTO \(SQLiteLayout.quote(SQLiteLayout.keysTable)) (root, next) VALUES (\(SQLiteLayout.literal(e.name)), 1) ON CONFLICT (root) DO NOTHING")
            }
        }
        self.statements = statements
        self.defaults = defaults
    }

    /// `entity NUL property` of every property the plan adds (an added entity's properties included).
    private static func addedProperties(_ plan: SchemaMigrationPlan) -> Set<String> {
        var names: Set<String> = []
        for e in plan.entities {
            for p in e.attributes + e.relationships where e.change == .added || p.change == .added {
                names.insert(e.name + "\u{0}" + p.name)
            }
        }
        return names
    }

    /// Who uses each column of each table (`table NUL column`): the entity that declares the property stored there,
    /// the property, the attribute when it is one, and the codes of the entities whose records have a value there.
    private static func columnOwners(_ layout: SQLiteLayout) -> [String: ColumnOwner] {
        var owners: [String: ColumnOwner] = [:]
        for e in layout.schema.entities {
            guard let l = layout.entities[e.name], let t = layout.tables[l.root] else { continue }
            for a in e.definition.attributes where !a.isTransient {
                guard let i = e.attributeIndex(a.name), let c = column(l.attributeColumns[i], in: layout, l.root) else { continue }
                owners[t.name + "\u{0}" + c.name] = ColumnOwner(entity: e.name, property: a.name, attribute: a)
            }
            for r in e.definition.relationships where !r.isTransient && !r.isToMany {
                guard let i = e.relationshipIndex(r.name), case .foreignKey(let index) = l.relationships[i],
                      let c = column(index, in: layout, l.root) else { continue }
                owners[t.name + "\u{0}" + c.name] = ColumnOwner(entity: e.name, property: r.name, attribute: nil)
            }
        }
        for e in layout.schema.entities {
            guard let l = layout.entities[e.name], let t = layout.tables[l.root] else { continue }
            for index in l.attributeColumns {
                guard let c = column(index, in: layout, l.root) else { continue }
                owners[t.name + "\u{0}" + c.name]?.users.insert(l.code)
            }
        }
        return owners
    }

    /// The entity and property a column stores, and which entities' records use it.
    private struct ColumnOwner {
        let entity: String
        let property: String
        let attribute: AttributeDescription?
        var users: Set<Int64> = []
    }

    /// Column `index` of hierarchy `root`'s table.
    private static func column(_ index: Int, in layout: SQLiteLayout, _ root: String) -> ColumnLayout? {
        guard let t = layout.tables[root], index >= 0, index < t.columns.count else { return nil }
        return t.columns[index]
    }

    /// Whether a relationship is stored in the same place in both layouts.
    private static func sameStorage(_ a: RelationshipStorage, _ la: SQLiteLayout, _ ra: String,
                                    _ b: RelationshipStorage, _ lb: SQLiteLayout, _ rb: String) -> Bool {
        switch (a, b) {
        case (.foreignKey(let x), .foreignKey(let y)):
            return column(x, in: la, ra) != nil && column(x, in: la, ra) == column(y, in: lb, rb)
        case (.inverseForeignKey(let x), .inverseForeignKey(let y)):
            return x.table == y.table && x.column == y.column && x.orderTable == y.orderTable
        case (.joinTable(let x), .joinTable(let y)):
            return x.table == y.table && x.ownColumn == y.ownColumn && x.otherColumn == y.otherColumn
                && x.ownOrderColumn == y.ownOrderColumn && x.isShared == y.isShared
        default:
            return false
        }
    }

    /// An SQL literal that SQLite stores as ``SQLiteValueCodec`` would store `value`, or `nil` for a value without
    /// one (a NaN, an infinity, a negative zero, a string holding NUL).
    static func literal(_ value: StoreValue) -> String? {
        func real(_ v: Double) -> String? {
            guard v.isFinite, !(v == 0 && v.sign == .minus) else { return nil }
            let text = "\(v)"
            return text.contains(where: { $0 == "." || $0 == "e" }) ? text : text + ".0"
        }
        func blob(_ d: Data) -> String { "X'" + d.map { String(format: "%02X", $0) }.joined() + "'" }
        switch value {
        case .null: return nil
        case .integer16(let v): return String(v)
        case .integer32(let v): return String(v)
        case .integer64(let v): return String(v)
        case .boolean(let v): return v ? "1" : "0"
        case .double(let v): return real(v)
        case .float(let v): return real(Double(v))
        case .date(let v): return real(v.timeIntervalSinceReferenceDate)
        case .decimal(let v): return SQLiteLayout.literal(SQLiteValueCodec.decimalText(v))
        case .string(let v): return v.utf8.contains(0) ? nil : SQLiteLayout.literal(v)
        case .uri(let v): return v.absoluteString.utf8.contains(0) ? nil : SQLiteLayout.literal(v.absoluteString)
        case .binary(let v): return blob(v)
        case .uuid(let v): return blob(SQLiteValueCodec.uuidData(v))
        }
    }
}
