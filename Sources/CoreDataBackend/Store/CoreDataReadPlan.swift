import Foundation
@_spi(BackendKit) import StoreAPI

/// Where each entity's records live in a Core Data store and how each of their values is read, worked out once when
/// the store opens from the model and the tables' actual columns (`PRAGMA table_info`): nothing in it depends on
/// how many records there are.
///
/// One table per root entity (`Z` + uppercased name) holds the whole hierarchy, told apart by `Z_ENT`. Attribute and
/// to-one columns are the ones ``CoreDataColumnNames`` finds; a to-many is read from the other side's foreign key
/// (ordered by its `Z_FOK_` column) or a many-to-many join table, with one query per relationship for a whole page
/// of records.
struct CoreDataReadPlan {
    /// A root entity's table.
    struct Table {
        var name: String
        var columns: [String]
        /// The select list (every column, in table order).
        var selectList: String
        var index: [String: Int]
    }

    /// How a relationship's value is read.
    enum Link: Hashable {
        /// A to-one whose foreign key is a column of the record's own row (its position in the select list).
        case column(Int)
        /// The keys of the rows of `table` whose `foreignKey` holds the record's key, by `order` then key (a to-many
        /// through its inverse's key, or the key-less side of a one-to-one when `first`).
        case referencing(table: String, foreignKey: String, order: String?, first: Bool)
        /// A many-to-many's keys from its join table.
        case join(table: String, source: String, target: String, order: String?)
        /// The destination's table is not in this store (a store of one configuration): always empty.
        case empty(toMany: Bool)
        /// Not readable; reading a record of the entity throws this reason.
        case broken(String)
    }

    /// One entity's reading (a class: a page looks it up for every row).
    final class EntityPlan {
        let entity: Entity
        let number: Int64
        let table: Table
        /// Each attribute's column (position in the select list and name), `nil` when the table lacks it.
        let attributeColumns: [(index: Int, name: String)?]
        let links: [Link]
        /// Each link's position in ``CoreDataReadPlan/links`` (entities of a hierarchy share inherited ones).
        let linkIDs: [Int]
        /// Each to-one relationship's own foreign-key column name (for predicates), by relationship position.
        let toOneColumns: [String?]
        /// Derives the records' global identifiers.
        let globalID: CoreDataGlobalID.Maker

        init(
            entity: Entity, number: Int64, table: Table, attributeColumns: [(index: Int, name: String)?], links: [Link],
            linkIDs: [Int], toOneColumns: [String?], globalID: CoreDataGlobalID.Maker
        ) {
            self.linkIDs = linkIDs
            self.entity = entity
            self.number = number
            self.table = table
            self.attributeColumns = attributeColumns
            self.links = links
            self.toOneColumns = toOneColumns
            self.globalID = globalID
        }
    }

    let entities: [String: EntityPlan]
    /// The plans by `Z_ENT`.
    let byNumber: [Int64: EntityPlan]
    /// Every distinct link of every entity.
    let links: [Link]
    /// The numbers of each entity and its sub-entities.
    let hierarchyNumbers: [String: [Int64]]

    init(
        url: URL, model: CoreDataModel, schema: Schema, storeUUID: UUID, tables: Set<String>, connection: CoreDataConnection
    ) throws {
        let numbers = model.entityNumbers()
        var tablePlans: [String: Table] = [:]
        var propertyColumns: [String: [String: String]] = [:]
        for root in schema.rootEntities {
            let name = "Z" + root.name.uppercased()
            guard tables.contains(name) else { continue }
            let columns = try connection.columns(of: name)
            var index: [String: Int] = [:]
            for (i, c) in columns.enumerated() { index[c] = i }
            tablePlans[root.name] = Table(
                name: name, columns: columns, selectList: columns.map(CoreDataSQL.quoted).joined(separator: ", "),
                index: index)
            propertyColumns.merge(
                CoreDataColumnNames.columns(model: model, hierarchy: root.hierarchyNames, existing: Set(columns))
            ) { $1 }
        }
        let joinTables = try tables.sorted().filter { $0.hasPrefix("Z_") && $0.dropFirst(2).first?.isNumber == true }
            .map { ($0, try connection.columns(of: $0)) }
        var plans: [String: EntityPlan] = [:]
        var distinct: [Link] = []
        var ids: [Link: Int] = [:]
        var hierarchy: [String: [Int64]] = [:]
        for entity in schema.entities {
            hierarchy[entity.name] = entity.hierarchyNames.compactMap { numbers[$0].map(Int64.init) }
            guard let table = tablePlans[entity.rootName], let number = numbers[entity.name] else { continue }
            let own = propertyColumns[entity.name] ?? [:]
            let attributes: [(index: Int, name: String)?] = entity.attributes.map { a in
                guard let c = own[a.name], let i = table.index[c] else { return nil }
                return (i, c)
            }
            var links: [Link] = []
            var toOne: [String?] = []
            for r in entity.relationships {
                let link = Self.link(r, of: entity, schema: schema, table: table, tables: tablePlans,
                                     columns: propertyColumns, numbers: numbers, joinTables: joinTables)
                links.append(link)
                if case .column = link { toOne.append(own[r.name]) } else { toOne.append(nil) }
            }
            let linkIDs = links.map { link in
                if let id = ids[link] { return id }
                ids[link] = distinct.count
                distinct.append(link)
                return distinct.count - 1
            }
            plans[entity.name] = EntityPlan(
                entity: entity, number: Int64(number), table: table, attributeColumns: attributes, links: links,
                linkIDs: linkIDs, toOneColumns: toOne, globalID: CoreDataGlobalID.Maker(store: storeUUID, root: entity.rootName))
        }
        entities = plans
        self.links = distinct
        var numbered: [Int64: EntityPlan] = [:]
        for p in plans.values { numbered[p.number] = p }
        self.byNumber = numbered
        hierarchyNumbers = hierarchy
    }

