import Foundation
@_spi(BackendKit) import StoreAPI

/// Reads every record of a Core Data store into the framework's `Record`s, mapping Core Data's layout exactly:
/// one table per root entity (`Z` + uppercased name) holding its sub-entities told apart by `Z_ENT`, attribute and
/// to-one columns, to-many relationships through the inverse's foreign key (ordered by its `Z_FOK_` column) and
/// many-to-many join tables.
///
/// Column names are taken from the columns that exist (`PRAGMA table_info`), never computed blindly: Core Data
/// appends a counter when two properties of one inheritance tree map to the same name, and which property gets
/// which suffix is unverified (see ``CoreDataColumnNames``).
struct CoreDataRecordReader {
    let url: URL
    let db: ReadOnlyDatabase
    let model: CoreDataModel
    let schema: Schema
    let storeUUID: UUID
    let tables: Set<String>

    /// One root entity's table, read whole.
    struct Table {
        var name: String
        var columns: [String: Int]
        var rows: [[ReadOnlyDatabase.Value]]
        /// Entity name → property name → column, for every entity of the hierarchy (inherited properties included).
        var propertyColumns: [String: [String: String]]
    }

    /// Reads every record, in table and primary-key order.
    func readAll() throws(StoreError) -> [Record] {
        let numbers = model.entityNumbers()
        var entityByNumber: [Int64: String] = [:]
        for (name, n) in numbers { entityByNumber[Int64(n)] = name }
        var loaded: [String: Table] = [:]
        for root in schema.rootEntities {
            let table = "Z" + root.name.uppercased()
            // A store of one configuration holds the tables of its entities only.
            guard tables.contains(table) else { continue }
            loaded[root.name] = try readTable(table, root: root)
        }
        var index = ForeignKeyIndex()
        var records: [Record] = []
        for root in schema.rootEntities {
            guard let t = loaded[root.name] else { continue }
            guard let pkAt = t.columns["Z_PK"], let entAt = t.columns["Z_ENT"] else {
                throw .corruptStore(url, reason: "table \(t.name) has no Z_PK or Z_ENT column")
            }
            for row in t.rows {
                guard let pk = row[pkAt].int else {
                    throw .corruptStore(url, reason: "table \(t.name) has a row without an integer Z_PK")
                }
                guard let ent = row[entAt].int, let name = entityByNumber[ent], let entity = schema.entity(named: name),
                    entity.rootName == root.name
                else {
                    throw .corruptStore(url, reason: "\(t.name) row Z_PK \(pk): Z_ENT \(row[entAt]) is no entity of the "
                        + "\(root.name) hierarchy in the model")
                }
                let columns = t.propertyColumns[name] ?? [:]
                var attributes: [StoreValue] = []
                attributes.reserveCapacity(entity.attributes.count)
                for a in entity.attributes {
                    guard let column = columns[a.name], let at = t.columns[column] else {
                        throw .corruptStore(url, reason: "table \(t.name) has no column for \(name).\(a.name)")
                    }
                    attributes.append(try value(row[at], a, table: t.name, pk: pk))
                }
                var relationships: [RelationshipValue] = []
                for r in entity.relationships {
                    relationships.append(try relationship(r, of: entity, pk: pk, row: row, table: t, loaded: loaded,
                                                          numbers: numbers, index: &index))
                }
                records.append(Record(
                    entity: name, primaryKey: pk,
                    globalID: CoreDataGlobalID.make(store: storeUUID, root: root.name, primaryKey: pk),
                    attributes: attributes, relationships: relationships))
            }
        }
        return records
    }

    // MARK: History

