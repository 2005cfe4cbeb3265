import CSQLite
import Foundation
@_spi(BackendKit) import StoreAPI

extension CoreDataRowReader {
    /// The records ``scan(_:after:limit:)`` returns, as one ``RecordPage``: the common values (numbers, dates,
    /// ASCII text, UUIDs, inline binary data) go from the row into the page without becoming Swift values; the
    /// others (decimals, URIs, non-ASCII text, externally stored data, values of an unexpected SQL type) take the
    /// record path's conversion, so a page holds exactly what a scan returns and fails where it fails.
    func scanPage(_ ep: CoreDataReadPlan.EntityPlan, after primaryKey: Int64?, limit: Int) throws -> RecordPage {
        let attributes = ep.entity.attributes
        var page = RecordPage(entity: ep.entity.name, capacity: max(0, min(limit, 10_000)),
                              bytesPerRecord: 16 * max(1, attributes.count))
        guard limit > 0 else { return page }
        let table = ep.table
        guard let pkAt = table.index["Z_PK"], let entAt = table.index["Z_ENT"] else {
            throw StoreError.corruptStore(url, reason: "table \(table.name) has no Z_PK or Z_ENT column")
        }
        for (i, column) in ep.attributeColumns.enumerated() where column == nil {
            throw StoreError.corruptStore(url, reason: "table \(table.name) has no column for \(ep.entity.name).\(attributes[i].name)")
        }
        for case .broken(let reason) in ep.links { throw StoreError.corruptStore(url, reason: reason) }
        let columns = ep.attributeColumns.map { Int32($0?.index ?? 0) }
        let links = ep.links
        // Per attribute, what the direct path needs: a description copied per value cost more than the value.
        let types = attributes.map(\.type)
        let allowsExternal = attributes.map(\.allowsExternalBinaryDataStorage)
        // The rows' to-one keys, record by record (relationships are appended after the rows: to-manys need
        // queries of their own).
        var toOne: [Int64?] = []
        let sql = "SELECT \(table.selectList) FROM \(CoreDataSQL.quoted(table.name)) WHERE Z_ENT = ? AND Z_PK > ? "
            + "ORDER BY Z_PK LIMIT \(limit)"
        let kept = keepsGlobalIDs ? try CoreDataGlobalIDTable.lookup(
            connection, root: ep.entity.rootName,
            keySQL: "SELECT Z_PK FROM \(CoreDataSQL.quoted(table.name)) WHERE Z_ENT = ? AND Z_PK > ? ORDER BY Z_PK LIMIT \(limit)",
            [.integer(ep.number), .integer(primaryKey ?? .min)]) : [:]
        try connection.query(sql, [.integer(ep.number), .integer(primaryKey ?? .min)]) { s in
            guard let pkValue = sqlite3_column_value(s, Int32(pkAt)), sqlite3_value_type(pkValue) == SQLITE_INTEGER else {
                throw StoreError.corruptStore(url, reason: "table \(table.name) has a row without an integer Z_PK")
            }
            let pk = sqlite3_value_int64(pkValue)
            guard let ent = sqlite3_column_value(s, Int32(entAt)), sqlite3_value_type(ent) == SQLITE_INTEGER,
                sqlite3_value_int64(ent) == ep.number
            else {
                throw StoreError.corruptStore(url, reason: "\(table.name) row Z_PK \(pk): Z_ENT is not \(ep.number)")
            }
            page.beginRecord(primaryKey: pk, globalID: kept.isEmpty ? ep.globalID.make(pk) : kept[pk] ?? ep.globalID.make(pk))
            for i in attributes.indices {
                if !Self.appendDirectly(s, columns[i], types[i], allowsExternal[i], to: &page) {
                    page.append(try values.value(SQLiteValue.column(of: s, columns[i]), attributes[i], table: table.name, pk: pk))
                }
            }
            page.endValues()
            for link in links {
                if case .column(let at) = link {
                    let v = sqlite3_column_value(s, Int32(at))
                    toOne.append(v.map(sqlite3_value_type) == SQLITE_INTEGER ? sqlite3_value_int64(v) : nil)
                }
            }
        }
        guard !page.isEmpty else { return page }
        let keys = page.primaryKeys
        var related: [Int: Runs] = [:]
        for (j, link) in links.enumerated() {
            switch link {
            case .referencing, .join: related[j] = try runs(link, owners: keys)
            default: break
            }
        }
        var nextToOne = 0
        for n in keys.indices {
            for (j, link) in links.enumerated() {
                switch link {
                case .column:
                    page.appendToOne(toOne[nextToOne])
                    nextToOne += 1
                case .referencing(_, _, _, let first):
                    let members = related[j]?.of(n) ?? []
                    if first { page.appendToOne(members.first) } else { page.appendToMany(members) }
                case .join:
                    page.appendToMany(related[j]?.of(n) ?? [])
                case .empty(let toMany):
                    if toMany { page.appendToMany([Int64]()) } else { page.appendToOne(nil) }
                case .broken(let reason):
                    throw StoreError.corruptStore(url, reason: reason)
                }
            }
            page.endLinks()
        }
        return page
    }

