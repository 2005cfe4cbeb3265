import BenchLMDB
import BenchLibPQ
import Foundation

/// The PostgreSQL references: what a hand-written libpq program costs to do the storage work of each row of the
/// `postgres` section — the same rows, in a table shaped like the store's (`_pk`, `_ent`, `_gid` with its unique
/// index, `_ver`, then the columns in the store's types: strings as UTF-8 `bytea`, dates as `double precision`).
enum RawPostgres {
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    /// One libpq connection.
    final class Connection {
        let conn: OpaquePointer

        init(_ conninfo: String) throws {
            guard let c = PQconnectdb(conninfo), PQstatus(c) == CONNECTION_OK else {
                throw Failure(description: "connecting to the benchmark server failed")
            }
            conn = c
        }

        deinit { PQfinish(conn) }

        var errorMessage: String { String(cString: PQerrorMessage(conn)) }

        /// Runs `sql` (no parameters), expecting no rows, rows it drops, or the start of a COPY.
        func exec(_ sql: String) throws {
            let r = PQexec(conn, sql)
            defer { PQclear(r) }
            let status = PQresultStatus(r)
            guard status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK || status == PGRES_COPY_IN || status == PGRES_COPY_OUT else {
                throw Failure(description: "\(sql.prefix(80)): \(errorMessage)")
            }
        }

        /// The first column of the first row as an integer.
        func integer(_ sql: String) throws -> Int {
            let r = PQexec(conn, sql)
            defer { PQclear(r) }
            guard PQresultStatus(r) == PGRES_TUPLES_OK, PQntuples(r) > 0, let v = PQgetvalue(r, 0, 0) else {
                throw Failure(description: "\(sql.prefix(80)): \(errorMessage)")
            }
            return Int(String(cString: v)) ?? -1
        }
    }

    /// Creates `schema` with table `item` shaped like the store's Item table.
    static func createTable(_ c: Connection, schema: String) throws {
        try c.exec("CREATE SCHEMA \(schema)")
        try c.exec("""
            CREATE TABLE \(schema).item (_pk bigint PRIMARY KEY, _ent integer NOT NULL, _gid uuid NOT NULL, _ver bigint NOT NULL DEFAULT 1,
            number bigint, code integer, price double precision, title bytea, payload bytea, created double precision, active boolean, ref uuid)
            """)
        try c.exec("CREATE UNIQUE INDEX ON \(schema).item (_gid)")
    }

    static let columns = "_pk, _ent, _gid, number, code, price, title, payload, created, active, ref"

    /// `\x` and lowercase hex: `bytea`'s text form.
    static func hex(_ bytes: some Sequence<UInt8>, into out: inout [UInt8]) {
        let digits = Array("0123456789abcdef".utf8)
        out.append(UInt8(ascii: "\\"))
        out.append(UInt8(ascii: "x"))
        for b in bytes {
            out.append(digits[Int(b >> 4)])
            out.append(digits[Int(b & 0xF)])
        }
    }

    static func append(_ s: String, _ out: inout [UInt8]) { out.append(contentsOf: s.utf8) }

    /// `COPY … FROM STDIN` of rows `0..<count` in the text format, in one transaction.
    static func copyText(_ c: Connection, schema: String, count: Int, inputs: BenchData.Inputs, globalIDs: [UUID]) throws {
        try c.exec("BEGIN")
        try c.exec("COPY \(schema).item (\(columns)) FROM STDIN")
        var buffer: [UInt8] = []
        buffer.reserveCapacity(1 << 18 + 1024)
        let payload = Array(BenchData.payload)
        for i in 0..<count {
            append("\(i + 1)\t1\t\(globalIDs[i].uuidString)\t\(i)\t\(Int32(truncatingIfNeeded: i &* 7))\t\(Double(i) * 0.25)\t", &buffer)
            buffer.append(UInt8(ascii: "\\"))  // a backslash in the text format is escaped
            hex(inputs.titles[i].utf8, into: &buffer)
            buffer.append(UInt8(ascii: "\t"))
            buffer.append(UInt8(ascii: "\\"))
            hex(payload, into: &buffer)
            append("\t\(Double(i))\t\(i % 2 == 0 ? "t" : "f")\t\(inputs.refs[i].uuidString)\n", &buffer)
            if buffer.count >= 1 << 18 { try put(c, &buffer) }
        }
        try put(c, &buffer)
        try end(c)
        try c.exec("COMMIT")
    }

