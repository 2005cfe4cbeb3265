import Foundation
import PostgresBackend
import StoreAPI
import StoreSync
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A remote on a PostgreSQL server, the server of record: an append-only change log in tables of its own schema,
/// read with a commit-safe cursor, and `LISTEN`/`NOTIFY` to wake peers when changes arrive.
///
/// The URL is `postgres://[user[:password]@]host[:port]/database[?schema=NAME][&libpq parameter=value…]`; the
/// remote's tables live in `schema` (`storesync` by default) and it never touches another schema. Each container
/// (``StoreAPI/SyncOptions/containerIdentifier``) is a dataset of its own with its own identity, made when its first
/// peer connects; a container made again (its schema dropped and re-created) has a new identity, so the stores that
/// synced with the old one refuse to merge into it (`SyncError.remoteIdentityChanged`).
///
/// Peers acknowledge the position they have applied (``acknowledge(_:peer:)``), and history is purged only at or
/// below the lowest acknowledged position (``purge(upTo:)``); listing from a cursor below the purge horizon throws
/// `SyncError.historyPurged`, and the engine re-baselines.
///
/// **The cursor.** Change files get positions from a sequence, and a sequence alone is not commit-ordered: a writer
/// that took position 7 may commit after one that took 8, and a reader that had already moved past 8 would never
/// see 7. Appends therefore take a transaction-scoped advisory lock of the container *before* they take a position
/// and keep it until they commit, so positions become visible strictly in order and "every position after my
/// cursor" never skips a committed file. Appends are a few per sync and short, so serialising them costs nothing
/// that matters, and the cursor stays a plain position that any SQL client can read (the alternative, a
/// per-transaction `pg_current_xact_id()` with a `pg_snapshot_xmin` visibility bound, lets appends run in parallel
/// but makes every reader reason about snapshots).
///
/// Every call runs on the remote's own thread, so a slow server never holds up a caller's executor; the engine
/// bounds each call with its timeout. A lost connection is a `SyncError.remote` and the next
/// call connects again.
public final class PostgresRemote: PurgeableSyncRemote, NotifyingSyncRemote {
    let location: RemoteLocation
    /// The container: the dataset's name in the remote's tables.
    public let container: String
    private let connectTimeout: Double
    private let main: Worker
    private let listener: Worker
    private let names: SQLNames

    /// A remote for `container` at the server and schema `url` names. Nothing is contacted until the first call.
    ///
    /// - Parameters:
    ///   - url: `postgres://[user[:password]@]host[:port]/database[?schema=NAME][&libpq parameter=value…]`.
    ///   - container: the dataset's name (1 to 200 bytes): peers of one dataset use the same one.
    ///   - connectTimeout: seconds a connection attempt may take (libpq's `connect_timeout`, unless the URL sets
    ///     one).
    public init(url: URL, container: String, connectTimeout: Double = 10) throws {
        guard !container.isEmpty, container.utf8.count <= 200, !container.utf8.contains(0) else {
            throw SyncError.unsupportedRemote(SyncRemotes.displayName(of: url), reason: "'\(container)' is not a usable container name "
                + "(1 to 200 bytes without NUL)")
        }
        self.location = try RemoteLocation(url)
        self.container = container
        self.connectTimeout = connectTimeout
        self.names = SQLNames(schema: location.schema, container: container)
        self.main = Worker(label: "storesync.postgres")
        self.listener = Worker(label: "storesync.postgres.listen")
    }

    /// A remote for `options`: its remote URL and container.
    public convenience init(options: SyncOptions, connectTimeout: Double = 10) throws {
        try self.init(url: options.remote, container: options.containerIdentifier, connectTimeout: connectTimeout)
    }

    /// Registers this remote for `postgres://` and `postgresql://` remote URLs with `SyncRemotes`, so
    /// that engines made without an explicit remote (and `storectl sync`) use it.
    public static func register() {
        for scheme in ["postgres", "postgresql"] {
            SyncRemotes.register(scheme: scheme) { options in try PostgresRemote(options: options) }
        }
    }

