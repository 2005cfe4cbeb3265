import CLibPQ
import Foundation
import StoreAPI
import StoreSync
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// One libpq connection of a ``PostgresRemote``, used by one thread at a time: the remote runs every call on its
/// own serial queue (hence `@unchecked Sendable`).
///
/// The remote keeps a connection of its own rather than borrowing the PostgreSQL store backend's: it needs binary
/// parameters and results (change files are bytes) and asynchronous notifications, and a sync remote must not
/// depend on how a store backend pools and times out its connections. Values are always parameters, never spliced
/// into SQL; errors name the remote without its password.
final class RemoteConnection: @unchecked Sendable {
    private var conn: OpaquePointer?
    let location: RemoteLocation

    /// Connects and sets the session up (UTC, warnings only).
    init(_ location: RemoteLocation, connectTimeout: Double) throws {
        self.location = location
        var params = location.parameters
        if !params.contains(where: { $0.0 == "connect_timeout" }) {
            params.append(("connect_timeout", String(max(2, Int(connectTimeout.rounded(.up))))))
        }
        if !params.contains(where: { $0.0 == "application_name" }) { params.append(("application_name", "storesync")) }
        let c = Self.connect(params)
        guard let c, PQstatus(c) == CONNECTION_OK else {
            let why = c.map { Self.message(PQerrorMessage($0)) } ?? "out of memory"
            if let c { PQfinish(c) }
            throw SyncError.remote(location.displayName, reason: "cannot connect to the PostgreSQL server at "
                + "\(location.hostDescription): \(location.scrub(why))")
        }
        conn = c
        try execute("SET client_min_messages = warning")
        try execute("SET TIME ZONE 'UTC'")
    }

    deinit { close() }

    func close() {
        if let c = conn { PQfinish(c) }
        conn = nil
    }

    /// Whether the connection is usable (a broken one is replaced by the remote before its next call).
    var isHealthy: Bool { conn.map { PQstatus($0) == CONNECTION_OK } ?? false }

    /// The server process serving this connection.
    var backendPID: Int32 { conn.map { PQbackendPID($0) } ?? 0 }

    /// The socket, for waiting on notifications.
    var socket: Int32 { conn.map { PQsocket($0) } ?? -1 }

    /// A parameter: text, bytes (sent in binary form), or NULL.
    enum Parameter {
        case text(String)
        case bytes(Data)
        case null
    }

    /// Runs `sql` with `parameters`; `binaryResults` asks for column values in binary form (for `bytea`).
    @discardableResult
    func execute(_ sql: String, _ parameters: [Parameter] = [], binaryResults: Bool = false) throws -> RemoteRows {
        guard let c = conn else { throw SyncError.remote(location.displayName, reason: "the connection is closed") }
        var buffers: [UnsafeMutablePointer<CChar>?] = []
        var lengths: [Int32] = []
        var formats: [Int32] = []
        defer { for b in buffers { free(b) } }
        for p in parameters {
            switch p {
            case .text(let s):
                buffers.append(strdup(s))
                lengths.append(0)
                formats.append(0)
            case .bytes(let d):
                // malloc, like strdup, so that one `free` releases every buffer.
                guard let m = malloc(max(d.count, 1))?.assumingMemoryBound(to: CChar.self) else {
                    throw SyncError.remote(location.displayName, reason: "out of memory for a \(d.count)-byte change file")
                }
                d.withUnsafeBytes { raw in if let base = raw.baseAddress { _ = memcpy(m, base, d.count) } }
                buffers.append(m)
                lengths.append(Int32(d.count))
                formats.append(1)
            case .null:
                buffers.append(nil)
                lengths.append(0)
                formats.append(0)
            }
        }
        let result: OpaquePointer? = buffers.withUnsafeBufferPointer { b in
            b.baseAddress.map { base in
                base.withMemoryRebound(to: UnsafePointer<CChar>?.self, capacity: b.count) { values in
                    PQexecParams(c, sql, Int32(parameters.count), nil, values, lengths, formats, binaryResults ? 1 : 0)
                }
            } ?? PQexecParams(c, sql, 0, nil, nil, nil, nil, binaryResults ? 1 : 0)
        }
        guard let result else {
            throw SyncError.remote(location.displayName, reason: location.scrub(Self.message(PQerrorMessage(c))))
        }
        let status = PQresultStatus(result)
        guard status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK else {
            let state = PQresultErrorField(result, Int32(UInt8(ascii: "C"))).map { String(cString: $0) } ?? ""
            let text = PQresultErrorField(result, Int32(UInt8(ascii: "M"))).map { String(cString: $0) }
                ?? Self.message(PQerrorMessage(c))
            PQclear(result)
            let lost = PQstatus(c) != CONNECTION_OK
            throw SyncError.remote(location.displayName, reason: (lost ? "the connection to the server was lost: " : "")
                + location.scrub(text) + (state.isEmpty ? "" : " (SQLSTATE \(state))"))
        }
        return RemoteRows(result)
    }

    /// Runs `body` in a transaction: committed when it returns, rolled back when it throws.
    func transaction<T>(_ body: () throws -> T) throws -> T {
        try execute("BEGIN")
        do {
            let value = try body()
            try execute("COMMIT")
            return value
        } catch {
            if isHealthy { _ = try? execute("ROLLBACK") }
            throw error
        }
    }

    /// Reads whatever the server sent and returns the notifications received on `channel` (their count).
    func drainNotifications() throws -> Int {
        guard let c = conn else { return 0 }
        guard PQconsumeInput(c) == 1 else {
            throw SyncError.remote(location.displayName, reason: "the connection to the server was lost: "
                + location.scrub(Self.message(PQerrorMessage(c))))
        }
        var count = 0
        while let n = PQnotifies(c) {
            count += 1
            PQfreemem(n)
        }
        return count
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
                        // expand_dbname 0: a database name is a name, never a connection string.
                        PQconnectdbParams(kp, vp, 0)
                    }
                }
            }
        }
    }

    static func message(_ text: UnsafePointer<CChar>?) -> String {
        text.map { String(cString: $0).trimmingCharacters(in: .whitespacesAndNewlines) } ?? "unknown error"
    }
}

/// The rows of one result.
final class RemoteRows {
    private let result: OpaquePointer

    init(_ result: OpaquePointer) { self.result = result }
    deinit { PQclear(result) }

    var count: Int { Int(PQntuples(result)) }

    func isNull(_ row: Int, _ column: Int) -> Bool {
        guard row >= 0, row < count, column >= 0, column < Int(PQnfields(result)) else { return true }
        return PQgetisnull(result, Int32(row), Int32(column)) == 1
    }

    /// A value in text form (of a text-format result).
    func text(_ row: Int, _ column: Int) -> String? {
        guard let d = data(row, column) else { return nil }
        return String(decoding: d, as: UTF8.self)
    }

    /// A value's bytes as sent (binary form in a binary-format result).
    func data(_ row: Int, _ column: Int) -> Data? {
        guard !isNull(row, column), let p = PQgetvalue(result, Int32(row), Int32(column)) else { return nil }
        return Data(bytes: p, count: Int(PQgetlength(result, Int32(row), Int32(column))))
    }

    func int64(_ row: Int, _ column: Int) -> Int64? { text(row, column).flatMap { Int64($0) } }

    /// Rows changed by an `INSERT`, `UPDATE` or `DELETE`.
    var affected: Int { Int(String(cString: PQcmdTuples(result))) ?? 0 }
}
