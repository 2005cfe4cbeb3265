import Foundation
@_spi(BackendKit) import StoreAPI

/// The statements that turn a store laid out for one schema into the layout of the next, where the store is: new
/// columns (`ALTER TABLE … ADD COLUMN`, an added attribute's default given as the column default so that every
/// existing row reads it without being rewritten, then dropped so the table is as a new store's), new hierarchy and
/// join tables, new indexes, and the key rows of new hierarchies.
///
/// It exists only when every record keeps its storage: each entity keeps its code and table, each property both
/// schemas have keeps its column (name and type) or join table, nothing the old layout stored or indexed is
/// dropped, and each new column belongs to an added property. Anything else (a removed column, an entity inserted
/// before others so that codes shift, a uniqueness index whose condition changes) is left to the streaming upgrade.
struct PostgresInPlaceUpgrade {
    /// DDL to run, in order, inside one transaction (PostgreSQL's DDL is transactional).
    let statements: [String]
    /// Hierarchies that are new: each gets its key row.
    let newRoots: [String]
    /// Columns whose (dropped) default stands for an added attribute's default value: an existing row must read it
    /// back as that value, checked after the columns are added, or the upgrade is rolled back and streamed.
    let defaults: [(table: String, column: String, value: StoreValue, type: AttributeType)]

    init?(from old: PostgresLayout, to new: PostgresLayout, plan: SchemaMigrationPlan) {
        guard plan.onlyAdds else { return nil }
        let added = Self.addedProperties(plan)
        var statements: [String] = []
        var defaults: [(String, String, StoreValue, AttributeType)] = []

        // Entities keep their code and table; properties both schemas have keep their storage.
        for (name, was) in old.entities {
            guard let now = new.entities[name], was.code == now.code, was.table.name == now.table.name else { return nil }
            for (i, a) in was.entity.attributes.enumerated() {
                guard let j = now.entity.attributeIndex(a.name),
                      let x = Self.column(was.attributeColumns[i], was.table), let y = Self.column(now.attributeColumns[j], now.table),
                      x.name == y.name, x.type == y.type
                else { return nil }
            }
            for (i, r) in was.entity.relationships.enumerated() {
                guard let j = now.entity.relationshipIndex(r.name) else { return nil }
                switch (was.relationships[i], now.relationships[j]) {
                case (.foreignKey(let x), .foreignKey(let y)):
                    guard let a = Self.column(x, was.table), let b = Self.column(y, now.table), a.name == b.name else { return nil }
                case (.join(let x), .join(let y)):
                    guard x.name == y.name else { return nil }
                default:
                    return nil
                }
            }
        }
        // Hierarchy tables: the old ones grow by the columns of added properties; new ones are created.
        let owners = Self.columnOwners(new)
        var newRoots: [String] = []
        for root in new.schema.rootEntities {
            guard let t = new.tables[root.name] else { return nil }
            guard let before = old.tables[root.name] else {
                statements += new.hierarchyTableStatements(root.name)
                newRoots.append(root.name)
                continue
            }
            guard before.name == t.name,
                  before.columns.allSatisfy({ c in t.columns.contains { $0.name == c.name && $0.type == c.type } })
            else { return nil }
            let existing = Set(before.columns.map(\.name))
            for c in t.columns where !existing.contains(c.name) {
                guard let owner = owners[t.name + "\u{0}" + c.name], added.contains(owner.entity + "\u{0}" + owner.property) else {
                    return nil
                }
                let alter = "ALTER TABLE \(PostgresLayout.quote(t.name))"
                var definition = "\(alter) ADD COLUMN \(PostgresLayout.quote(c.name)) \(c.type)"
                if let attribute = owner.attribute, let value = attribute.defaultValue, !value.isNull {
                    // Every existing row of the table reads the default, so it may stand for the attribute's default
                    // only when every entity stored in the table has the attribute.
                    guard t.entityCodes.allSatisfy({ owner.users.contains($0) }),
                          let literal = Self.literal(value, attribute: attribute, entity: owner.entity, columnType: c.type)
                    else { return nil }
                    definition += " DEFAULT \(literal)"
                    statements.append(definition)
                    statements.append("\(alter) ALTER COLUMN \(PostgresLayout.quote(c.name)) DROP DEFAULT")
                    defaults.append((t.name, c.name, value, attribute.type))
                } else {
                    statements.append(definition)
                }
            }
        }
        // Join tables: none dropped; new ones created.
        let oldJoins = Set(old.joinTables.map(\.name))
        guard oldJoins.isSubset(of: new.joinTables.map(\.name)) else { return nil }
        statements += new.joinTables.filter { !oldJoins.contains($0.name) }.map(PostgresLayout.creationStatement(of:))
        // Indexes: none of the old layout's dropped or changed; new ones created.
        let oldIndexes = Set(old.indexStatements)
        guard oldIndexes.isSubset(of: new.indexStatements) else { return nil }
        statements += new.indexStatements.filter { !oldIndexes.contains($0) }
        self.statements = statements
        self.newRoots = newRoots
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

    /// The entity and property a column stores, and which entities' records have a value there.
    private struct ColumnOwner {
        let entity: String
        let property: String
        let attribute: AttributeDescription?
        var users: Set<Int64> = []
    }

    /// Who uses each column of each table (`table NUL column`).
    private static func columnOwners(_ layout: PostgresLayout) -> [String: ColumnOwner] {
        var owners: [String: ColumnOwner] = [:]
        for e in layout.schema.entities {
            guard let l = layout.entities[e.name] else { continue }
            for a in e.definition.attributes {
                guard let i = e.attributeIndex(a.name), let c = column(l.attributeColumns[i], l.table) else { continue }
                owners[l.table.name + "\u{0}" + c.name] = ColumnOwner(entity: e.name, property: a.name, attribute: a)
            }
            for r in e.definition.relationships where !r.isToMany {
                guard let i = e.relationshipIndex(r.name), case .foreignKey(let index) = l.relationships[i],
                      let c = column(index, l.table) else { continue }
                owners[l.table.name + "\u{0}" + c.name] = ColumnOwner(entity: e.name, property: r.name, attribute: nil)
            }
        }
        for l in layout.entities.values {
            for index in l.attributeColumns {
                guard let c = column(index, l.table) else { continue }
                owners[l.table.name + "\u{0}" + c.name]?.users.insert(l.code)
            }
        }
        return owners
    }

    /// Column `index` of `table`.
    private static func column(_ index: Int, _ table: PGTable) -> PGColumn? {
        index >= 0 && index < table.columns.count ? table.columns[index] : nil
    }

    /// `value` as a typed SQL literal (a string constant cast to the column's type), from the same text the
    /// statements bind; `nil` when it has none. Needs `standard_conforming_strings` on (set by the caller), so a
    /// backslash in the text is itself.
    static func literal(_ value: StoreValue, attribute: AttributeDescription, entity: String, columnType: String) -> String? {
        guard let text = try? PostgresValueCodec.parameter(value, type: attribute.type, entity: entity, property: attribute.name),
              !text.utf8.contains(0)
        else { return nil }
        return "'" + text.replacingOccurrences(of: "'", with: "''") + "'::" + columnType
    }
}
