import CLibPQ
import Foundation
import StoreAPI

/// One libpq connection, used by one thread at a time: its owner holds a lock around every use (hence
/// `@unchecked Sendable`: the reference evaluator's resolver runs under that lock).
///
/// Every statement goes through `PQsendQueryParams` with its values as parameters in text form — never spliced into
/// the SQL — and identifiers quoted by ``PostgresLayout/quote(_:)``. Every wait for the server is bounded by
/// ``answerTimeout`` (see `PostgresConnection+Deadline.swift`). Errors become ``StoreError``s naming the store
/// by its redacted URL (``PostgresLocation/redacted``) and carry the server's message, never the password.
package final class PostgresConnection: @unchecked Sendable {
    private var conn: OpaquePointer?
    let location: PostgresLocation
    /// Whether the last statement failed because the connection itself broke (the next use reconnects).
    package private(set) var isBroken = false
    /// The store's uniqueness indexes, so that a violation is reported as the constraint it breaks.
    var uniqueIndexes: [String: UniqueIndex] = [:]
    /// Seconds the client waits for the server to answer (or to take what is sent) before it gives the connection
    /// up: past the statement timeout, so that the server's own cancel comes first when the server runs at all.
    package let answerTimeout: Double

    var url: URL { location.url }

    /// TCP keepalive and user-timeout settings used unless the URL sets its own: a server host that vanishes
    /// (powered off, cut off the network) fails the statement in progress within about half a minute instead of
    /// leaving it waiting for an answer forever. libpq ignores them on a Unix socket.
    static let keepaliveDefaults = [
        ("keepalives", "1"), ("keepalives_idle", "10"), ("keepalives_interval", "5"), ("keepalives_count", "3"),
        ("tcp_user_timeout", "30000"),
    ]

    /// Connects with the location's parameters plus `connectTimeout` seconds (libpq's `connect_timeout`, unless the
    /// URL sets its own) and the keepalive defaults, and sets the session up: UTC, no notices, the statement timeout
    /// (`statementTimeoutMilliseconds`, or the URL's), and the client's own deadline for answers
    /// (``PostgresSessionOptions/answerTimeout(statementTimeoutMilliseconds:)``).
    package init(_ location: PostgresLocation, connectTimeout: Double, statementTimeoutMilliseconds: Int? = nil) throws {
        self.location = location
        let statementTimeout = statementTimeoutMilliseconds ?? location.statementTimeoutMilliseconds
        answerTimeout = PostgresSessionOptions.answerTimeout(statementTimeoutMilliseconds: statementTimeout)
        var params = location.parameters
        if !params.contains(where: { $0.0 == "connect_timeout" }), connectTimeout > 0 {
            params.append(("connect_timeout", String(max(1, Int(connectTimeout.rounded(.up))))))
        }
        if !params.contains(where: { $0.0 == "application_name" }) { params.append(("application_name", "storeapi")) }
        for (key, value) in Self.keepaliveDefaults where !params.contains(where: { $0.0 == key }) { params.append((key, value)) }
        let c = Self.connect(params)
        guard let c, PQstatus(c) == CONNECTION_OK else {
            let why = c.map { Self.message(PQerrorMessage($0)) } ?? "out of memory"
            if let c { PQfinish(c) }
            throw StoreError.io(
                location.url, operation: "connecting to the PostgreSQL server at \(location.hostDescription)",
                reason: Self.scrub(why, location))
        }
        conn = c
        // Nothing waits on the server but through a poll with a deadline (see PostgresConnection+Deadline.swift).
        guard PQsetnonblocking(c, 1) == 0 else {
            throw StoreError.io(location.url, operation: "connecting to the PostgreSQL server at \(location.hostDescription)",
                                reason: Self.scrub(Self.message(PQerrorMessage(c)), location))
        }
        try execute("SET client_min_messages = warning")
        try execute("SET TIME ZONE 'UTC'")
        try execute("SET extra_float_digits = 3")
        if let ms = statementTimeout {
            try execute("SET statement_timeout = \(ms)")
        }
    }

    private static func connect(_ params: [(String, String)]) -> OpaquePointer? {
        var keys = params.map { strdup($0.0) }
        var values = params.map { strdup($0.1) }
        keys.append(nil)
        values.append(nil)
        defer {
            for k in keys { free(k) }
            for v in values { free(v) }
        }
        return keys.withUnsafeBufferPointer { k in
            values.withUnsafeBufferPointer { v -> OpaquePointer? in
                guard let kb = k.baseAddress, let vb = v.baseAddress else { return nil }
                return kb.withMemoryRebound(to: UnsafePointer<CChar>?.self, capacity: keys.count) { kp in
                    vb.withMemoryRebound(to: UnsafePointer<CChar>?.self, capacity: values.count) { vp in
                        // expand_dbname 0: a `dbname` holding `=` or a URI is a name, never a connection string.
                        PQconnectdbParams(kp, vp, 0)
                    }
                }
            }
        }
    }

    deinit { close() }

    package func close() {
        if let c = conn { PQfinish(c) }
        conn = nil
    }

    /// The server process serving this connection (tests terminate it to prove a save fails cleanly).
    package var backendPID: Int32 { conn.map { PQbackendPID($0) } ?? 0 }

    // MARK: Statements

    /// Runs `sql` with `parameters` (text form; `nil` is SQL NULL) and returns its rows in text form.
    @discardableResult
    package func execute(_ sql: String, _ parameters: [String?] = []) throws -> PostgresRows {
        try runStatement(sql, parameters, binaryResults: false)
    }

    /// Runs `sql` with `parameters` (text form) and returns its rows in PostgreSQL's binary form: what record
    /// reads use, as it spares formatting every value as text on the server and parsing it back here.
    package func executeBinary(_ sql: String, _ parameters: [String?] = []) throws -> PostgresRows {
        try runStatement(sql, parameters, binaryResults: true)
    }

    /// The open libpq connection; a connection that broke is not used again (its owner connects anew).
    package func handle() throws -> OpaquePointer {
        guard let c = conn else {
            throw StoreError.io(url, operation: "using the store", reason: "the connection is closed")
        }
        guard !isBroken else {
            throw StoreError.io(url, operation: "using the store", reason: "the connection to the server was lost earlier")
        }
        return c
    }

    /// The error of a call that returned no result: the connection's own message (a broken connection, out of
    /// memory), noting whether the connection broke.
    package func connectionFailure(_ operation: String) -> StoreError {
        guard let c = conn else {
            return StoreError.io(url, operation: operation, reason: "the connection is closed")
        }
        isBroken = PQstatus(c) != CONNECTION_OK
        let kind = isBroken ? "the connection to the server was lost while \(operation)" : operation
        return StoreError.io(url, operation: kind, reason: Self.scrub(Self.message(PQerrorMessage(c)), location))
    }

    /// The error of a failed `result` (not cleared here): a uniqueness violation of the store's constraint as that
    /// constraint, anything else through ``PostgresServerError``.
    func failure(_ result: OpaquePointer, _ c: OpaquePointer) -> StoreError {
        let error = PostgresServerError(result, connection: c)
        isBroken = PQstatus(c) != CONNECTION_OK
        if error.isUniqueViolation, let name = error.constraint, let index = uniqueIndexes[name] {
            return StoreError.uniquenessViolation(entity: index.entity, attributes: index.attributes, values: [], existing: nil)
        }
        return error.storeError(location, isBroken: isBroken)
    }

    /// Notes that the connection broke, so its owner reconnects.
    func markBroken() { isBroken = true }

    /// Runs `body` in a transaction: committed when it returns, rolled back when it throws (a broken connection
    /// rolls back on the server by itself).
    package func transaction<T>(readOnly: Bool = false, _ body: () throws -> T) throws -> T {
        try execute(readOnly ? "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY" : "BEGIN")
        do {
            let value = try body()
            try execute("COMMIT")
            return value
        } catch {
            if !isBroken { _ = try? execute("ROLLBACK") }
            throw error
        }
    }

    static func withCStrings<T>(_ strings: [String?], _ body: (UnsafePointer<UnsafePointer<CChar>?>?) -> T) -> T {
        var pointers: [UnsafeMutablePointer<CChar>?] = strings.map { $0.flatMap { strdup($0) } }
        defer { for p in pointers { free(p) } }
        return pointers.withUnsafeMutableBufferPointer { buffer in
            buffer.baseAddress.map { base in
                base.withMemoryRebound(to: UnsafePointer<CChar>?.self, capacity: buffer.count) { body($0) }
            } ?? body(nil)
        }
    }

    static func message(_ text: UnsafePointer<CChar>?) -> String {
        text.map { String(cString: $0).trimmingCharacters(in: .whitespacesAndNewlines) } ?? "unknown error"
    }

    /// Removes the password from a libpq message (libpq does not print it, but a message may echo a parameter).
    static func scrub(_ message: String, _ location: PostgresLocation) -> String {
        guard let password = location.parameters.last(where: { $0.0 == "password" })?.1, !password.isEmpty else {
            return message
        }
        return message.replacingOccurrences(of: password, with: "***")
    }
}