    /// The server URL without its password, and the container.
    public var displayName: String { "\(location.displayName) (container \(container))" }

    // MARK: SyncRemote

    /// The container's identity, made with the container by the first peer (with the remote's tables when the
    /// schema holds none yet).
    public func identity() async throws -> String {
        try await run { c in
            if let id = try? self.readIdentity(c) { return id }
            try self.prepare(c)
            guard let id = try self.readIdentity(c) else {
                throw SyncError.remote(self.displayName, reason: "the container has no identity after it was made")
            }
            return id
        }
    }

    /// The change files committed after the cursor's position, in position order; `SyncError.historyPurged`
    /// when files after the cursor were purged.
    public func list(after cursor: SyncCursor?) async throws -> RemoteListing {
        let start = try cursor.map(Self.position)
        return try await run { c in
            // One statement, one snapshot: a purge cannot slip between reading the horizon and the files.
            let rows = try c.execute(
                """
                SELECT k.purged_upto, ch.position, ch.peer, ch.sequence FROM \(self.names.containers) k
                LEFT JOIN \(self.names.changes) ch ON ch.container = k.name AND ch.position > $2
                WHERE k.name = $1 ORDER BY ch.position
                """,
                [.text(self.container), .text(String(start ?? 0))])
            guard rows.count > 0, let horizon = rows.int64(0, 0) else {
                throw SyncError.remote(self.displayName, reason: "the container does not exist (any more)")
            }
            if let start, start < horizon { throw SyncError.historyPurged(self.displayName) }
            var names: [ChangeFileName] = []
            var last = start ?? 0
            names.reserveCapacity(rows.count)
            for i in 0..<rows.count where !rows.isNull(i, 1) {
                guard let position = rows.int64(i, 1), let peer = rows.text(i, 2).flatMap(UUID.init(uuidString:)),
                      let sequence = rows.int64(i, 3)
                else { throw SyncError.remote(self.displayName, reason: "the change log holds a malformed row") }
                names.append(ChangeFileName(peer: peer, sequence: sequence))
                last = position
            }
            return RemoteListing(names: names, cursor: SyncCursor(rawValue: String(last)))
        }
    }

    /// The bytes of one change file.
    public func fetch(_ name: ChangeFileName) async throws -> Data {
        try await run { c in
            let rows = try c.execute(
                "SELECT data FROM \(self.names.changes) WHERE container = $1 AND peer = $2::uuid AND sequence = $3",
                [.text(self.container), .text(name.peer.uuidString), .text(String(name.sequence))], binaryResults: true)
            guard rows.count == 1, let data = rows.data(0, 0) else {
                throw SyncError.remote(self.displayName, reason: "no change file \(name)")
            }
            return data
        }
    }

    /// Appends the file under the container's append lock, and notifies listening peers when it commits.
    public func put(_ data: Data, as name: ChangeFileName) async throws -> PutOutcome {
        try await put([(name: name, data: data)]).first ?? .alreadyExists
    }

    /// The bytes of several change files, in one statement.
    public func fetch(_ names: [ChangeFileName]) async throws -> [Data] {
        guard !names.isEmpty else { return [] }
        return try await run { c in
            let rows = try c.execute(
                """
                SELECT ch.peer, ch.sequence, ch.data FROM \(self.names.changes) ch
                JOIN unnest($2::uuid[], $3::bigint[]) AS wanted(peer, sequence)
                ON ch.peer = wanted.peer AND ch.sequence = wanted.sequence
                WHERE ch.container = $1
                """,
                [.text(self.container), .text("{" + names.map(\.peer.uuidString).joined(separator: ",") + "}"),
                 .text("{" + names.map { String($0.sequence) }.joined(separator: ",") + "}")],
                binaryResults: true)
            var found: [ChangeFileName: Data] = [:]
            for i in 0..<rows.count {
                guard let peer = rows.data(i, 0).flatMap(Self.uuid), let sequence = rows.data(i, 1).flatMap(Self.int64),
                      let data = rows.data(i, 2)
                else { throw SyncError.remote(self.displayName, reason: "the change log holds a malformed row") }
                found[ChangeFileName(peer: peer, sequence: sequence)] = data
            }
            return try names.map { name in
                guard let data = found[name] else { throw SyncError.remote(self.displayName, reason: "no change file \(name)") }
                return data
            }
        }
    }

