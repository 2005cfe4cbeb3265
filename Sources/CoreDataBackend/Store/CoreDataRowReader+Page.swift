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
            guard sqlite3_column_type(s, Int32(pkAt)) == SQLITE_INTEGER else {
                throw StoreError.corruptStore(url, reason: "table \(table.name) has a row without an integer Z_PK")
            }
            let pk = sqlite3_column_int64(s, Int32(pkAt))
            guard sqlite3_column_type(s, Int32(entAt)) == SQLITE_INTEGER, sqlite3_column_int64(s, Int32(entAt)) == ep.number else {
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
                    toOne.append(sqlite3_column_type(s, Int32(at)) == SQLITE_INTEGER ? sqlite3_column_int64(s, Int32(at)) : nil)
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
        // An ordered to-many read by key with its positions beside it: its members come in key order, as the
        // foreign key's index holds them, and are put in list order here, so that SQLite sorts nothing.
        if let sql = Self.positionedSQL(link), let runs = try positionedRuns(sql, owners: owners) { return runs }
        return try runs(owners: owners) { Self.relatedSQL(link, keys: $0) }
    }

    /// The runs the query `sql(keys)` returns for `owners` (see ``relatedSQL(_:keys:)``); with `positions`, its
    /// third column, each member's position, is appended there.
    private func runs(owners: [Int64], positions: UnsafeMutablePointer<[Int64]>? = nil,
                      _ sql: (_ keys: Int) -> String?) throws -> Runs {
        var builder = RunsBuilder(owners: owners, positions: positions)
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

    /// Gathers (owner, member[, position]) rows, which come ordered by owner, into ``Runs``.
    private struct RunsBuilder {
        let owners: [Int64]
        let positions: UnsafeMutablePointer<[Int64]>?
        var runs: Runs
        /// The owner the rows have reached.
        var at = 0

        init(owners: [Int64], positions: UnsafeMutablePointer<[Int64]>?) {
            self.owners = owners
            self.positions = positions
            runs = Runs(starts: [Int](repeating: 0, count: owners.count + 1))
            runs.members.reserveCapacity(owners.count)
        }

        mutating func add(_ s: OpaquePointer) {
            guard sqlite3_column_type(s, 0) == SQLITE_INTEGER, sqlite3_column_type(s, 1) == SQLITE_INTEGER else { return }
            let owner = sqlite3_column_int64(s, 0)
            while at < owners.count, owners[at] < owner {
                at += 1
                runs.starts[at] = runs.members.count
            }
            // An owner in the range that is not one of the page's (another entity of the same table).
            guard at < owners.count, owners[at] == owner else { return }
            runs.members.append(sqlite3_column_int64(s, 1))
            // A position that is not an integer compares as SQL compares it: the caller then asks SQL to sort.
            positions?.pointee.append(sqlite3_column_type(s, 2) == SQLITE_INTEGER ? sqlite3_column_int64(s, 2) : .max)
        }

        mutating func finish() -> Runs {
            while at < owners.count {
                at += 1
                runs.starts[at] = runs.members.count
            }
            return runs
        }
    }

    /// The runs of an ordered to-many read by ``positionedSQL(_:)``, each put in list order (position, then key,
    /// as ``relatedSQL(_:keys:)`` sorts them); `nil` when a position is not an integer.
    private func positionedRuns(_ sql: (_ keys: Int) -> String?, owners: [Int64]) throws -> Runs? {
        var positions: [Int64] = []
        var runs = try withUnsafeMutablePointer(to: &positions) { try self.runs(owners: owners, positions: $0, sql) }
        guard !positions.contains(.max) else { return nil }
        for n in owners.indices {
            let range = runs.starts[n]..<runs.starts[n + 1]
            guard range.count > 1, !zip(positions[range], positions[range].dropFirst()).allSatisfy({ $0.0 <= $0.1 }) else {
                continue
            }
            // Members arrive in key order: a stable sort by position gives position, then key.
            let sorted = zip(positions[range], runs.members[range]).enumerated()
                .sorted { ($0.element.0, $0.offset) < ($1.element.0, $1.offset) }
            for (i, entry) in zip(range, sorted) { runs.members[i] = entry.element.1 }
        }
        return runs
    }

    /// For an ordered to-many kept in its members' rows: the query of (owner, member, position) for `keys` owner
    /// keys (`0`: a range, as in ``relatedSQL(_:keys:)``) in owner and then member key order, which the foreign
    /// key's index gives without a sort; `nil` for other links.
    static func positionedSQL(_ link: CoreDataReadPlan.Link) -> ((_ keys: Int) -> String?)? {
        guard case .referencing(let table, let fk, let order?, _) = link else { return nil }
        let q = CoreDataSQL.quoted
        return { keys in
            let owners = keys == 0 ? "\(q(fk)) BETWEEN ? AND ?" : "\(q(fk)) IN (\(CoreDataSQL.placeholders(keys)))"
            return "SELECT \(q(fk)), Z_PK, ifnull(\(q(order)), 0) FROM \(q(table)) WHERE \(owners) ORDER BY \(q(fk)), Z_PK"
        }
    }

    /// The canonical text (``DecimalText/string(for:)``) of the decimal that `d`'s shortest text spells, as the record
    /// path reads a REAL decimal column; `nil` for a value that is not finite.
    static func decimalText(of d: Double) -> String? {
        guard d.isFinite else { return nil }
        let shortest = "\(d)"
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
    private static func appendDirectly(
        _ s: OpaquePointer, _ c: Int32, _ attributeType: AttributeType, _ allowsExternal: Bool, to page: inout RecordPage
    ) -> Bool {
        let type = sqlite3_column_type(s, c)
        if type == SQLITE_NULL {
            page.appendNull()
            return true
        }
        switch attributeType {
        case .integer16, .integer32, .integer64, .boolean:
            guard type == SQLITE_INTEGER else { return false }
            let v = sqlite3_column_int64(s, c)
            switch attributeType {
            case .integer16:
                guard Int16(exactly: v) != nil else { return false }
                page.appendInteger(v, tag: .integer16)
            case .integer32:
                guard Int32(exactly: v) != nil else { return false }
                page.appendInteger(v, tag: .integer32)
            case .integer64: page.appendInteger(v, tag: .integer64)
            default: page.appendBoolean(v != 0)
            }
            return true
        case .double, .float, .date:
            guard type == SQLITE_FLOAT else { return false }
            let d = sqlite3_column_double(s, c)
            switch attributeType {
            case .double: page.appendDouble(d, tag: .double)
            case .float: page.appendFloat(Float(d))
            default: page.appendDouble(d, tag: .date)
            }
            return true
        case .string:
            guard type == SQLITE_TEXT else { return false }
            let n = Int(sqlite3_column_bytes(s, c))
            guard let p = sqlite3_column_text(s, c) else { return false }
            let bytes = UnsafeRawBufferPointer(start: p, count: n)
            // ASCII is valid UTF-8 as it stands; anything else is decoded (and repaired) as the record path does.
            guard !bytes.contains(where: { $0 >= 0x80 }) else { return false }
            page.appendBytes(bytes, tag: .string)
            return true
        case .uuid:
            guard type == SQLITE_BLOB, sqlite3_column_bytes(s, c) == 16, let p = sqlite3_column_blob(s, c) else { return false }
            let b = UnsafeRawBufferPointer(start: p, count: 16)
            page.appendUUID(UUID(uuid: (b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7],
                                        b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15])))
            return true
        case .binary, .transformable:
            guard type == SQLITE_BLOB, !allowsExternal else { return false }
            let n = Int(sqlite3_column_bytes(s, c))
            page.appendBytes(UnsafeRawBufferPointer(start: sqlite3_column_blob(s, c), count: n), tag: .binary)
            return true
        case .decimal:
            // A REAL as the record path reads it (the double's shortest text as a decimal), in its canonical text.
            guard type == SQLITE_FLOAT else { return false }
            let d = sqlite3_column_double(s, c)
            guard var text = Self.decimalText(of: d) else { return false }
            text.withUTF8 { page.appendBytes(UnsafeRawBufferPointer($0), tag: .decimal) }
            return true
        case .uri:
            // Plain URI text is what URL(string:) keeps as its absoluteString; anything else takes the record path.
            guard type == SQLITE_TEXT, let p = sqlite3_column_text(s, c) else { return false }
            let bytes = UnsafeRawBufferPointer(start: p, count: Int(sqlite3_column_bytes(s, c)))
            guard PlainURIText.isPlain(bytes) else { return false }
            page.appendBytes(bytes, tag: .uri)
            return true
        }
    }
}
