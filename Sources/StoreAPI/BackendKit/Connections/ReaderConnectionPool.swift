import Synchronization

/// Connections that read a store beside the connection its saves use: a read that finds the store's own connection
/// busy runs on one of these instead of waiting (SQLite in WAL mode, a PostgreSQL server).
///
/// Connections are opened on demand, one per concurrent read, and kept idle for the next, up to a number; one the
/// backend says is no longer usable (a broken server connection) is closed instead of kept. Closing the pool closes
/// the idle ones; those in use close when their read ends.
@_spi(BackendKit) public final class ReaderConnectionPool<Connection: Sendable>: Sendable {
    private struct State {
        var idle: [Connection] = []
        var closed = false
    }

    private let open: @Sendable () throws -> Connection?
    private let isReusable: @Sendable (Connection) -> Bool
    private let closeConnection: @Sendable (Connection) -> Void
    private let keptIdle: Int
    private let state = Mutex(State())

    /// A pool whose connections `open` makes (`nil`: none can be had, and the caller reads on the store's own
    /// connection; a thrown error fails the read) and `close` closes. `isReusable` says whether a connection whose
    /// read ended may serve the next one; more than `keptIdle` idle connections are closed.
    public init(keptIdle: Int = 4, open: @escaping @Sendable () throws -> Connection?,
                isReusable: @escaping @Sendable (Connection) -> Bool = { _ in true },
                close: @escaping @Sendable (Connection) -> Void) {
        self.open = open
        self.isReusable = isReusable
        self.closeConnection = close
        self.keptIdle = keptIdle
    }

    /// Runs `body` on a reader, or returns `nil` when none can be had (the pool is closed, or `open` gave none):
    /// the caller then reads on the store's own connection.
    public func read<T>(_ body: (Connection) throws -> T) throws -> T? {
        let taken = state.withLock { s -> (Connection?, Bool) in
            s.closed ? (nil, false) : (s.idle.popLast(), true)
        }
        guard taken.1, let c = try taken.0 ?? open() else { return nil }
        defer { giveBack(c) }
        return try body(c)
    }

    private func giveBack(_ c: Connection) {
        let keep = isReusable(c) && state.withLock { s -> Bool in
            guard !s.closed, s.idle.count < keptIdle else { return false }
            s.idle.append(c)
            return true
        }
        if !keep { closeConnection(c) }
    }

    /// Closes every idle reader; readers in use close when their read ends. Later reads get `nil`.
    public func close() {
        let idle = state.withLock { s -> [Connection] in
            s.closed = true
            defer { s.idle.removeAll() }
            return s.idle
        }
        for c in idle { closeConnection(c) }
    }
}