    /// Appends the files in one transaction under the container's append lock, stopping at the first name that
    /// exists, and notifies listening peers once when it commits.
    public func put(_ files: [(name: ChangeFileName, data: Data)]) async throws -> [PutOutcome] {
        guard !files.isEmpty else { return [] }
        return try await run { c in
            try c.transaction {
                try c.execute("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", [.text(self.names.lockKey)])
                var outcomes: [PutOutcome] = []
                var last: String?
                for file in files {
                    let rows = try c.execute(
                        """
                        INSERT INTO \(self.names.changes) (container, position, peer, sequence, data)
                        VALUES ($1, nextval('\(self.names.sequenceLiteral)'), $2::uuid, $3, $4::bytea)
                        ON CONFLICT (container, peer, sequence) DO NOTHING RETURNING position
                        """,
                        [.text(self.container), .text(file.name.peer.uuidString), .text(String(file.name.sequence)),
                         .bytes(file.data)])
                    guard rows.count == 1, let position = rows.text(0, 0) else {
                        outcomes.append(.alreadyExists)
                        break
                    }
                    outcomes.append(.created)
                    last = position
                }
                if let last { try c.execute("SELECT pg_notify($1, $2)", [.text(self.names.channel), .text(last)]) }
                return outcomes
            }
        }
    }

    /// A `uuid` in binary form.
    private static func uuid(_ d: Data) -> UUID? {
        guard d.count == 16 else { return nil }
        var u: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        withUnsafeMutableBytes(of: &u) { $0.copyBytes(from: d) }
        return UUID(uuid: u)
    }

    /// A `bigint` in binary form (big-endian).
    private static func int64(_ d: Data) -> Int64? {
        guard d.count == 8 else { return nil }
        return d.reduce(Int64(0)) { $0 << 8 | Int64($1) }
    }

    // MARK: Acknowledgements and purge

    /// Records the peer's applied position (a lower one than recorded is ignored).
    public func acknowledge(_ cursor: SyncCursor, peer: UUID) async throws {
        let position = try Self.position(cursor)
        try await run { c in
            _ = try c.execute(
                """
                INSERT INTO \(self.names.acknowledgements) (container, peer, position) VALUES ($1, $2::uuid, $3)
                ON CONFLICT (container, peer) DO UPDATE
                SET position = greatest(\(self.names.acknowledgements).position, EXCLUDED.position), acknowledged = now()
                """,
                [.text(self.container), .text(peer.uuidString), .text(String(position))])
        }
    }

    /// Every peer's acknowledged position.
    public func acknowledgements() async throws -> [UUID: SyncCursor] {
        try await run { c in
            let rows = try c.execute("SELECT peer, position FROM \(self.names.acknowledgements) WHERE container = $1",
                                     [.text(self.container)])
            var result: [UUID: SyncCursor] = [:]
            for i in 0..<rows.count {
                if let peer = rows.text(i, 0).flatMap(UUID.init(uuidString:)), let p = rows.text(i, 1) {
                    result[peer] = SyncCursor(rawValue: p)
                }
            }
            return result
        }
    }

    /// Deletes the files at or below the lower of `limit` and every acknowledged position, in one transaction that
    /// also moves the purge horizon.
    public func purge(upTo limit: SyncCursor) async throws -> Int {
        let position = try Self.position(limit)
        return try await run { c in
            try c.transaction {
                // Under the append lock: no file commits at a position the horizon passes while this runs.
                try c.execute("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", [.text(self.names.lockKey)])
                let rows = try c.execute(
                    "SELECT least($2::bigint, min(position)) FROM \(self.names.acknowledgements) WHERE container = $1",
                    [.text(self.container), .text(String(position))])
                let horizon = rows.int64(0, 0) ?? position
                let deleted = try c.execute("DELETE FROM \(self.names.changes) WHERE container = $1 AND position <= $2",
                                            [.text(self.container), .text(String(horizon))])
                try c.execute("UPDATE \(self.names.containers) SET purged_upto = greatest(purged_upto, $2) WHERE name = $1",
                              [.text(self.container), .text(String(horizon))])
                return deleted.affected
            }
        }
    }