/// The rows of one statement's result, in text form (or binary, for ``PostgresConnection/executeBinary(_:_:)``).
package final class PostgresRows {
    private let result: OpaquePointer
    package let count: Int
    package let columns: Int

    init(_ result: OpaquePointer) {
        self.result = result
        count = Int(PQntuples(result))
        columns = Int(PQnfields(result))
    }
    deinit { PQclear(result) }

    /// The type OID of a column.
    func typeOID(_ column: Int) -> UInt32 { column >= 0 && column < columns ? PQftype(result, Int32(column)) : 0 }

    /// The value's bytes as they arrived (binary form for a binary result), `nil` for NULL.
    @inline(__always)
    package func binary<T>(_ row: Int, _ column: Int, _ body: (UnsafeRawBufferPointer) throws -> T) rethrows -> T? {
        guard row >= 0, row < count, column >= 0, column < columns else { return nil }
        let r = Int32(row), c = Int32(column)
        guard PQgetisnull(result, r, c) == 0, let p = PQgetvalue(result, r, c) else { return nil }
        return try body(UnsafeRawBufferPointer(start: p, count: Int(PQgetlength(result, r, c))))
    }
    /// Rows changed by an `INSERT`, `UPDATE` or `DELETE`.
    package var affected: Int { Int(String(cString: PQcmdTuples(result))) ?? 0 }

    /// Whether the value is NULL; a position outside the result counts as NULL (libpq would complain on stderr).
    package func isNull(_ row: Int, _ column: Int) -> Bool {
        guard row >= 0, row < count, column >= 0, column < columns else { return true }
        return PQgetisnull(result, Int32(row), Int32(column)) == 1
    }

    /// The value's text, `nil` for NULL.
    package func text(_ row: Int, _ column: Int) -> String? {
        guard !isNull(row, column) else { return nil }
        let p = PQgetvalue(result, Int32(row), Int32(column))
        let n = Int(PQgetlength(result, Int32(row), Int32(column)))
        guard let p else { return nil }
        return p.withMemoryRebound(to: UInt8.self, capacity: n) {
            String(decoding: UnsafeBufferPointer(start: $0, count: n), as: UTF8.self)
        }
    }

    /// The raw bytes of the value's text (a `bytea` column's `\x…` hex form is decoded by the codec).
    func bytes<T>(_ row: Int, _ column: Int, _ body: (UnsafeBufferPointer<UInt8>) throws -> T) rethrows -> T? {
        guard !isNull(row, column), let p = PQgetvalue(result, Int32(row), Int32(column)) else { return nil }
        let n = Int(PQgetlength(result, Int32(row), Int32(column)))
        return try p.withMemoryRebound(to: UInt8.self, capacity: n) { try body(UnsafeBufferPointer(start: $0, count: n)) }
    }

    package func int64(_ row: Int, _ column: Int) -> Int64? { text(row, column).flatMap { Int64($0) } }
}

