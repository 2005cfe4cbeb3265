import Foundation
import SQLiteFiles
@_spi(BackendKit) import StoreAPI

/// Where a save writes each value of each entity, worked out once from the store's ``CoreDataLayout`` when a
/// writable store opens.
///
/// A record's attributes and to-one keys are columns of its own row. A to-many's members are rows of the
/// destination's table: with an inverse to-one, each member's own foreign key says whom it belongs to and the
/// owner's list gives only the order (`Z_FOK_`, when ordered); without an inverse, the owner's list is all there is
/// (a hidden key and order column). A many-to-many is rows of a join table holding both sides' keys and orders.
struct CoreDataWritePlan {
    /// A root entity's table.
    struct Table {
        var name: String
        var columns: [CoreDataLayout.Column]
        var insertSQL: String
        /// How many rows ``insertBatchSQL`` inserts (``MultiRowInsert/rows(parametersPerRow:)``).
        var insertBatchRows: Int
        /// `INSERT` of ``insertBatchRows`` rows in one statement, each row's parameters as in ``insertSQL``.
        var insertBatchSQL: String
        /// Reads one row's `Z_ENT` by key.
        var entitySQL: String

        init(name: String, columns: [CoreDataLayout.Column]) {
            let q = CoreDataSQL.quoted
            self.name = name
            self.columns = columns
            let head = "INSERT INTO \(q(name)) (" + columns.map { q($0.name) }.joined(separator: ", ") + ") VALUES "
            let row = "(" + CoreDataSQL.placeholders(columns.count) + ")"
            insertSQL = head + row
            insertBatchRows = MultiRowInsert.rows(parametersPerRow: columns.count)
            insertBatchSQL = MultiRowInsert.sql(head: head, row: row, rows: insertBatchRows)
            entitySQL = "SELECT Z_ENT FROM \(q(name)) WHERE Z_PK = ?"
        }
    }

    /// A to-many stored in the members' rows.
    struct MemberLink: Hashable {
        /// The destination root and its table.
        var root: String
        var table: String
        /// Whether the members' own to-one (the inverse) holds the key; otherwise ``foreignKey`` is written from
        /// the owner's list.
        var hasInverse: Bool
        var foreignKey: String
        /// `Z_FOK_…`: the member's position in the owner's list, when ordered.
        var order: String?
        /// The inverse's name in the destination (for the members' own order column), when it has one.
        var inverse: String?
    }

    /// A many-to-many stored in a join table.
    struct JoinLink: Hashable {
        var table: String
        /// The column holding this side's keys, the other side's, and each side's order column.
        var mine: String
        var theirs: String
        var myOrder: String?
        var theirOrder: String?
        /// ``upsert``, ``bulkUpsert`` and ``bulkBatchUpsert``, built once.
        var upsertSQL = ""
        var bulkUpsertSQL = ""
        var bulkBatchUpsertSQL = ""

        /// How many pairs ``bulkBatchUpsert`` adds (two parameters each, within ``MultiRowInsert/parameterLimit``).
        static let bulkBatchPairs = 256

        /// The statement adding a pair (binding this side's key, the other's, this side's position when ordered,
        /// and the other's key again when the other side is ordered): a new pair goes after the other side's last
        /// member until that side's own list says where; an existing pair gets this side's position.
        var upsert: String {
            let q = CoreDataSQL.quoted
            var columns = [q(mine), q(theirs)]
            var places = ["?", "?"]
            if let o = myOrder { columns.append(q(o)); places.append("?") }
            if let o = theirOrder {
                columns.append(q(o))
                places.append("(SELECT ifnull(max(\(q(o))), 0) + \(CoreDataRowWriter.orderSpacing) FROM \(q(table)) WHERE \(q(theirs)) = ?)")
            }
            return insert(columns, places)
        }

        /// ``upsert`` for a bulk load: the other side's position is left to its own list (no lookup by key).
        var bulkUpsert: String {
            let q = CoreDataSQL.quoted
            var columns = [q(mine), q(theirs)]
            var places = ["?", "?"]
            if let o = myOrder { columns.append(q(o)); places.append("?") }
            return insert(columns, places)
        }