    private static func link(
        _ r: RelationshipDescription, of entity: Entity, schema: Schema, table: Table, tables: [String: Table],
        columns: [String: [String: String]], numbers: [String: Int], joinTables: [(String, [String])]
    ) -> Link {
        let place = "\(entity.name).\(r.name)"
        guard let destination = schema.entity(named: r.destination) else {
            return .broken("\(place): destination \(r.destination) is not in the model")
        }
        let inverse = r.inverse.flatMap { destination.relationship($0) }
        let dest = tables[destination.rootName]
        if !r.isToMany {
            if let column = columns[entity.name]?[r.name], let at = table.index[column] { return .column(at) }
            // A one-to-one keeps its key on one side only; this is the other side.
            if let inverse, !inverse.isToMany {
                guard let dest else { return .empty(toMany: false) }
                guard let column = columns[destination.name]?[inverse.name] else {
                    return .broken("table \(dest.name) has no foreign-key column for \(destination.name).\(inverse.name)")
                }
                return .referencing(table: dest.name, foreignKey: column, order: nil, first: true)
            }
            return .broken("\(place): no foreign-key column \(table.name).Z\(r.name.uppercased())")
        }
        if let inverse, !inverse.isToMany {
            guard let dest else { return .empty(toMany: true) }
            guard let column = columns[destination.name]?[inverse.name] else {
                return .broken("table \(dest.name) has no foreign-key column for \(destination.name).\(inverse.name)")
            }
            let fok = "Z_FOK_" + inverse.name.uppercased()
            return .referencing(table: dest.name, foreignKey: column,
                                order: r.isOrdered && dest.index[fok] != nil ? fok : nil, first: false)
        }
        if let inverse {
            // [unverified] A self-inverse many-to-many names its columns `REFLEXIVE`; no corpus store has one.
            let mine = r.name == inverse.name ? "REFLEXIVE" : inverse.name.uppercased()
            let theirs = r.name.uppercased()
            func match(_ column: String, _ suffix: String) -> Bool {
                guard column.hasPrefix("Z_"), column.hasSuffix(suffix) else { return false }
                let digits = column.dropFirst(2).dropLast(suffix.count)
                return !digits.isEmpty && digits.allSatisfy(\.isNumber)
            }
            for (name, names) in joinTables {
                guard let source = names.first(where: { match($0, mine) }),
                    let target = names.first(where: { match($0, theirs) && $0 != source })
                else { continue }
                let fok = "Z_FOK_" + target.dropFirst(2)
                return .join(table: name, source: source, target: target,
                             order: r.isOrdered && names.contains(fok) ? fok : nil)
            }
            return .broken("\(place): no join table with columns Z_<n>\(mine) and Z_<n>\(theirs)")
        }
        // [unverified] A to-many without an inverse keeps a hidden key in the destination table,
        // `Z<source Z_ENT><REL>`; no corpus store has one.
        guard let dest else { return .empty(toMany: true) }
        let declaring = entity.definition.relationships.contains { $0.name == r.name }
            ? entity.name
            : (entity.ancestorNames.first {
                schema.entity(named: $0)?.definition.relationships.contains { $0.name == r.name } == true
            } ?? entity.name)
        let column = CoreDataLayoutGuesses.inverselessForeignKey(sourceNumber: numbers[declaring] ?? 0, relationship: r.name)
        guard dest.index[column] != nil else {
            return .broken("\(place): a to-many without an inverse, but \(dest.name) has no column \(column)")
        }
        let fok = CoreDataLayoutGuesses.inverselessOrderKey(sourceNumber: numbers[declaring] ?? 0, relationship: r.name)
        return .referencing(table: dest.name, foreignKey: column, order: r.isOrdered && dest.index[fok] != nil ? fok : nil,
                            first: false)
    }
}