    /// The same rows as ``copyText(_:schema:count:inputs:globalIDs:)`` in COPY's binary format (big-endian integers
    /// and doubles, raw bytes, 16-byte UUIDs).
    static func copyBinary(_ c: Connection, schema: String, count: Int, inputs: BenchData.Inputs, globalIDs: [UUID]) throws {
        try c.exec("BEGIN")
        try c.exec("COPY \(schema).item (\(columns)) FROM STDIN (FORMAT binary)")
        var buffer: [UInt8] = Array("PGCOPY\n".utf8) + [0xFF, 0x0D, 0x0A, 0x00] + [0, 0, 0, 0] + [0, 0, 0, 0]
        func int16(_ v: Int16) { withUnsafeBytes(of: v.bigEndian) { buffer.append(contentsOf: $0) } }
        func int32(_ v: Int32) { withUnsafeBytes(of: v.bigEndian) { buffer.append(contentsOf: $0) } }
        func int64(_ v: Int64) { int32(8); withUnsafeBytes(of: v.bigEndian) { buffer.append(contentsOf: $0) } }
        func double(_ v: Double) { int32(8); withUnsafeBytes(of: v.bitPattern.bigEndian) { buffer.append(contentsOf: $0) } }
        func uuid(_ u: UUID) { int32(16); withUnsafeBytes(of: u.uuid) { buffer.append(contentsOf: $0) } }
        let payload = Array(BenchData.payload)
        for i in 0..<count {
            int16(11)
            int64(Int64(i + 1))
            int32(4); int32(1)
            uuid(globalIDs[i])
            int64(Int64(i))
            int32(4); int32(Int32(truncatingIfNeeded: i &* 7))
            double(Double(i) * 0.25)
            let title = inputs.titles[i].utf8
            int32(Int32(title.count)); buffer.append(contentsOf: title)
            int32(Int32(payload.count)); buffer.append(contentsOf: payload)
            double(Double(i))
            int32(1); buffer.append(i % 2 == 0 ? 1 : 0)
            uuid(inputs.refs[i])
            if buffer.count >= 1 << 18 { try put(c, &buffer) }
        }
        int16(-1)
        try put(c, &buffer)
        try end(c)
        try c.exec("COMMIT")
    }

    private static func put(_ c: Connection, _ buffer: inout [UInt8]) throws {
        guard !buffer.isEmpty else { return }
        let rc = buffer.withUnsafeBufferPointer { b in
            b.baseAddress.map { p in p.withMemoryRebound(to: CChar.self, capacity: b.count) { PQputCopyData(c.conn, $0, Int32(b.count)) } } ?? 1
        }
        guard rc == 1 else { throw Failure(description: "PQputCopyData: \(c.errorMessage)") }
        buffer.removeAll(keepingCapacity: true)
    }

    private static func end(_ c: Connection) throws {
        guard PQputCopyEnd(c.conn, nil) == 1 else { throw Failure(description: "PQputCopyEnd: \(c.errorMessage)") }
        var failure: String?
        while let r = PQgetResult(c.conn) {
            if PQresultStatus(r) != PGRES_COMMAND_OK { failure = c.errorMessage }
            PQclear(r)
        }
        if let failure { throw Failure(description: "COPY: \(failure)") }
    }

    /// Rows `0..<count` inserted one by one with a prepared `INSERT` (text parameters) in one transaction.
    static func preparedInsert(_ c: Connection, schema: String, count: Int, inputs: BenchData.Inputs, globalIDs: [UUID]) throws {
        let sql = "INSERT INTO \(schema).item (\(columns)) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)"
        let prepared = PQprepare(c.conn, "ins_\(schema)", sql, 11, nil)
        defer { PQclear(prepared) }
        guard PQresultStatus(prepared) == PGRES_COMMAND_OK else { throw Failure(description: "prepare: \(c.errorMessage)") }
        var payloadHex: [UInt8] = []
        hex(BenchData.payload, into: &payloadHex)
        let payload = String(decoding: payloadHex, as: UTF8.self)
        try c.exec("BEGIN")
        for i in 0..<count {
            var title: [UInt8] = []
            hex(inputs.titles[i].utf8, into: &title)
            let values = [String(i + 1), "1", globalIDs[i].uuidString, String(i), String(Int32(truncatingIfNeeded: i &* 7)),
                          String(Double(i) * 0.25), String(decoding: title, as: UTF8.self), payload, String(Double(i)),
                          i % 2 == 0 ? "t" : "f", inputs.refs[i].uuidString]
            var pointers = values.map { strdup($0) }
            defer { for p in pointers { free(p) } }
            let r = pointers.withUnsafeMutableBufferPointer { b in
                b.baseAddress.flatMap { base in
                    base.withMemoryRebound(to: UnsafePointer<CChar>?.self, capacity: b.count) {
                        PQexecPrepared(c.conn, "ins_\(schema)", 11, $0, nil, nil, 0)
                    }
                }
            }
            defer { PQclear(r) }
            guard PQresultStatus(r) == PGRES_COMMAND_OK else { throw Failure(description: "insert: \(c.errorMessage)") }
        }
        try c.exec("COMMIT")
    }

