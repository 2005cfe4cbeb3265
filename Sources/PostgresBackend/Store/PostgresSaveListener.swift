import CLibPQ
import Foundation
@_spi(BackendKit) import StoreAPI
import Synchronization

/// Waits for saves of one PostgreSQL store, by any process on any machine: every committed save of a store sends a
/// notification on the channel ``PostgresSaveListener/channel`` with the store's schema as payload (PostgreSQL's
/// `NOTIFY`, delivered when the save commits and never for one rolled back).
///
/// A listener holds a connection of its own that `LISTEN`s on the channel and keeps only the notifications of its
/// store. It tells that a save happened, not what it changed: read ``StoreAPI/PersistentStore/history(after:)``
/// (with history tracking) or fetch again.
///
/// ```swift
/// let listener = try PostgresSaveListener(url: url)
/// while try listener.waitForSave(timeout: 30) {
///     // another process saved: fetch what changed
/// }
/// ```
///
/// One thread uses a listener at a time (it holds a lock around every use).
public final class PostgresSaveListener: Sendable {
    /// The notification channel every store's saves are announced on.
    public static let channel = "storeapi_saves"

    private let connection: Mutex<PostgresConnection?>
    private let schema: String
    private let url: URL

    /// Connects to the store's server and starts listening; `timeout` bounds the connect (seconds).
    public init(url: URL, timeout: Double = StoreOptions().timeout) throws {
        let location = try PostgresLocation(url)
        let c = try PostgresConnection(location, connectTimeout: timeout)
        try c.execute("LISTEN \(PostgresLayout.quote(Self.channel))")
        self.connection = Mutex(c)
        self.schema = location.schema
        self.url = url
    }

    /// Waits up to `timeout` seconds for a save of the store; returns `true` as soon as one was committed since the
    /// last call (or the listener started), `false` when the time passed without one. A connection that broke is a
    /// typed error naming the server; a later call connects again, and a save made while it was away is reported.
    public func waitForSave(timeout: Double) throws -> Bool {
        try connection.withLock { held in
            let c: PostgresConnection
            if let h = held, !h.isBroken {
                c = h
            } else {
                held?.close()
                held = nil
                c = try PostgresConnection(try PostgresLocation(url), connectTimeout: max(1, timeout))
                try c.execute("LISTEN \(PostgresLayout.quote(Self.channel))")
                held = c
                // What happened while no connection listened is unknown: it may have been a save.
                return true
            }
            let deadline = Date().addingTimeInterval(max(0, timeout))
            while true {
                if try drain(c) { return true }
                let left = deadline.timeIntervalSinceNow
                guard left > 0 else { return false }
                var p = pollfd(fd: PQsocket(try c.handle()), events: Int16(POLLIN), revents: 0)
                let ready = poll(&p, 1, Int32(min(left, 60) * 1000))
                if ready < 0 && errno != EINTR {
                    c.markBroken()
                    throw StoreError.io(url, operation: "waiting for saves", reason: String(cString: strerror(errno)))
                }
            }
        }
    }

    /// Whether a save of the store was announced since the last call (or the listener started), counting every save
    /// committed before this call: a round trip on the listening connection makes the server deliver what it queued
    /// for it first, so nothing committed is missed for being still on its way. Does not wait for new saves. A
    /// connection that broke is replaced, and the answer is then `true` (a save may have gone unheard).
    func hasHeardSave() throws -> Bool {
        try connection.withLock { held in
            guard let c = held, !c.isBroken else {
                held?.close()
                held = nil
                let c = try PostgresConnection(try PostgresLocation(url), connectTimeout: StoreOptions().timeout)
                try c.execute("LISTEN \(PostgresLayout.quote(Self.channel))")
                held = c
                return true
            }
            _ = try c.execute("SELECT 1")
            return try drain(c)
        }
    }

    /// Reads what arrived; whether a notification of this store's schema was among it.
    private func drain(_ c: PostgresConnection) throws -> Bool {
        let h = try c.handle()
        guard PQconsumeInput(h) == 1 else { throw c.connectionFailure("waiting for saves") }
        var found = false
        while let n = PQnotifies(h) {
            if let extra = n.pointee.extra, String(cString: extra) == schema { found = true }
            PQfreemem(n)
        }
        return found
    }

    /// Stops listening and closes the connection.
    public func close() {
        connection.withLock { held in
            held?.close()
            held = nil
        }
    }
}

extension PostgresConnection {
    /// Announces a save of the store in `schema` on ``PostgresSaveListener/channel``, delivered when the caller's
    /// transaction commits.
    func notifySave(schema: String) throws {
        try execute("SELECT pg_notify($1, $2)", [PostgresSaveListener.channel, schema])
    }
}