    /// Core Data's persistent history (`ATRANSACTION`, `ACHANGE`, `ATRANSACTIONSTRING`), when the store has it, as the
    /// framework's transactions: token = `ATRANSACTION.Z_PK`, timestamp = `ZTIMESTAMP` (seconds since 2001), author =
    /// `ZAUTHOR` or the string `ZAUTHORTS` points at; one change per `ACHANGE` row (`ZCHANGETYPE` 0 insert, 1 update,
    /// 2 delete) naming the record by `ZENTITY` (a `Z_ENT`) and `ZENTITYPK`, with its global identifier derived as
    /// the record's. [unverified] `ZCOLUMNS`, the bitmap of an update's changed columns, and the `ZTOMBSTONE<n>`
    /// columns are not decoded: changed keys and tombstones are left empty.
    func readHistory() throws(StoreError) -> [HistoryTransaction] {
        guard tables.contains("ATRANSACTION"), tables.contains("ACHANGE") else { return [] }
        var entityByNumber: [Int64: String] = [:]
        for (name, n) in model.entityNumbers() { entityByNumber[Int64(n)] = name }
        var strings: [Int64: String] = [:]
        if tables.contains("ATRANSACTIONSTRING") {
            for r in try db.rows("SELECT Z_PK, ZNAME FROM ATRANSACTIONSTRING") {
                if r.count == 2, let k = r[0].int, let name = r[1].text { strings[k] = name }
            }
        }
        let txColumns = Set(try db.rows("PRAGMA table_info(ATRANSACTION)").compactMap { $0.count > 1 ? $0[1].text : nil })
        let author = txColumns.contains("ZAUTHOR") ? "ZAUTHOR" : "NULL"
        let authorTS = txColumns.contains("ZAUTHORTS") ? "ZAUTHORTS" : "NULL"
        var changes: [Int64: [HistoryChange]] = [:]
        for r in try db.rows("SELECT Z_PK, ZCHANGETYPE, ZENTITY, ZENTITYPK, ZTRANSACTIONID FROM ACHANGE ORDER BY Z_PK") {
            guard r.count == 5, let pk = r[0].int, let type = r[1].int, let ent = r[2].int, let key = r[3].int,
                let tx = r[4].int
            else {
                throw .corruptStore(url, reason: "ACHANGE has a row without integer Z_PK, ZCHANGETYPE, ZENTITY, ZENTITYPK and ZTRANSACTIONID")
            }
            let kind: HistoryChange.Kind
            switch type {
            case 0: kind = .insert
            case 1: kind = .update
            case 2: kind = .delete
            default: throw .corruptStore(url, reason: "ACHANGE row Z_PK \(pk): unknown ZCHANGETYPE \(type)")
            }
            guard let name = entityByNumber[ent], let entity = schema.entity(named: name) else {
                throw .corruptStore(url, reason: "ACHANGE row Z_PK \(pk): ZENTITY \(ent) is no entity of the model")
            }
            changes[tx, default: []].append(HistoryChange(
                kind: kind, entity: name, primaryKey: key,
                globalID: CoreDataGlobalID.make(store: storeUUID, root: entity.rootName, primaryKey: key)))
        }
        var out: [HistoryTransaction] = []
        for r in try db.rows("SELECT Z_PK, ZTIMESTAMP, \(author), \(authorTS) FROM ATRANSACTION ORDER BY Z_PK") {
            guard r.count == 4, let token = r[0].int, token > 0 else {
                throw .corruptStore(url, reason: "ATRANSACTION has a row without a positive integer Z_PK")
            }
            let seconds = r[1].real ?? 0
            let name = r[2].text ?? r[3].int.flatMap { strings[$0] }
            out.append(HistoryTransaction(
                token: token, timestamp: Date(timeIntervalSinceReferenceDate: seconds), author: name,
                changes: changes[token] ?? []))
        }
        return out
    }

    // MARK: Tables and columns

    private func readTable(_ table: String, root: Entity) throws(StoreError) -> Table {
        let info = try db.rows("PRAGMA table_info(\(quoted(table)))")
        let names = info.compactMap { $0.count > 1 ? $0[1].text : nil }
        var columns: [String: Int] = [:]
        for (i, n) in names.enumerated() { columns[n] = i }
        let list = names.map(quoted).joined(separator: ", ")
        let rows = try db.rows("SELECT \(list) FROM \(quoted(table)) ORDER BY Z_PK")
        let propertyColumns = CoreDataColumnNames.columns(
            model: model, hierarchy: root.hierarchyNames, existing: Set(names))
        return Table(name: table, columns: columns, rows: rows, propertyColumns: propertyColumns)
    }