    /// The same filter as the store's fetch, as SQL with bound values, every value of every row touched. Returns
    /// the rows.
    static func fetch(_ c: Connection, schema: String, from lo: Int, to hi: Int) throws -> Int {
        let sql = "SELECT _pk, _ent, _gid, _ver, number, code, price, title, payload, created, active, ref FROM \(schema).item WHERE number >= $1 AND number < $2 ORDER BY _pk"
        var values = [strdup(String(lo)), strdup(String(hi))]
        defer { for p in values { free(p) } }
        let r = values.withUnsafeMutableBufferPointer { b in
            b.baseAddress.flatMap { base in
                base.withMemoryRebound(to: UnsafePointer<CChar>?.self, capacity: 2) { PQexecParams(c.conn, sql, 2, nil, $0, nil, nil, 0) }
            }
        }
        defer { PQclear(r) }
        guard PQresultStatus(r) == PGRES_TUPLES_OK else { throw Failure(description: "fetch: \(c.errorMessage)") }
        var checksum = 0
        let rows = Int(PQntuples(r))
        for i in 0..<Int32(rows) {
            for k in 0..<Int32(12) {
                checksum &+= Int(PQgetlength(r, i, k))
                if let p = PQgetvalue(r, i, k) { checksum &+= Int(p.pointee) }
            }
        }
        if checksum == 42 { print("") }
        return rows
    }

    /// Every row of the table in key order through `COPY (SELECT …) TO STDOUT`, every byte touched. Returns the rows.
    static func copyOut(_ c: Connection, schema: String) throws -> Int {
        try c.exec("COPY (SELECT \(columns), _ver FROM \(schema).item ORDER BY _pk) TO STDOUT")
        var rows = 0
        var checksum = 0
        while true {
            var row: UnsafeMutablePointer<CChar>?
            let n = PQgetCopyData(c.conn, &row, 0)
            if n == -1 { break }
            guard n >= 0, let row else { throw Failure(description: "PQgetCopyData: \(c.errorMessage)") }
            for i in 0..<Int(n) { checksum &+= Int(row[i]) }
            PQfreemem(row)
            rows += 1
        }
        while let r = PQgetResult(c.conn) { PQclear(r) }
        if checksum == 42 { print("") }
        return rows
    }

    /// `COPY (SELECT …) TO STDOUT` of the table in key order, each row's text put into a new LMDB environment at
    /// `path` under its 8-byte ordered key (`MDB_APPEND`), in one transaction. Returns the rows.
    static func copyOutToLMDB(_ c: Connection, schema: String, path: String, count: Int) throws -> Int {
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
        let map = max(64 << 20, (count * 600 * 2 + (1 << 20)) & ~0xFFFFF)
        return try RefLMDB.withEnvironment(path, readOnly: false, mapSize: map) { env in
            var txn: OpaquePointer?
            try RefLMDB.check(mdb_txn_begin(env, nil, 0, &txn), "mdb_txn_begin")
            guard let txn else { return 0 }
            var rows = 0
            do {
                var dbi: MDB_dbi = 0
                try RefLMDB.check(mdb_dbi_open(txn, "item", UInt32(MDB_CREATE), &dbi), "mdb_dbi_open")
                try c.exec("COPY (SELECT \(columns), _ver FROM \(schema).item ORDER BY _pk) TO STDOUT")
                while true {
                    var row: UnsafeMutablePointer<CChar>?
                    let n = PQgetCopyData(c.conn, &row, 0)
                    if n == -1 { break }
                    guard n >= 0, let row else { throw Failure(description: "PQgetCopyData: \(c.errorMessage)") }
                    defer { PQfreemem(row) }
                    // The key: the leading primary key, up to the first tab.
                    var pk: Int64 = 0
                    var i = 0
                    while i < Int(n), row[i] != 9 { pk = pk * 10 + Int64(row[i] - 48); i += 1 }
                    var key = RefLMDB.orderedKey(pk)
                    try withUnsafeMutableBytes(of: &key) { k in
                        var kv = MDB_val(mv_size: 8, mv_data: k.baseAddress)
                        var vv = MDB_val(mv_size: Int(n), mv_data: UnsafeMutableRawPointer(row))
                        try RefLMDB.check(mdb_put(txn, dbi, &kv, &vv, UInt32(MDB_APPEND)), "mdb_put")
                    }
                    rows += 1
                }
                while let r = PQgetResult(c.conn) { PQclear(r) }
                try RefLMDB.check(mdb_txn_commit(txn), "mdb_txn_commit")
            } catch {
                mdb_txn_abort(txn)
                throw error
            }
            return rows
        }
    }
}