/// An error the server reported, with its SQLSTATE and the constraint it names.
struct PostgresServerError: Error {
    let sqlState: String
    let message: String
    let constraint: String?

    init(_ result: OpaquePointer, connection: OpaquePointer) {
        func field(_ code: UInt8) -> String? {
            PQresultErrorField(result, Int32(code)).map { String(cString: $0) }
        }
        sqlState = field(UInt8(ascii: "C")) ?? ""
        let primary = field(UInt8(ascii: "M")) ?? PostgresConnection.message(PQerrorMessage(connection))
        message = primary
        constraint = field(UInt8(ascii: "n"))
    }

    /// `unique_violation`.
    var isUniqueViolation: Bool { sqlState == "23505" }
    /// `serialization_failure` or `deadlock_detected`: another writer's transaction won.
    var isSerializationFailure: Bool { sqlState == "40001" || sqlState == "40P01" }

    func storeError(_ location: PostgresLocation, isBroken: Bool) -> StoreError {
        let text = PostgresConnection.scrub(message, location)
        switch sqlState {
        case "57014":
            return .io(location.url, operation: "running a statement", reason: "cancelled by the statement timeout (\(text))")
        case "25006":
            return .readOnly(location.url, reason: text)
        case "40001", "40P01":
            return .locked(location.url, reason: "another writer's transaction conflicted: \(text)")
        default:
            let kind = isBroken ? "the connection to the server was lost" : "the server refused a statement"
            return .io(location.url, operation: kind, reason: sqlState.isEmpty ? text : "\(text) (SQLSTATE \(sqlState))")
        }
    }
}