    private func quoted(_ name: String) -> String { "\"" + name.replacingOccurrences(of: "\"", with: "\"\"") + "\"" }

    // MARK: Relationships

    /// Rows of a table grouped by the value of one foreign-key column, each group in `Z_FOK_` (then key) order.
    struct ForeignKeyIndex {
        var groups: [String: [Int64: [Int64]]] = [:]
    }

    private func relationship(
        _ r: RelationshipDescription, of entity: Entity, pk: Int64, row: [ReadOnlyDatabase.Value], table: Table,
        loaded: [String: Table], numbers: [String: Int], index: inout ForeignKeyIndex
    ) throws(StoreError) -> RelationshipValue {
        let place = "\(entity.name).\(r.name)"
        guard let destination = schema.entity(named: r.destination) else {
            throw .corruptStore(url, reason: "\(place): destination \(r.destination) is not in the model")
        }
        let inverse = r.inverse.flatMap { destination.relationship($0) }
        if !r.isToMany {
            if let column = table.propertyColumns[entity.name]?[r.name], let at = table.columns[column] {
                return .toOne(row[at].int)
            }
            // A one-to-one keeps its key on one side only; this is the other side.
            if let inverse, !inverse.isToMany, let dest = loaded[destination.rootName] {
                return .toOne(try referencing(dest, entity: destination.name, property: inverse.name, pk: pk,
                                              ordered: false, index: &index).first)
            }
            throw .corruptStore(url, reason: "\(place): no foreign-key column \(table.name).Z\(r.name.uppercased())")
        }
        if let inverse, !inverse.isToMany {
            guard let dest = loaded[destination.rootName] else { return .toMany([]) }
            return .toMany(try referencing(dest, entity: destination.name, property: inverse.name, pk: pk,
                                           ordered: r.isOrdered, index: &index))
        }
        if let inverse {
            return .toMany(try joined(r, inverse: inverse, pk: pk, place: place, index: &index))
        }
        // [unverified] A to-many without an inverse keeps a hidden key in the destination table,
        // `Z<source Z_ENT><REL>`; no corpus store has one.
        guard let dest = loaded[destination.rootName] else { return .toMany([]) }
        let declaring = entity.definition.relationships.contains { $0.name == r.name }
            ? entity.name : (entity.ancestorNames.first { schema.entity(named: $0)?.definition.relationships.contains { $0.name == r.name } == true } ?? entity.name)
        let column = "Z\(numbers[declaring] ?? 0)\(r.name.uppercased())"
        guard dest.columns[column] != nil else {
            throw .corruptStore(url, reason: "\(place): a to-many without an inverse, but \(dest.name) has no column \(column)")
        }
        return .toMany(try grouped(dest, column: column, fok: nil, pk: pk, index: &index))
    }

    /// The keys of the rows of `dest` whose to-one `property` (of `entity`) points at `pk`.
    private func referencing(
        _ dest: Table, entity: String, property: String, pk: Int64, ordered: Bool, index: inout ForeignKeyIndex
    ) throws(StoreError) -> [Int64] {
        guard let column = dest.propertyColumns[entity]?[property] else {
            throw .corruptStore(url, reason: "table \(dest.name) has no foreign-key column for \(entity).\(property)")
        }
        let fok = "Z_FOK_" + property.uppercased()
        return try grouped(dest, column: column, fok: ordered && dest.columns[fok] != nil ? fok : nil, pk: pk, index: &index)
    }