    /// The related keys of a page's owners in one flat list, owner after owner: no array and no dictionary entry
    /// per owner.
    struct Runs {
        var members: [Int64] = []
        /// `members[starts[n]..<starts[n + 1]]` are those of owner `n`.
        var starts: [Int]

        func of(_ n: Int) -> ArraySlice<Int64> { members[starts[n]..<starts[n + 1]] }
    }

    /// The related keys of `owners` (ascending, as a page's keys are), in relationship order: the rows
    /// ``related(_:owners:)`` reads, which come ordered by owner.
    private func runs(_ link: CoreDataReadPlan.Link, owners: [Int64]) throws -> Runs {
        if case .referencing(let table, let fk, let order?, _) = link,
            let runs = try orderedRuns(table: table, foreignKey: fk, order: order, owners: owners) {
            return runs
        }
        return try runs(owners: owners) { Self.relatedSQL(link, keys: $0) }
    }

    /// The runs the query `sql(keys)` returns for `owners` (see ``relatedSQL(_:keys:)``).
    private func runs(owners: [Int64], _ sql: (_ keys: Int) -> String?) throws -> Runs {
        var builder = RunsBuilder(owners: owners)
        guard let first = owners.first, let last = owners.last else { return builder.runs }
        // The rows go to the builder from closures written out here, not a local function passed on: a local
        // function's captured state is checked for exclusive access at run time, on every row.
        // The page's owners are usually dense in their table (a page is consecutive keys of its entity): one range
        // from the first to the last is then cheaper than lists of keys, and reads few rows of other owners.
        if last &- first < 4 * Int64(owners.count), let sql = sql(0) {
            try connection.query(sql, [.integer(first), .integer(last)]) { builder.add($0) }
        } else {
            for chunk in CoreDataSQL.chunks(owners) {
                guard let sql = sql(chunk.count) else { break }
                try connection.query(sql, chunk) { builder.add($0) }
            }
        }
        return builder.finish()
    }

    /// Gathers (owner, member) rows, which come ordered by owner, into ``Runs``.
    private struct RunsBuilder {
        let owners: [Int64]
        var runs: Runs
        /// The owner the rows have reached.
        var at = 0

        init(owners: [Int64]) {
            self.owners = owners
            runs = Runs(starts: [Int](repeating: 0, count: owners.count + 1))
            runs.members.reserveCapacity(owners.count)
        }

        mutating func add(_ s: OpaquePointer) {
            // Each column fetched once as a value (see `appendDirectly`).
            guard let ownerValue = sqlite3_column_value(s, 0), sqlite3_value_type(ownerValue) == SQLITE_INTEGER,
                let memberValue = sqlite3_column_value(s, 1), sqlite3_value_type(memberValue) == SQLITE_INTEGER
            else { return }
            let owner = sqlite3_value_int64(ownerValue)
            while at < owners.count, owners[at] < owner {
                at += 1
                runs.starts[at] = runs.members.count
            }
            // An owner in the range that is not one of the page's (another entity of the same table).
            guard at < owners.count, owners[at] == owner else { return }
            runs.members.append(sqlite3_value_int64(memberValue))
        }

        mutating func finish() -> Runs {
            while at < owners.count {
                at += 1
                runs.starts[at] = runs.members.count
            }
            return runs
        }
    }