    /// Forgets the peer's acknowledgement.
    public func forget(peer: UUID) async throws {
        try await run { c in
            _ = try c.execute("DELETE FROM \(self.names.acknowledgements) WHERE container = $1 AND peer = $2::uuid",
                          [.text(self.container), .text(peer.uuidString)])
        }
    }

    // MARK: Notifications

    /// Starts listening for new change files on a connection of its own, so that a file appended from now on wakes
    /// ``waitForChanges(timeout:)`` even if it arrives before that is called.
    public func startListening() async throws {
        try await listen { _ in () }
    }

    /// Waits until another peer appends a change file (or one was appended since the last wait), at most `timeout`
    /// seconds. Returns whether one was; a lost connection throws and the next call listens again.
    public func waitForChanges(timeout: Double) async throws -> Bool {
        try await listen { c in
            if try c.drainNotifications() > 0 { return true }
            let deadline = Date().addingTimeInterval(max(0, timeout))
            while true {
                let left = deadline.timeIntervalSinceNow
                guard left > 0 else { return false }
                var fd = pollfd(fd: c.socket, events: Int16(POLLIN), revents: 0)
                let ready = poll(&fd, 1, Int32(min(left * 1000, 60_000).rounded(.up)))
                if ready < 0, errno != EINTR {
                    throw SyncError.remote(self.displayName, reason: "cannot wait for notifications: \(String(cString: strerror(errno)))")
                }
                if try c.drainNotifications() > 0 { return true }
            }
        }
    }

    // MARK: Internals

    private func run<T: Sendable>(_ body: @escaping @Sendable (RemoteConnection) throws -> T) async throws -> T {
        try await main.run(connect: { try RemoteConnection(self.location, connectTimeout: self.connectTimeout) }, body)
    }

    private func listen<T: Sendable>(_ body: @escaping @Sendable (RemoteConnection) throws -> T) async throws -> T {
        try await listener.run(connect: {
            let c = try RemoteConnection(self.location, connectTimeout: self.connectTimeout)
            try c.execute("LISTEN \(RemoteLocation.quote(self.names.channel))")
            return c
        }, body)
    }

    private func readIdentity(_ c: RemoteConnection) throws -> String? {
        let rows = try c.execute("SELECT identity FROM \(names.containers) WHERE name = $1", [.text(container)])
        return rows.count == 1 ? rows.text(0, 0)?.uppercased() : nil
    }

    /// Creates the schema's tables if they are missing and the container if it is new, under a lock, so two peers
    /// starting at once do not race.
    private func prepare(_ c: RemoteConnection) throws {
        try c.transaction {
            try c.execute("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", [.text(names.setupLockKey)])
            for statement in names.setup { try c.execute(statement) }
            try storeFilesUncompressed(c)
            try c.execute("INSERT INTO \(names.containers) (name, identity) VALUES ($1, $2::uuid) ON CONFLICT (name) DO NOTHING",
                          [.text(container), .text(UUID().uuidString)])
        }
    }

    /// Has the change table keep files as they are, not compressed: compressing every file a push appends was a
    /// large part of the server's work on it, and each pull then decompressed them again. Only a table this role
    /// owns is changed (another's is left as it is); files stored either way read the same.
    private func storeFilesUncompressed(_ c: RemoteConnection) throws {
        let rows = try c.execute(
            """
            SELECT a.attstorage <> 'e' AND pg_has_role(t.relowner, 'USAGE') FROM pg_attribute a
            JOIN pg_class t ON t.oid = a.attrelid WHERE a.attrelid = $1::regclass AND a.attname = 'data'
            """,
            [.text(names.changes)])
        guard rows.count == 1, rows.text(0, 0) == "t" else { return }
        try c.execute("ALTER TABLE \(names.changes) ALTER COLUMN data SET STORAGE EXTERNAL")
    }

