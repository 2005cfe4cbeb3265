import CLibPQ
import Foundation
import StoreAPI
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Talking to the server with a deadline: the connection is in libpq's nonblocking mode, and every wait for the
/// server — to take what is sent, or to answer — is a `poll` on its socket bounded by ``PostgresConnection/answerTimeout``.
///
/// The server's own statement timeout cannot help when the server process is not running at all (stopped, hung,
/// swapped out for good), and TCP keepalives are answered by the server's kernel all the same; only the client can
/// tell that no answer came. A connection that waited too long is given up: it is in the middle of a statement and
/// cannot be used again, so it is marked broken (its owner connects again for the next operation) and the call
/// fails with a typed error naming the server.
extension PostgresConnection {
    /// Sends `sql` with `parameters` (text form, `nil` is NULL) as one statement and waits for its results, in text
    /// form or, with `binaryResults`, in PostgreSQL's binary form.
    func runStatement(_ sql: String, _ parameters: [String?], binaryResults: Bool) throws -> PostgresRows {
        let c = try handle()
        let sent = Self.withCStrings(parameters) { values in
            PQsendQueryParams(c, sql, Int32(parameters.count), nil, values, nil, nil, binaryResults ? 1 : 0)
        }
        guard sent == 1 else { throw connectionFailure("sending a statement") }
        try flush(c, "sending a statement")
        return try collectResults(c, "running a statement")
    }

    /// Sends `sql` (one statement, no parameters) and waits for its first result: for a `COPY`, the result that
    /// starts the copy. A result that is not `expected` is the statement's error.
    func startStatement(_ sql: String, expecting expected: ExecStatusType, _ operation: String) throws {
        let c = try handle()
        guard PQsendQuery(c, sql) == 1 else { throw connectionFailure(operation) }
        try flush(c, operation)
        guard let result = try nextResult(c, operation) else { throw connectionFailure(operation) }
        defer { PQclear(result) }
        guard PQresultStatus(result) == expected else {
            let error = failure(result, c)
            // The statement's end: nothing more is waiting, and the connection is ready for the next one.
            if !isBroken { try? discardResults(c, operation) }
            throw error
        }
    }

    /// Reads every result of the statement in progress: the rows of a successful one, or its first error.
    func collectResults(_ c: OpaquePointer, _ operation: String) throws -> PostgresRows {
        var rows: PostgresRows?
        var error: StoreError?
        while let result = try nextResult(c, operation) {
            let status = PQresultStatus(result)
            if error == nil, status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK {
                rows = PostgresRows(result)
            } else {
                if error == nil { error = failure(result, c) }
                PQclear(result)
            }
        }
        if let error { throw error }
        guard let rows else { throw connectionFailure(operation) }
        return rows
    }

    /// Reads and drops the results still to come.
    func discardResults(_ c: OpaquePointer, _ operation: String) throws {
        while let result = try nextResult(c, operation) { PQclear(result) }
    }

    /// The next result of the statement in progress (`nil` when it has no more), waiting at most
    /// ``answerTimeout`` for the server to send it.
    func nextResult(_ c: OpaquePointer, _ operation: String) throws -> OpaquePointer? {
        let deadline = Deadline(seconds: answerTimeout)
        while PQisBusy(c) == 1 {
            _ = try waitForSocket(c, events: Int16(POLLIN), until: deadline, operation)
            guard PQconsumeInput(c) == 1 else { throw connectionFailure(operation) }
        }
        return PQgetResult(c)
    }

    /// Sends what libpq holds for the server, waiting at most ``answerTimeout`` for the server to take it.
    func flush(_ c: OpaquePointer, _ operation: String) throws {
        let deadline = Deadline(seconds: answerTimeout)
        while true {
            switch PQflush(c) {
            case 0: return
            case 1: break
            default: throw connectionFailure(operation)
            }
            // The server may be waiting for us to read before it reads on: read whatever it sent.
            let ready = try waitForSocket(c, events: Int16(POLLIN | POLLOUT), until: deadline, operation)
            if ready & Int16(POLLIN) != 0, PQconsumeInput(c) != 1 { throw connectionFailure(operation) }
        }
    }

    /// Waits until the socket is ready for `events` (returns what it is ready for), or fails when `deadline`
    /// passes first.
    private func waitForSocket(_ c: OpaquePointer, events: Int16, until deadline: Deadline, _ operation: String) throws -> Int16 {
        while true {
            guard let milliseconds = deadline.millisecondsLeft else { throw stalled(operation) }
            var p = pollfd(fd: PQsocket(c), events: events, revents: 0)
            let n = poll(&p, 1, milliseconds)
            if n > 0 { return p.revents }
            if n < 0, errno != EINTR {
                markBroken()
                throw StoreError.io(url, operation: operation, reason: "waiting for the server failed: \(String(cString: strerror(errno)))")
            }
        }
    }

    /// The error of a server that did not answer in time; the connection is given up.
    private func stalled(_ operation: String) -> StoreError {
        markBroken()
        return StoreError.io(
            url, operation: "\(operation) on the PostgreSQL server at \(location.hostDescription)",
            reason: "the server did not answer within \(Self.seconds(answerTimeout)); the connection was given up "
                + "and the next operation connects again")
    }

    static func seconds(_ value: Double) -> String {
        value == value.rounded() ? "\(Int(value)) s" : String(format: "%.1f s", value)
    }

    /// A point in time a wait must not pass.
    struct Deadline {
        let end: ContinuousClock.Instant

        init(seconds: Double) {
            end = .now + .milliseconds(Int64((seconds * 1000).rounded(.up)))
        }

        /// What `poll` may wait (at least 1 ms while any time is left; a long wait is cut into steps so that an
        /// interrupted `poll` never overshoots), or `nil` once it passed.
        var millisecondsLeft: Int32? {
            let left = end - .now
            guard left > .zero else { return nil }
            let ms = left.components.seconds * 1000 + left.components.attoseconds / 1_000_000_000_000_000
            return Int32(max(1, min(ms + 1, 60_000)))
        }
    }
}
