import CLibPQ
import Foundation
import PostgresBackend
import StoreAPI
import StoreSync
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// One connection of a ``PostgresRemote``, used by one thread at a time: the remote runs every call on its own
/// serial queue (hence `@unchecked Sendable`).
///
/// It is the PostgreSQL store backend's connection, so the remote waits for the server the same bounded way a
/// store does: libpq in nonblocking mode and every wait a `poll` with a deadline of the statement timeout plus a
/// grace period. A server that stops answering (its process stopped, hung) fails the call with an error naming the
/// server's host and port instead of holding the remote's thread; the connection is then given up and the next
/// call connects again. Values are always parameters, never spliced into SQL; errors name the remote without its
/// password.
final class RemoteConnection: @unchecked Sendable {
    private let connection: PostgresConnection
    let location: RemoteLocation

    /// The statement timeout used when the URL sets none: far beyond what any call of the remote takes, and a bound
    /// on a server that stops answering.
    static let defaultStatementTimeoutMilliseconds = 120_000

    /// Connects and sets the session up (UTC, warnings only, the statement timeout).
    init(_ location: RemoteLocation, connectTimeout: Double) throws {
        self.location = location
        let statementTimeout = location.connection.statementTimeoutMilliseconds ?? Self.defaultStatementTimeoutMilliseconds
        do {
            connection = try PostgresConnection(location.connection, connectTimeout: max(2, connectTimeout),
                                                statementTimeoutMilliseconds: statementTimeout)
        } catch {
            throw Self.remoteError(error, location)
        }
    }

    deinit { close() }

    func close() { connection.close() }

    /// Whether the connection is usable (a broken one is replaced by the remote before its next call).
    var isHealthy: Bool {
        guard !connection.isBroken, let c = try? connection.handle() else { return false }
        return PQstatus(c) == CONNECTION_OK
    }

    /// The server process serving this connection.
    var backendPID: Int32 { connection.backendPID }

    /// The socket, for waiting on notifications.
    var socket: Int32 { (try? connection.handle()).map { PQsocket($0) } ?? -1 }

    /// A parameter: text, bytes (a `bytea`, sent as its hex text form), or NULL.
    enum Parameter {
        case text(String)
        case bytes(Data)
        case null

        var text: String? {
            switch self {
            case .text(let s): s
            case .bytes(let d): Self.hex(d)
            case .null: nil
            }
        }

        private static let digits = Array("0123456789abcdef".utf8)

        /// `\x` and two hex digits per byte: `bytea`'s text form.
        static func hex(_ data: Data) -> String {
            String(unsafeUninitializedCapacity: 2 + data.count * 2) { out in
                out[0] = UInt8(ascii: "\\")
                out[1] = UInt8(ascii: "x")
                var i = 2
                data.withUnsafeBytes { bytes in
                    for b in bytes {
                        out[i] = digits[Int(b >> 4)]
                        out[i + 1] = digits[Int(b & 0xF)]
                        i += 2
                    }
                }
                return i
            }
        }
    }

    /// Runs `sql` with `parameters`; `binaryResults` asks for column values in binary form (for `bytea`).
    @discardableResult
    func execute(_ sql: String, _ parameters: [Parameter] = [], binaryResults: Bool = false) throws -> RemoteRows {
        let values = parameters.map(\.text)
        do {
            return RemoteRows(binaryResults ? try connection.executeBinary(sql, values) : try connection.execute(sql, values))
        } catch {
            throw Self.remoteError(error, location)
        }
    }

    /// Runs `body` in a transaction: committed when it returns, rolled back when it throws.
    func transaction<T>(_ body: () throws -> T) throws -> T {
        do {
            return try connection.transaction(body)
        } catch {
            throw Self.remoteError(error, location)
        }
    }

    /// Reads whatever the server sent and returns the notifications received on `channel` (their count).
    func drainNotifications() throws -> Int {
        guard let c = try? connection.handle() else { return 0 }
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

    /// The connection's errors as the remote's: a ``StoreSync/SyncError/remote(_:reason:)`` naming the remote
    /// without its password; a sync error passes through.
    static func remoteError(_ error: any Error, _ location: RemoteLocation) -> any Error {
        if error is SyncError { return error }
        let reason: String
        if case StoreError.io(_, let operation, let why) = error {
            reason = "\(operation) failed: \(why)"
        } else {
            reason = "\(error)"
        }
        return SyncError.remote(location.displayName, reason: location.scrub(reason))
    }

    static func message(_ text: UnsafePointer<CChar>?) -> String {
        text.map { String(cString: $0).trimmingCharacters(in: .whitespacesAndNewlines) } ?? "unknown error"
    }
}

/// The rows of one result.
final class RemoteRows {
    private let rows: PostgresRows

    init(_ rows: PostgresRows) { self.rows = rows }

    var count: Int { rows.count }

    func isNull(_ row: Int, _ column: Int) -> Bool { rows.isNull(row, column) }

    /// A value in text form (of a text-format result).
    func text(_ row: Int, _ column: Int) -> String? { rows.text(row, column) }

    /// A value's bytes as sent (binary form in a binary-format result).
    func data(_ row: Int, _ column: Int) -> Data? { rows.binary(row, column) { Data($0) } }

    func int64(_ row: Int, _ column: Int) -> Int64? { rows.int64(row, column) }

    /// Rows changed by an `INSERT`, `UPDATE` or `DELETE`.
    var affected: Int { rows.affected }
}