        /// ``bulkUpsert`` of ``bulkBatchPairs`` pairs of an unordered side in one statement (`nil` for an ordered
        /// one: one statement may not update the same row twice). One statement per pair runs the statement's set-up
        /// again and seeks each row's place from the root of the table and of its index.
        var bulkBatchUpsert: String? {
            guard myOrder == nil else { return nil }
            let q = CoreDataSQL.quoted
            return MultiRowInsert.sql(head: "INSERT INTO \(q(table)) (\(q(mine)), \(q(theirs))) VALUES ", row: "(?, ?)",
                                      rows: Self.bulkBatchPairs, tail: " ON CONFLICT DO NOTHING")
        }

        private func insert(_ columns: [String], _ places: [String]) -> String {
            let q = CoreDataSQL.quoted
            let conflict = myOrder.map { " ON CONFLICT (\(q(mine)), \(q(theirs))) DO UPDATE SET \(q($0)) = excluded.\(q($0))" }
                ?? " ON CONFLICT DO NOTHING"
            return "INSERT INTO \(q(table)) (\(columns.joined(separator: ", "))) VALUES (\(places.joined(separator: ", ")))\(conflict)"
        }
    }

    /// How one relationship of an entity is written.
    enum Link {
        /// The to-one's key in the row's `column`; `entityColumn` holds the destination's `Z_ENT` when the
        /// destination has sub-entities; `order` is the row's position in the inverse's ordered list.
        case toOne(column: String, entityColumn: String?, order: String?, destinationRoot: String)
        /// The other side of a one-to-one: nothing to write here.
        case none
        case members(MemberLink)
        case join(JoinLink)
        /// A relationship this layout cannot store; a save that changes it is refused with this reason.
        case unwritable(String)
    }

    /// What an inserted row's column holds.
    enum Source {
        case primaryKey, entityNumber, optimisticLock, null
        /// The attribute at this position.
        case attribute(Int)
        /// The to-one relationship at this position: its key, its destination's `Z_ENT`, or the row's position in
        /// the destination's ordered list.
        case toOne(Int)
        case toOneEntity(Int)
        case toOneOrder(Int)
        /// The hidden key (and order) a to-many without an inverse keeps in its members' rows, named by the key column.
        case inverselessKey(String)
        case inverselessOrder(keyColumn: String)
    }

    /// One entity's writing (a class: a save looks it up for every record).
    final class EntityPlan {
        let entity: Entity
        let number: Int64
        let root: String
        let table: Table
        /// Each attribute's column name, `nil` when not stored.
        let attributeColumns: [String?]
        let links: [Link]
        /// What each column of an inserted row holds, in table order.
        let sources: [Source]
        /// The insert's parameter (from 1) of each attribute's column, `0` when it has none: where a page's values,
        /// read in attribute order, are bound.
        let attributeParameters: [Int32]
        /// Whether some attribute's values may go to external files (a page of such an entity is inserted as records).
        let hasExternalStorage: Bool
        /// `links.indices` as an array: what an inserted record writes, made once rather than per record.
        let linkIndices: [Int]

        init(entity: Entity, number: Int64, root: String, table: Table, attributeColumns: [String?], links: [Link],
             sources: [Source]) {
            self.entity = entity
            self.number = number
            self.root = root
            self.table = table
            self.attributeColumns = attributeColumns
            self.links = links
            self.sources = sources
            var parameters = [Int32](repeating: 0, count: entity.attributes.count)
            for (c, source) in sources.enumerated() {
                if case .attribute(let i) = source, i < parameters.count { parameters[i] = Int32(c + 1) }
            }
            attributeParameters = parameters
            hasExternalStorage = entity.attributes.contains(where: \.allowsExternalBinaryDataStorage)
            linkIndices = Array(links.indices)
        }
    }