    static func position(_ cursor: SyncCursor) throws -> Int64 {
        guard let n = Int64(cursor.rawValue), n >= 0 else {
            throw SyncError.remote("postgres", reason: "'\(cursor.rawValue)' is not a cursor of a PostgreSQL remote")
        }
        return n
    }
}

/// A connection and the serial queue every use of it runs on.
final class Worker: @unchecked Sendable {
    private let queue: DispatchQueue
    /// Only touched on `queue`.
    private var connection: RemoteConnection?

    init(label: String) { queue = DispatchQueue(label: label) }

    /// Runs `body` on the queue with a healthy connection (made by `connect` when there is none or it broke).
    func run<T: Sendable>(connect: @escaping @Sendable () throws -> RemoteConnection,
                          _ body: @escaping @Sendable (RemoteConnection) throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
            queue.async {
                do {
                    if let c = self.connection, !c.isHealthy {
                        c.close()
                        self.connection = nil
                    }
                    let c = try self.connection ?? connect()
                    self.connection = c
                    do {
                        continuation.resume(returning: try body(c))
                    } catch {
                        if !c.isHealthy {
                            c.close()
                            self.connection = nil
                        }
                        continuation.resume(throwing: error)
                    }
                } catch {
                    continuation.resume(throwing: error)
                }
            }
        }
    }

    /// Closes the connection (after the calls already queued).
    func close() {
        queue.async {
            self.connection?.close()
            self.connection = nil
        }
    }

    deinit { connection?.close() }
}

/// The remote's SQL names: its tables in its schema, its lock keys and its notification channel.
struct SQLNames: Sendable {
    let schema: String
    let containers: String
    let changes: String
    let acknowledgements: String
    /// The position sequence as a `regclass` literal for `nextval`.
    let sequenceLiteral: String
    let lockKey: String
    let setupLockKey: String
    /// The `NOTIFY` channel of the container: a hash, since channel names are identifiers of at most 63 bytes.
    let channel: String
    let setup: [String]

    init(schema: String, container: String) {
        self.schema = schema
        let s = RemoteLocation.quote(schema)
        containers = "\(s).containers"
        changes = "\(s).changes"
        acknowledgements = "\(s).acknowledgements"
        let sequence = "\(s).change_position"
        sequenceLiteral = sequence.replacingOccurrences(of: "'", with: "''")
        lockKey = "storesync append \(schema)\u{1F}\(container)"
        setupLockKey = "storesync setup \(schema)"
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in "\(schema)\u{1F}\(container)".utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x0000_0100_0000_01b3
        }
        channel = "storesync_" + String(hash, radix: 16)
        setup = [
            "CREATE SCHEMA IF NOT EXISTS \(s)",
            """
            CREATE TABLE IF NOT EXISTS \(containers) (
                name text PRIMARY KEY,
                identity uuid NOT NULL,
                created timestamptz NOT NULL DEFAULT now(),
                purged_upto bigint NOT NULL DEFAULT 0)
            """,
            "CREATE SEQUENCE IF NOT EXISTS \(sequence)",
            """
            CREATE TABLE IF NOT EXISTS \(changes) (
                container text NOT NULL REFERENCES \(containers) (name) ON DELETE CASCADE,
                position bigint NOT NULL,
                peer uuid NOT NULL,
                sequence bigint NOT NULL,
                data bytea NOT NULL,
                PRIMARY KEY (container, position),
                UNIQUE (container, peer, sequence))
            """,
            """
            CREATE TABLE IF NOT EXISTS \(acknowledgements) (
                container text NOT NULL REFERENCES \(containers) (name) ON DELETE CASCADE,
                peer uuid NOT NULL,
                position bigint NOT NULL,
                acknowledged timestamptz NOT NULL DEFAULT now(),
                PRIMARY KEY (container, peer))
            """,
        ]
    }
}