    private func grouped(
        _ dest: Table, column: String, fok: String?, pk: Int64, index: inout ForeignKeyIndex
    ) throws(StoreError) -> [Int64] {
        let key = "\(dest.name).\(column).\(fok ?? "")"
        if let g = index.groups[key] { return g[pk] ?? [] }
        guard let at = dest.columns[column], let pkAt = dest.columns["Z_PK"] else { return [] }
        let fokAt = fok.flatMap { dest.columns[$0] }
        var members: [Int64: [(order: Int64, pk: Int64)]] = [:]
        for row in dest.rows {
            guard let owner = row[at].int, let key = row[pkAt].int else { continue }
            members[owner, default: []].append((fokAt.flatMap { row[$0].int } ?? 0, key))
        }
        let groups = members.mapValues { list in
            list.sorted { $0.order != $1.order ? $0.order < $1.order : $0.pk < $1.pk }.map(\.pk)
        }
        index.groups[key] = groups
        return groups[pk] ?? []
    }

    /// A many-to-many's keys from its join table, found by its columns: `Z_<n><INVERSE>` holds this side's keys,
    /// `Z_<n><REL>` the other side's, `Z_FOK_<n><REL>` their order when the relationship is ordered.
    private func joined(
        _ r: RelationshipDescription, inverse: RelationshipDescription, pk: Int64, place: String,
        index: inout ForeignKeyIndex
    ) throws(StoreError) -> [Int64] {
        let key = "join.\(place)"
        if let g = index.groups[key] { return g[pk] ?? [] }
        // [unverified] A self-inverse many-to-many names its columns `REFLEXIVE`; no corpus store has one.
        let mine = r.name == inverse.name ? "REFLEXIVE" : inverse.name.uppercased()
        let theirs = r.name.uppercased()
        func match(_ column: String, _ suffix: String) -> Bool {
            guard column.hasPrefix("Z_"), column.hasSuffix(suffix) else { return false }
            let digits = column.dropFirst(2).dropLast(suffix.count)
            return !digits.isEmpty && digits.allSatisfy(\.isNumber)
        }
        for table in tables.sorted() where table.hasPrefix("Z_") && table.dropFirst(2).first?.isNumber == true {
            let names = try db.rows("PRAGMA table_info(\(quoted(table)))").compactMap { $0.count > 1 ? $0[1].text : nil }
            guard let source = names.first(where: { match($0, mine) }),
                let target = names.first(where: { match($0, theirs) && $0 != source })
            else { continue }
            let fok = "Z_FOK_" + target.dropFirst(2)
            let order = r.isOrdered && names.contains(fok) ? quoted(fok) + ", " : ""
            var groups: [Int64: [Int64]] = [:]
            for row in try db.rows("SELECT \(quoted(source)), \(quoted(target)) FROM \(quoted(table)) "
                + "ORDER BY \(quoted(source)), \(order)\(quoted(target))")
            {
                guard row.count == 2, let a = row[0].int, let b = row[1].int else { continue }
                groups[a, default: []].append(b)
            }
            index.groups[key] = groups
            return groups[pk] ?? []
        }
        throw .corruptStore(url, reason: "\(place): no join table with columns Z_<n>\(mine) and Z_<n>\(theirs)")
    }

    // MARK: Values