    let entities: [String: EntityPlan]
    let tables: [String: Table]
    /// For each root, the foreign keys in any table that point at its records (to nullify when one is deleted):
    /// table, key column, and the entity and order columns that go with it.
    let incoming: [String: [(table: String, column: String, entityColumn: String?, order: String?)]]
    /// For each root, the join-table columns that hold its keys.
    let joinColumns: [String: [(table: String, column: String)]]
    /// Root entity → its `Z_ENT`.
    let rootNumbers: [String: Int64]
    /// The many-to-many join tables.
    var joinTables: Set<String> { Set(joinColumns.values.flatMap { $0.map(\.table) }) }
    /// For each join table, the column whose side writes the rows in a bulk load (the other side's pairs are
    /// checked at the end, see ``CoreDataDeferredJoin``): the column that leads the table's primary key, when a side
    /// keeps its keys there. A transfer sends each side's records in key order, so that side's rows come in the
    /// primary key's order and are appended to its index; the other side's would land all over it.
    let bulkJoinWriters: [String: String]

    init(url: URL, layout: CoreDataLayout, schema: Schema) throws(StoreError) {
        var tables: [String: Table] = [:]
        for t in layout.tables {
            guard case .entity(let root) = t.kind else { continue }
            tables[root] = Table(name: t.name, columns: t.columns)
        }
        func lineage(_ e: Entity) -> [String] { [e.name] + e.ancestorNames }
        func column(_ table: String?, _ match: (CoreDataLayout.ColumnRole) -> Bool) -> String? {
            guard let table, let t = layout.tables.first(where: { $0.name == table }) else { return nil }
            return t.columns.first { match($0.role) }?.name
        }
        var plans: [String: EntityPlan] = [:]
        var incoming: [String: [(table: String, column: String, entityColumn: String?, order: String?)]] = [:]
        var joinColumns: [String: [(table: String, column: String)]] = [:]
        var rootNumbers: [String: Int64] = [:]
        for e in schema.entities {
            guard let number = layout.entity(named: e.name)?.number, let table = tables[e.rootName] else { continue }
            if e.name == e.rootName { rootNumbers[e.name] = Int64(number) }
            let mine = Set(lineage(e))
            let attributes: [String?] = e.attributes.map { a in
                column(table.name) { if case .attribute(let o, let n) = $0 { mine.contains(o) && n == a.name } else { false } }
            }
            var links: [Link] = []
            for r in e.relationships {
                let declared = e.definition.relationships.contains { $0.name == r.name }
                guard let destination = schema.entity(named: r.destination) else {
                    throw .corruptStore(url, reason: "\(e.name).\(r.name): destination \(r.destination) is not in the model")
                }
                let theirs = Set(lineage(destination))
                let inverse = r.inverse.flatMap { destination.relationship($0) }
                let destinationTable = tables[destination.rootName]?.name
                if !r.isToMany {
                    guard let fk = column(table.name, {
                        if case .foreignKey(let o, let n) = $0 { mine.contains(o) && n == r.name } else { false }
                    }) else {
                        links.append(.none)
                        continue
                    }
                    let ent = column(table.name) {
                        if case .foreignEntity(let o, let n) = $0 { mine.contains(o) && n == r.name } else { false }
                    }
                    let order = column(table.name) {
                        if case .orderKey(let o, let n) = $0 { mine.contains(o) && n == r.name } else { false }
                    }
                    links.append(.toOne(column: fk, entityColumn: ent, order: order, destinationRoot: destination.rootName))
                    continue
                }
                if let inverse, !inverse.isToMany, let destinationTable {
                    let fk = column(destinationTable) {
                        if case .foreignKey(let o, let n) = $0 { theirs.contains(o) && n == inverse.name } else { false }
                    }
                    let order = column(destinationTable) {
                        if case .orderKey(let o, let n) = $0 { theirs.contains(o) && n == inverse.name } else { false }
                    }
                    guard let fk else { links.append(.none); continue }
                    links.append(.members(MemberLink(
                        root: destination.rootName, table: destinationTable, hasInverse: true, foreignKey: fk,
                        order: r.isOrdered ? order : nil, inverse: inverse.name)))
                    continue
                }
                if let inverse, inverse.isToMany {
                    var found: JoinLink?
                    for t in layout.tables {
                        guard case .join = t.kind else { continue }
                        let target = t.columns.first {
                            if case .joinKey(let o, let n) = $0.role { mine.contains(o) && n == r.name } else { false }
                        }
                        let source = t.columns.first {
                            if case .joinKey(let o, let n) = $0.role { theirs.contains(o) && n == inverse.name } else { false }
                        }
                        guard let target, let source, target.name != source.name else { continue }
                        let myOrder = t.columns.first {
                            if case .joinOrderKey(let o, let n) = $0.role { mine.contains(o) && n == r.name } else { false }
                        }
                        let theirOrder = t.columns.first {
                            if case .joinOrderKey(let o, let n) = $0.role { theirs.contains(o) && n == inverse.name } else { false }
                        }
                        var link = JoinLink(table: t.name, mine: source.name, theirs: target.name, myOrder: myOrder?.name,
                                            theirOrder: theirOrder?.name)
                        link.upsertSQL = link.upsert
                        link.bulkUpsertSQL = link.bulkUpsert
                        link.bulkBatchUpsertSQL = link.bulkBatchUpsert ?? ""
                        found = link
                        break
                    }
                    guard let found else {
                        links.append(.unwritable("\(e.name).\(r.name): the store's layout has no join table for it"))
                        continue
                    }
                    links.append(.join(found))
                    if declared { joinColumns[e.rootName, default: []].append((found.table, found.mine)) }
                    continue
                }
                guard let destinationTable else { links.append(.none); continue }
                let fk = column(destinationTable) {
                    if case .inverselessForeignKey(let o, let n) = $0 { mine.contains(o) && n == r.name } else { false }
                }
                let order = column(destinationTable) {
                    if case .inverselessOrderKey(let o, let n) = $0 { mine.contains(o) && n == r.name } else { false }
                }
                guard let fk else { links.append(.none); continue }
                links.append(.members(MemberLink(
                    root: destination.rootName, table: destinationTable, hasInverse: false, foreignKey: fk, order: order,
                    inverse: nil)))
                if declared { incoming[e.rootName, default: []].append((destinationTable, fk, nil, order)) }
            }
            let sources: [Source] = table.columns.map { c in
                switch c.role {
                case .primaryKey: return .primaryKey
                case .entityNumber: return .entityNumber
                case .optimisticLock: return .optimisticLock
                case .attribute(let o, let n):
                    guard mine.contains(o), let i = e.attributeIndex(n) else { return .null }
                    return .attribute(i)
                case .foreignKey(let o, let n):
                    guard mine.contains(o), let i = e.relationshipIndex(n) else { return .null }
                    return .toOne(i)
                case .foreignEntity(let o, let n):
                    guard mine.contains(o), let i = e.relationshipIndex(n) else { return .null }
                    return .toOneEntity(i)
                case .orderKey(let o, let n):
                    guard mine.contains(o), let i = e.relationshipIndex(n) else { return .null }
                    return .toOneOrder(i)
                case .inverselessForeignKey:
                    return .inverselessKey(c.name)
                case .inverselessOrderKey(let o, let n):
                    let key = table.columns.first {
                        if case .inverselessForeignKey(let o2, let n2) = $0.role { o2 == o && n2 == n } else { false }
                    }
                    return key.map { .inverselessOrder(keyColumn: $0.name) } ?? .null
                case .joinKey, .joinOrderKey, .bookkeeping:
                    return .null
                }
            }
            plans[e.name] = EntityPlan(
                entity: e, number: Int64(number), root: e.rootName, table: table, attributeColumns: attributes,
                links: links, sources: sources)
        }
        // Every to-one foreign key column, by the root it points into.
        for e in schema.entities {
            guard let p = plans[e.name] else { continue }
            for (i, link) in p.links.enumerated() {
                guard case .toOne(let fk, let ent, let order, let root) = link,
                    e.definition.relationships.contains(where: { $0.name == e.relationships[i].name })
                else { continue }
                incoming[root, default: []].append((p.table.name, fk, ent, order))
            }
        }
        var sides: [String: Set<String>] = [:]
        for p in plans.values {
            for case .join(let link) in p.links { sides[link.table, default: []].insert(link.mine) }
        }
        var writers: [String: String] = [:]
        for t in layout.tables {
            guard case .join = t.kind, let first = t.columns.first?.name, sides[t.name]?.contains(first) == true else { continue }
            writers[t.name] = first
        }
        bulkJoinWriters = writers
        entities = plans
        self.tables = tables
        self.incoming = incoming
        self.joinColumns = joinColumns
        self.rootNumbers = rootNumbers
    }
}
