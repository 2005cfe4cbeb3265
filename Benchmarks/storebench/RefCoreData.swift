import BenchSQLite
import Foundation

/// The Core Data read reference: what a hand-written C program costs to read a Core Data store whole *and* to read
/// every to-many relationship in it, which Core Data keeps on the members' side, not in the owner's row.
///
/// A program that converts a Core Data store to a record store has to give each owner its list of members. With
/// memory flat in the store's size (no map of every member held until the end), that is a read of each relationship
/// from its members' side in owner order, beside the rows: the to-one foreign key's index (an ordered relationship's
/// positions with it), and a join table once in each direction. This reference does exactly those reads, found in the
/// store's layout alone (no model, none of this package's code):
/// - every table's rows, every column (``RefSQLite/read(_:)``);
/// - for every foreign-key index Core Data made (`Z<TABLE>_<COLUMN>_INDEX`), the pairs (owner, member) in owner
///   order from the index alone; when the relationship is ordered, the position (`Z_FOK_<COLUMN>`) of each member of
///   a list of two or more, looked up by key, and the list sorted by it;
/// - for every join table (`Z_<n><NAME>`), its rows in the order of each of its two key columns.
///
/// A one-to-one's foreign key is read too, though its other side needs no list; the dataset this runs on has none.
enum RefCoreData {
    /// Reads the store at `path` whole (rows and to-manys from their members' side); returns a checksum.
    static func read(_ path: String) throws -> UInt64 {
        let c = try RefSQLite.Connection(path, readOnly: true)
        var sum = try RefSQLite.read(c)
        for read in try memberSideReads(c) {
            let stmt = try c.prepare(read.sql)
            defer { sqlite3_finalize(stmt) }
            guard let positionSQL = read.positionSQL else {
                let columns = sqlite3_column_count(stmt)
                while sqlite3_step(stmt) == SQLITE_ROW {
                    for i in 0..<columns { sum &+= UInt64(bitPattern: sqlite3_column_int64(stmt, i)) }
                }
                continue
            }
            // An ordered relationship: (owner, member) from the covering index, and the positions of the members of
            // lists of two or more looked up by key and sorted (a list of one is in order whatever its position).
            let position = try c.prepare(positionSQL)
            defer { sqlite3_finalize(position) }
            var owner: Int64?
            var members: [Int64] = []
            var ordered: [(position: Int64, key: Int64)] = []
            func finishList() {
                defer { members.removeAll(keepingCapacity: true) }
                guard members.count > 1 else {
                    sum &+= UInt64(bitPattern: members.first ?? 0)
                    return
                }
                ordered.removeAll(keepingCapacity: true)
                for key in members {
                    sqlite3_bind_int64(position, 1, key)
                    let at = sqlite3_step(position) == SQLITE_ROW ? sqlite3_column_int64(position, 0) : 0
                    sqlite3_reset(position)
                    ordered.append((at, key))
                }
                ordered.sort { ($0.position, $0.key) < ($1.position, $1.key) }
                for (i, entry) in ordered.enumerated() { sum &+= UInt64(bitPattern: entry.key) &* UInt64(i + 1) }
            }
            while sqlite3_step(stmt) == SQLITE_ROW {
                let o = sqlite3_column_int64(stmt, 0)
                if o != owner {
                    finishList()
                    owner = o
                    sum &+= UInt64(bitPattern: o)
                }
                members.append(sqlite3_column_int64(stmt, 1))
            }
            finishList()
        }
        return sum
    }

    /// A read of one to-many from its members' side: `sql` gives (owner, member) rows in owner order; for an ordered
    /// relationship, `positionSQL` gives one member's position by its key.
    struct MemberSideRead {
        var sql: String
        var positionSQL: String?
    }

    /// The queries that read every to-many of the store at `c` from its members' side, in owner order.
    static func memberSideReads(_ c: RefSQLite.Connection) throws -> [MemberSideRead] {
        let q = RefSQLite.quote
        var reads: [MemberSideRead] = []
        let objects = try c.strings("SELECT type, name, tbl_name FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' ORDER BY rowid")
        let tables = Set(objects.filter { $0[0] == "table" }.compactMap { $0[1] })
        func isJoinTable(_ name: String) -> Bool { name.hasPrefix("Z_") && name.dropFirst(2).first?.isNumber == true }
        for object in objects where object[0] == "index" {
            guard let name = object[1], let table = object[2], !isJoinTable(table), name.hasPrefix(table + "_"),
                name.hasSuffix("_INDEX") else { continue }
            let column = String(name.dropFirst(table.count + 1).dropLast("_INDEX".count))
            let columns = try c.strings("PRAGMA table_info(\(q(table)))").compactMap { $0[1] }
            // `Z_ENT`'s index (a table of a hierarchy has one) leads to no relationship.
            guard columns.contains(column), !column.hasPrefix("Z_") else { continue }
            let position = "Z_FOK_" + column.dropFirst()
            reads.append(MemberSideRead(
                sql: "SELECT \(q(column)), Z_PK FROM \(q(table)) WHERE \(q(column)) IS NOT NULL ORDER BY \(q(column)), Z_PK",
                positionSQL: columns.contains(position)
                    ? "SELECT ifnull(\(q(position)), 0) FROM \(q(table)) WHERE Z_PK = ?" : nil))
        }
        for table in tables.sorted() where isJoinTable(table) {
            let keys = try c.strings("PRAGMA table_info(\(q(table)))").compactMap { $0[1] }.filter { !$0.hasPrefix("Z_FOK") }
            guard keys.count == 2 else { continue }
            for (a, b) in [(keys[0], keys[1]), (keys[1], keys[0])] {
                reads.append(MemberSideRead(sql: "SELECT \(q(a)), \(q(b)) FROM \(q(table)) ORDER BY \(q(a)), \(q(b))"))
            }
        }
        return reads
    }
}
