import Foundation
import Synchronization

/// Connections that read a store while its own connection is busy (a save, a bulk load, another read): a read that
/// finds the store's connection taken runs on one of these instead of waiting, and sees what was committed when its
/// transaction began.
///
/// Connections are opened on demand, one per concurrent read, and kept idle for the next; a broken one is closed,
/// never kept. Closing the store closes them all. A store whose reads never overlap its other work opens none, so
/// a server's connection limit is spent only where reads really run in parallel.
final class PostgresReaders: Sendable {
    private struct State {
        var idle: [PostgresConnection] = []
        var closed = false
    }

    private let connect: @Sendable () throws -> PostgresConnection
    private let state = Mutex(State())

    /// More idle connections than this are closed when their read ends.
    private static let keptIdle = 4

    init(connect: @escaping @Sendable () throws -> PostgresConnection) {
        self.connect = connect
    }

    /// Runs `body` on a reader, or returns `nil` when the store is closing: the caller then reads on the store's
    /// own connection. Failing to connect is an error, as it would be on the store's connection.
    func read<T>(_ body: (PostgresConnection) throws -> T) throws -> T? {
        let taken = state.withLock { s -> (PostgresConnection?, Bool) in
            s.closed ? (nil, false) : (s.idle.popLast(), true)
        }
        guard taken.1 else { return nil }
        let c = try taken.0 ?? connect()
        defer { giveBack(c) }
        return try body(c)
    }

    private func giveBack(_ c: PostgresConnection) {
        let keep = !c.isBroken && state.withLock { s -> Bool in
            guard !s.closed, s.idle.count < Self.keptIdle else { return false }
            s.idle.append(c)
            return true
        }
        if !keep { c.close() }
    }

    /// Closes every idle reader; readers in use close when their read ends. Later reads get `nil`.
    func close() {
        let idle = state.withLock { s -> [PostgresConnection] in
            s.closed = true
            defer { s.idle.removeAll() }
            return s.idle
        }
        for c in idle { c.close() }
    }

    /// How many readers are idle (tests).
    var idleCount: Int { state.withLock { $0.idle.count } }
}