    private func value(
        _ v: ReadOnlyDatabase.Value, _ a: AttributeDescription, table: String, pk: Int64
    ) throws(StoreError) -> StoreValue {
        func bad(_ what: String) -> StoreError {
            .corruptStore(url, reason: "\(table) row Z_PK \(pk), \(a.name): \(what) in a \(a.type.rawValue) column")
        }
        if case .null = v { return .null }
        switch a.type {
        case .integer16:
            guard let i = v.integral, let n = Int16(exactly: i) else { throw bad("\(v)") }
            return .integer16(n)
        case .integer32:
            guard let i = v.integral, let n = Int32(exactly: i) else { throw bad("\(v)") }
            return .integer32(n)
        case .integer64:
            guard let i = v.integral else { throw bad("\(v)") }
            return .integer64(i)
        case .boolean:
            guard let i = v.integral else { throw bad("\(v)") }
            return .boolean(i != 0)
        case .double:
            guard let d = v.real else { throw bad("\(v)") }
            return .double(d)
        case .float:
            guard let d = v.real else { throw bad("\(v)") }
            return .float(Float(d))
        case .decimal:
            // [unverified] Core Data was seen writing REAL values; the shortest text of the double is the decimal
            // the app stored (a binary expansion would add digits it never had).
            switch v {
            case .integer(let i): return .decimal(Decimal(i))
            case .real(let d):
                guard d.isFinite, let dec = Decimal(string: "\(d)", locale: Locale(identifier: "en_US_POSIX")) else {
                    throw bad("\(d)")
                }
                return .decimal(dec)
            case .text(let s):
                guard let dec = Decimal(string: s, locale: Locale(identifier: "en_US_POSIX")) else { throw bad("'\(s)'") }
                return .decimal(dec)
            default: throw bad("a blob")
            }
        case .date:
            // Seconds since 2001-01-01, REAL in modern stores and INTEGER in old ones.
            guard let d = v.real else { throw bad("\(v)") }
            return .date(Date(timeIntervalSinceReferenceDate: d))
        case .string:
            switch v {
            case .text(let s): return .string(s)
            case .blob(let b): return .string(String(decoding: b, as: UTF8.self))
            case .integer(let i): return .string(String(i))
            case .real(let d): return .string(String(d))
            case .null: return .null
            }
        case .uuid:
            switch v {
            case .blob(let b) where b.count == 16:
                return .uuid(UUID(uuid: (b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7],
                                         b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15])))
            case .text(let s):
                guard let u = UUID(uuidString: s) else { throw bad("'\(s)'") }
                return .uuid(u)
            default: throw bad("\(v)")
            }
        case .uri:
            guard case .text(let s) = v, let u = URL(string: s) else { throw bad("\(v)") }
            return .uri(u)
        case .binary, .transformable:
            guard let bytes = v.bytes else { throw bad("\(v)") }
            if a.allowsExternalBinaryDataStorage {
                return .binary(try CoreDataExternalData.decode(bytes, store: url, table: table, primaryKey: pk, attribute: a.name))
            }
            return .binary(Data(bytes))
        }
    }
}

/// Which column holds each stored property of a hierarchy's table.
///
/// Core Data names a property's column `Z` + its uppercased name; attributes (derived ones included) and to-one
/// relationships of one inheritance tree share one namespace, and when several map to the same name it appends a
/// counter: `ZTITLE`, `ZTITLE1`, `ZTITLE2`. [unverified: which property gets which suffix. This reader gives the
/// plain name to the property declared highest in the tree (then by entity and property name) and the counters in
/// that order, and uses only columns that exist.]
enum CoreDataColumnNames {
    static func columns(model: CoreDataModel, hierarchy: [String], existing: Set<String>) -> [String: [String: String]] {
        struct Member { var depth: Int; var entity: String; var property: String }
        var groups: [String: [Member]] = [:]
        for name in hierarchy {
            guard let e = model.entity(named: name) else { continue }
            let depth = model.lineage(of: e).count
            let stored = e.attributes.filter { !$0.isTransient }.map(\.name)
                + e.relationships.filter { !$0.isTransient && !$0.isToMany }.map(\.name)
            for p in stored { groups["Z" + p.uppercased(), default: []].append(Member(depth: depth, entity: name, property: p)) }
        }
        var declared: [String: [String: String]] = [:]
        for (base, members) in groups {
            let ordered = members.sorted {
                ($0.depth, $0.entity, $0.property) < ($1.depth, $1.entity, $1.property)
            }
            for (i, m) in ordered.enumerated() {
                let column = i == 0 ? base : base + String(i)
                if existing.contains(column) { declared[m.entity, default: [:]][m.property] = column }
            }
        }
        // Each entity sees its own and its ancestors' columns.
        var out: [String: [String: String]] = [:]
        for name in hierarchy {
            guard let e = model.entity(named: name) else { continue }
            var map: [String: String] = [:]
            for level in model.lineage(of: e).reversed() { map.merge(declared[level.name] ?? [:]) { $1 } }
            out[name] = map
        }
        return out
    }
}