    /// The runs of an ordered to-many kept in its members' rows (their positions in `order`), in list order
    /// (position, then key, as ``relatedSQL(_:keys:)`` sorts them); `nil` when a position is not an integer, so that
    /// the caller asks SQL to sort.
    ///
    /// The members come from the foreign key's index alone, in key order, without a look-up of each member's row:
    /// only the members of lists of two or more need their positions (a list of one is in order whatever its
    /// position), and only those are read, by key, and put in order here.
    private func orderedRuns(table: String, foreignKey fk: String, order: String, owners: [Int64]) throws -> Runs? {
        let q = CoreDataSQL.quoted
        var runs = try runs(owners: owners) { keys in
            let owned = keys == 0 ? "\(q(fk)) BETWEEN ? AND ?" : "\(q(fk)) IN (\(CoreDataSQL.placeholders(keys)))"
            return "SELECT \(q(fk)), Z_PK FROM \(q(table)) WHERE \(owned) ORDER BY \(q(fk)), Z_PK"
        }
        var listed: [Int64] = []
        for n in owners.indices where runs.starts[n + 1] - runs.starts[n] > 1 {
            listed.append(contentsOf: runs.members[runs.starts[n]..<runs.starts[n + 1]])
        }
        guard !listed.isEmpty else { return runs }
        var positions: [Int64: Int64] = [:]
        positions.reserveCapacity(listed.count)
        var allIntegers = true
        for chunk in CoreDataSQL.chunks(listed) {
            let sql = "SELECT Z_PK, ifnull(\(q(order)), 0) FROM \(q(table)) WHERE Z_PK IN (\(CoreDataSQL.placeholders(chunk.count)))"
            try connection.query(sql, chunk) { s in
                guard let key = sqlite3_column_value(s, 0), sqlite3_value_type(key) == SQLITE_INTEGER,
                    let position = sqlite3_column_value(s, 1), sqlite3_value_type(position) == SQLITE_INTEGER
                else {
                    allIntegers = false
                    return
                }
                positions[sqlite3_value_int64(key)] = sqlite3_value_int64(position)
            }
        }
        guard allIntegers else { return nil }
        for n in owners.indices {
            let range = runs.starts[n]..<runs.starts[n + 1]
            guard range.count > 1 else { continue }
            // Keys are unique in a list: ordering by (position, key) is the stable sort by position of members
            // that arrive in key order.
            let ordered = runs.members[range].map { (position: positions[$0] ?? 0, key: $0) }
            guard !zip(ordered, ordered.dropFirst()).allSatisfy({ pair in
                (pair.0.position, pair.0.key) < (pair.1.position, pair.1.key)
            }) else { continue }
            let sorted = ordered.sorted { ($0.position, $0.key) < ($1.position, $1.key) }
            for (i, entry) in zip(range, sorted) { runs.members[i] = entry.key }
        }
        return runs
    }

    /// The canonical text (``DecimalText/string(for:)``) of the decimal that `d`'s shortest text spells, as the record
    /// path reads a REAL decimal column; `nil` for a value that is not finite.
    static func decimalText(of d: Double) -> String? {
        guard d.isFinite else { return nil }
        let shortest = d.description
        // Plain digits with a point (most values): canonical once the fraction's trailing zeros, and a point left
        // with nothing after it, are gone. Parsing the text into a decimal and writing it again costs more than the
        // rest of the value's reading.
        if let plain = Self.plainDecimalText(shortest) { return plain }
        return DecimalText.decimal(from: shortest).map(DecimalText.string(for:))
    }

    /// `text` (`[-]digits.digits`) without the fraction's trailing zeros and a bare point, `"0"` for a zero;
    /// `nil` for any other form (exponent notation).
    static func plainDecimalText(_ text: String) -> String? {
        var text = text
        return text.withUTF8 { b -> String? in
            let sign = b.first == UInt8(ascii: "-") ? 1 : 0
            var point = -1
            for i in sign..<b.count {
                let c = b[i]
                if c == UInt8(ascii: ".") {
                    guard point < 0 else { return nil }
                    point = i
                } else if c < UInt8(ascii: "0") || c > UInt8(ascii: "9") {
                    return nil
                }
            }
            guard point > sign, point < b.count - 1 else { return nil }
            var end = b.count
            while b[end - 1] == UInt8(ascii: "0") { end -= 1 }
            if end == point + 1 { end = point }
            guard b[sign..<end].contains(where: { $0 != UInt8(ascii: "0") && $0 != UInt8(ascii: ".") }) else { return "0" }
            return String(decoding: UnsafeBufferPointer(rebasing: b[0..<end]), as: UTF8.self)
        }
    }

