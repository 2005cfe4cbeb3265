import Foundation
import Synchronization

/// Connections that read a WAL store beside its writer: a read on one of them sees the last commit while the
/// store's own connection holds a write transaction open (SQLite's WAL lets readers and one writer run at once).
///
/// Connections are opened on demand, one per concurrent read, and kept idle for the next; closing the store closes
/// them all. Only stores in WAL mode opened read-write have readers: a read-only open keeps to its one connection,
/// whose sidecar handling depends on being the only one.
final class SQLiteReaders: Sendable {
    private struct State {
        var idle: [SQLiteConnection] = []
        var closed = false
    }

    private let url: URL
    private let timeout: Double
    private let state = Mutex(State())

    /// More idle connections than this are closed when their read ends.
    private static let keptIdle = 4

    init(url: URL, timeout: Double) {
        self.url = url
        self.timeout = timeout
    }

    /// Runs `body` on a reader, or returns `nil` when none can be had (the store is closing, or opening one
    /// failed): the caller then reads on the store's own connection.
    func read<T>(_ body: (SQLiteConnection) throws -> T) throws -> T? {
        let taken = state.withLock { s -> (SQLiteConnection?, Bool) in
            s.closed ? (nil, false) : (s.idle.popLast(), true)
        }
        guard taken.1 else { return nil }
        guard let c = taken.0 ?? open() else { return nil }
        defer { giveBack(c) }
        return try body(c)
    }

    private func open() -> SQLiteConnection? {
        guard let c = try? SQLiteConnection.open(url, readOnly: true, timeout: timeout) else { return nil }
        // The same page cache as the writer's: a reader reads as much of the store.
        guard (try? c.exec("PRAGMA cache_size = -\(ConnectionSettings.cacheKiB)")) != nil else {
            c.close()
            return nil
        }
        return c
    }

    private func giveBack(_ c: SQLiteConnection) {
        let keep = state.withLock { s -> Bool in
            guard !s.closed, s.idle.count < Self.keptIdle else { return false }
            s.idle.append(c)
            return true
        }
        if !keep { c.close() }
    }

    /// Closes every idle reader; readers in use close when their read ends. Later reads get `nil`.
    func close() {
        let idle = state.withLock { s -> [SQLiteConnection] in
            s.closed = true
            defer { s.idle.removeAll() }
            return s.idle
        }
        for c in idle { c.close() }
    }
}
