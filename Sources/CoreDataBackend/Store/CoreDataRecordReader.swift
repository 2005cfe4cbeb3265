import Foundation
@_spi(BackendKit) import StoreAPI

/// Converts a Core Data store's stored values to the framework's (``value(_:_:table:pk:)``: Core Data's encodings,
/// external binary data) and reads its persistent history; ``CoreDataRowReader`` reads the rows.
///
/// Column names are taken from the columns that exist (`PRAGMA table_info`), never computed blindly: Core Data
/// appends a counter when two properties of one inheritance tree map to the same name, and which property gets
/// which suffix is unverified (see ``CoreDataColumnNames``).
struct CoreDataRecordReader {
    /// Made once: a locale made per value was a measurable part of reading decimals.
    private static let posix = Locale(identifier: "en_US_POSIX")
    let url: URL
    let db: ReadOnlyDatabase
    let model: CoreDataModel
    let schema: Schema
    let storeUUID: UUID
    let tables: Set<String>

    // MARK: History

    /// Core Data's persistent history (`ATRANSACTION`, `ACHANGE`, `ATRANSACTIONSTRING`), when the store has it, as the
    /// framework's transactions: token = `ATRANSACTION.Z_PK`, timestamp = `ZTIMESTAMP` (seconds since 2001), author =
    /// `ZAUTHOR` or the string `ZAUTHORTS` points at (context, process and bundle names alike from `ZCONTEXTNAME`,
    /// `ZPROCESSID`, `ZBUNDLEID` and their `…TS` keys); one change per `ACHANGE` row (`ZCHANGETYPE` 0 insert, 1 update,
    /// 2 delete) naming the record by `ZENTITY` (a `Z_ENT`) and `ZENTITYPK`, with its global identifier derived as
    /// the record's (its kept one, ``CoreDataGlobalIDTable``, when it has one). An update's changed keys are
    /// `ZCOLUMNS` decoded in ``CoreDataHistoryColumns``'s unverified layout; the `ZTOMBSTONE<n>` columns are not
    /// decoded (tombstones are left empty). Only the transactions after `token` are read (all without one).
    func readHistory(after token: Int64? = nil) throws(StoreError) -> [HistoryTransaction] {
        // Transaction keys are positive: everything is after 0. Only the rows after `token` are read.
        let after = max(0, token ?? 0)
        // Read now, not at open: a save may have added the tables since (CoreDataHistoryWriter).
        let tables = try db.tableNames()
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
        // Each name is a text column or a key into ATRANSACTIONSTRING (the `…TS` column); stores have had either.
        let names = ["ZAUTHOR", "ZCONTEXTNAME", "ZPROCESSID", "ZBUNDLEID"].flatMap { name in
            [name, name + "TS"].map { txColumns.contains($0) ? $0 : "NULL" }
        }
        var changes: [Int64: [HistoryChange]] = [:]
        var named: [String: Set<Int64>] = [:]
        let changeColumns = Set(try db.rows("PRAGMA table_info(ACHANGE)").compactMap { $0.count > 1 ? $0[1].text : nil })
        let bitmap = changeColumns.contains("ZCOLUMNS") ? "ZCOLUMNS" : "NULL"
        for r in try db.rows("SELECT Z_PK, ZCHANGETYPE, ZENTITY, ZENTITYPK, ZTRANSACTIONID, \(bitmap) FROM ACHANGE WHERE ZTRANSACTIONID > \(after) ORDER BY Z_PK") {
            guard r.count == 6, let pk = r[0].int, let type = r[1].int, let ent = r[2].int, let key = r[3].int,
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
            var changed: [String] = []
            if kind == .update, let columns = r[5].bytes { changed = CoreDataHistoryColumns.names(Array(columns), of: entity) }
            changes[tx, default: []].append(HistoryChange(
                kind: kind, entity: name, primaryKey: key,
                globalID: CoreDataGlobalID.make(store: storeUUID, root: entity.rootName, primaryKey: key),
                changedKeys: changed))
            named[entity.rootName, default: []].insert(key)
        }
        // The identifiers kept for the records the changes name replace the derived ones.
        let kept = try CoreDataGlobalIDTable.kept(db, keys: named)
        if !kept.isEmpty {
            for (tx, list) in changes {
                changes[tx] = list.map { change in
                    var c = change
                    if let root = schema.entity(named: c.entity)?.rootName, let id = kept[root]?[c.primaryKey] { c.globalID = id }
                    return c
                }
            }
        }
        var out: [HistoryTransaction] = []
        let select = "SELECT Z_PK, ZTIMESTAMP, \(names.joined(separator: ", ")) FROM ATRANSACTION WHERE Z_PK > \(after) ORDER BY Z_PK"
        for r in try db.rows(select) {
            guard r.count == 2 + names.count, let token = r[0].int, token > 0 else {
                throw .corruptStore(url, reason: "ATRANSACTION has a row without a positive integer Z_PK")
            }
            let seconds = r[1].real ?? 0
            func name(_ i: Int) -> String? { r[2 + 2 * i].text ?? r[3 + 2 * i].int.flatMap { strings[$0] } }
            out.append(HistoryTransaction(
                token: token, timestamp: Date(timeIntervalSinceReferenceDate: seconds), author: name(0),
                contextName: name(1), processName: name(2), bundleIdentifier: name(3), changes: changes[token] ?? []))
        }
        return out
    }

    // MARK: Values

    func value(
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
                guard d.isFinite, let dec = DecimalText.decimal(from: "\(d)") else {
                    throw bad("\(d)")
                }
                return .decimal(dec)
            case .text(let s):
                // Foundation's parse as the fallback: it also takes text with trailing characters, which the fast
                // parser refuses.
                guard let dec = DecimalText.decimal(from: s) ?? Decimal(string: s, locale: Self.posix) else { throw bad("'\(s)'") }
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