    /// Appends column `c` as attribute `a`'s value when it has the SQL type the attribute is normally stored as and
    /// needs no conversion; `false` (nothing appended) otherwise.
    ///
    /// The column is fetched once as a value and read through the value functions: each `sqlite3_column_*` call
    /// looks the column up and checks the statement again, which cost more than the reading when it was done
    /// twice per column (type, then contents). The value is used only while the row is current, on the thread that
    /// holds the store's lock.
    private static func appendDirectly(
        _ s: OpaquePointer, _ c: Int32, _ attributeType: AttributeType, _ allowsExternal: Bool, to page: inout RecordPage
    ) -> Bool {
        guard let v = sqlite3_column_value(s, c) else { return false }
        let type = sqlite3_value_type(v)
        if type == SQLITE_NULL {
            page.appendNull()
            return true
        }
        switch attributeType {
        case .integer16, .integer32, .integer64, .boolean:
            guard type == SQLITE_INTEGER else { return false }
            let n = sqlite3_value_int64(v)
            switch attributeType {
            case .integer16:
                guard Int16(exactly: n) != nil else { return false }
                page.appendInteger(n, tag: .integer16)
            case .integer32:
                guard Int32(exactly: n) != nil else { return false }
                page.appendInteger(n, tag: .integer32)
            case .integer64: page.appendInteger(n, tag: .integer64)
            default: page.appendBoolean(n != 0)
            }
            return true
        case .double, .float, .date:
            guard type == SQLITE_FLOAT else { return false }
            let d = sqlite3_value_double(v)
            switch attributeType {
            case .double: page.appendDouble(d, tag: .double)
            case .float: page.appendFloat(Float(d))
            default: page.appendDouble(d, tag: .date)
            }
            return true
        case .string:
            guard type == SQLITE_TEXT, let p = sqlite3_value_text(v) else { return false }
            let bytes = UnsafeRawBufferPointer(start: p, count: Int(sqlite3_value_bytes(v)))
            // ASCII is valid UTF-8 as it stands; anything else is decoded (and repaired) as the record path does.
            guard !bytes.contains(where: { $0 >= 0x80 }) else { return false }
            page.appendBytes(bytes, tag: .string)
            return true
        case .uuid:
            guard type == SQLITE_BLOB, let p = sqlite3_value_blob(v), sqlite3_value_bytes(v) == 16 else { return false }
            let b = UnsafeRawBufferPointer(start: p, count: 16)
            page.appendUUID(UUID(uuid: (b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7],
                                        b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15])))
            return true
        case .binary, .transformable:
            guard type == SQLITE_BLOB, !allowsExternal else { return false }
            let p = sqlite3_value_blob(v)
            page.appendBytes(UnsafeRawBufferPointer(start: p, count: Int(sqlite3_value_bytes(v))), tag: .binary)
            return true
        case .decimal:
            // A REAL as the record path reads it (the double's shortest text as a decimal), in its canonical text.
            guard type == SQLITE_FLOAT else { return false }
            guard var text = Self.decimalText(of: sqlite3_value_double(v)) else { return false }
            text.withUTF8 { page.appendBytes(UnsafeRawBufferPointer($0), tag: .decimal) }
            return true
        case .uri:
            // Plain URI text is what URL(string:) keeps as its absoluteString; anything else takes the record path.
            guard type == SQLITE_TEXT, let p = sqlite3_value_text(v) else { return false }
            let bytes = UnsafeRawBufferPointer(start: p, count: Int(sqlite3_value_bytes(v)))
            guard PlainURIText.isPlain(bytes) else { return false }
            page.appendBytes(bytes, tag: .uri)
            return true
        }
    }
}
