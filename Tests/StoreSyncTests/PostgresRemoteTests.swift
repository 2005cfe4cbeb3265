import Foundation
import StoreAPI
import StoreSync
@testable import StoreSyncPostgres
import StoreTestSupport
import Testing

/// The PostgreSQL remote against the tests' private server: the change log and its commit-safe cursor, LISTEN,
/// its identity, and the server going away in the middle of a sync.
@Suite("PostgreSQL remote", .enabled(if: PostgresTestServer.isAvailable, PostgresTestServer.skipReason))
struct PostgresRemoteTests {
    private func remoteURL() throws -> URL { try PostgresTestServer.shared().storeURL("remote") }

    /// A connection for the test itself (as the superuser), to look at and tamper with the server.
    private func admin(_ url: URL) throws -> RemoteConnection {
        try RemoteConnection(RemoteLocation(url), connectTimeout: 10)
    }

    @Test func putIsOnceFetchGivesTheBytesAndListingFollowsTheCursor() async throws {
        let url = try remoteURL()
        let remote = try PostgresRemote(url: url, container: "c")
        let identity = try await remote.identity()
        #expect(UUID(uuidString: identity) != nil)
        #expect(try await PostgresRemote(url: url, container: "c").identity() == identity, "one container, one identity")
        #expect(try await PostgresRemote(url: url, container: "other").identity() != identity)

        let peer = UUID()
        // Every byte value, so that nothing is read or written as text.
        let bytes = Data((0..<1024).map { UInt8(truncatingIfNeeded: $0) })
        #expect(try await remote.put(bytes, as: ChangeFileName(peer: peer, sequence: 1)) == .created)
        #expect(try await remote.put(Data("other".utf8), as: ChangeFileName(peer: peer, sequence: 1)) == .alreadyExists)
        #expect(try await remote.fetch(ChangeFileName(peer: peer, sequence: 1)) == bytes)
        await #expect(throws: SyncError.self) { try await remote.fetch(ChangeFileName(peer: peer, sequence: 9)) }

        let first = try await remote.list(after: nil)
        #expect(first.names == [ChangeFileName(peer: peer, sequence: 1)])
        #expect(try await remote.list(after: first.cursor).names.isEmpty)
        #expect(try await remote.put(Data([1]), as: ChangeFileName(peer: peer, sequence: 2)) == .created)
        #expect(try await remote.list(after: first.cursor).names == [ChangeFileName(peer: peer, sequence: 2)])
        await #expect(throws: SyncError.self) { try await remote.list(after: SyncCursor(rawValue: "not a position")) }

        // Only the URL's schema holds the remote's tables.
        let schema = try RemoteLocation(url).schema
        let tables = try admin(url).execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = $1 ORDER BY 1", [.text(schema)])
        #expect((0..<tables.count).compactMap { tables.text($0, 0) } == ["acknowledgements", "changes", "containers"])
        let outside = try admin(url).execute("SELECT count(*) FROM information_schema.tables WHERE table_schema = 'public'")
        #expect(outside.text(0, 0) == "0", "nothing outside the remote's schema")
    }

    /// Writers append concurrently while a reader follows its cursor: every committed file is listed exactly once,
    /// none is skipped because a later position committed first.
    @Test func concurrentAppendsAreNeverSkippedByAReader() async throws {
        let url = try remoteURL()
        let reader = try PostgresRemote(url: url, container: "c")
        _ = try await reader.identity()
        let writers = 4, files = 15
        let peers = (0..<writers).map { _ in UUID() }
        let written = try await withThrowingTaskGroup(of: Int.self) { group in
            for w in 0..<writers {
                group.addTask {
                    let remote = try PostgresRemote(url: url, container: "c")
                    for s in 1...files {
                        _ = try await remote.put(Data(repeating: UInt8(w), count: 2_000 * (s % 3 + 1)),
                                                 as: ChangeFileName(peer: peers[w], sequence: Int64(s)))
                    }
                    return files
                }
            }
            return try await group.reduce(0, +)
        }
        var seen: [ChangeFileName] = []
        var cursor: SyncCursor?
        // Listed once the writers are done: complete, and each peer's files in its order.
        for _ in 0..<3 {
            let listing = try await reader.list(after: cursor)
            seen += listing.names
            cursor = listing.cursor
        }
        #expect(written == writers * files)
        #expect(seen.count == written && Set(seen).count == written)
        for p in peers {
            let sequences = seen.filter { $0.peer == p }.map(\.sequence)
            #expect(sequences == Array(1...Int64(files)), "a peer's files are listed in the order it wrote them")
        }
    }

    /// The reader follows its cursor *while* the writers append, with the appends' commits delayed at random.
    @Test func aReaderFollowingItsCursorDuringAppendsMissesNothing() async throws {
        let url = try remoteURL()
        let reader = try PostgresRemote(url: url, container: "c")
        _ = try await reader.identity()
        let writers = 3, files = 20
        async let writing: Void = withThrowingTaskGroup(of: Void.self) { group in
            for w in 0..<writers {
                group.addTask {
                    let remote = try PostgresRemote(url: url, container: "c")
                    let peer = UUID()
                    for s in 1...files {
                        _ = try await remote.put(Data([UInt8(w)]), as: ChangeFileName(peer: peer, sequence: Int64(s)))
                    }
                }
            }
            try await group.waitForAll()
        }
        var seen: [ChangeFileName] = []
        var cursor: SyncCursor?
        for _ in 0..<200 {
            let listing = try await reader.list(after: cursor)
            seen += listing.names
            cursor = listing.cursor
            if seen.count >= writers * files { break }
        }
        try await writing
        let rest = try await reader.list(after: cursor)
        seen += rest.names
        #expect(seen.count == writers * files, "every file is listed")
        #expect(Set(seen).count == seen.count, "and only once")
    }

    @Test func listenWakesAPeerWhenAFileArrives() async throws {
        let url = try remoteURL()
        let a = try PostgresRemote(url: url, container: "c")
        let b = try PostgresRemote(url: url, container: "c")
        _ = try await a.identity()
        try await b.startListening()
        let quiet = ContinuousClock.now
        #expect(try await b.waitForChanges(timeout: 0.3) == false)
        #expect(ContinuousClock.now - quiet >= .milliseconds(250))
        _ = try await a.put(Data([1]), as: ChangeFileName(peer: UUID(), sequence: 1))
        let start = ContinuousClock.now
        #expect(try await b.waitForChanges(timeout: 10) == true)
        #expect(ContinuousClock.now - start < .seconds(5))
        // Another container's files do not wake it.
        let other = try PostgresRemote(url: url, container: "elsewhere")
        _ = try await other.identity()
        _ = try await other.put(Data([1]), as: ChangeFileName(peer: UUID(), sequence: 1))
        #expect(try await b.waitForChanges(timeout: 0.3) == false)
    }

    /// Change files are kept as they are on the server, not compressed; files the table holds compressed (written
    /// while it was set up by an earlier version) read the same.
    @Test func changeFilesAreStoredUncompressedAndCompressedOnesStillRead() async throws {
        let url = try remoteURL()
        let remote = try PostgresRemote(url: url, container: "c")
        _ = try await remote.identity()
        let schema = try RemoteLocation(url).schema
        let table = RemoteLocation.quote(schema) + ".changes"
        let admin = try admin(url)
        let storage = try admin.execute(
            "SELECT attstorage FROM pg_attribute WHERE attrelid = $1::regclass AND attname = 'data'", [.text(table)])
        #expect(storage.text(0, 0) == "e", "the change table stores its files uncompressed")
        // Well over the size the server moves out of the row, and as compressible as a change file's repeated lines.
        let file = Data(String(repeating: "V\t0\t0\t\"a value\"\n", count: 20_000).utf8)
        let peer = UUID()
        #expect(try await remote.put(file, as: ChangeFileName(peer: peer, sequence: 1)) == .created)
        func compression(_ sequence: Int64) throws -> String? {
            try admin.execute("SELECT pg_column_compression(data) FROM \(table) WHERE peer = $1::uuid AND sequence = $2",
                              [.text(peer.uuidString), .text(String(sequence))]).text(0, 0)
        }
        #expect(try compression(1) == nil, "stored as it is")
        #expect(try await remote.fetch(ChangeFileName(peer: peer, sequence: 1)) == file)

        // The table as an earlier version set it up: files are compressed; they read back the same.
        try admin.execute("ALTER TABLE \(table) ALTER COLUMN data SET STORAGE EXTENDED")
        #expect(try await remote.put(file, as: ChangeFileName(peer: peer, sequence: 2)) == .created)
        #expect(try compression(2) != nil, "compressed")
        #expect(try await remote.fetch([ChangeFileName(peer: peer, sequence: 2), ChangeFileName(peer: peer, sequence: 1)])
            == [file, file])
        // A new container on that table has it store files uncompressed again.
        _ = try await PostgresRemote(url: url, container: "next").identity()
        #expect(try admin.execute("SELECT attstorage FROM pg_attribute WHERE attrelid = $1::regclass AND attname = 'data'",
                                  [.text(table)]).text(0, 0) == "e")
    }

    @Test func twoStoresSyncThroughPostgres() async throws {
        let dir = try TemporaryDirectory("sync-pg-two")
        let url = try remoteURL()
        let options = SyncOptions(remote: url, containerIdentifier: "library")
        PostgresRemote.register()
        let remote = try SyncRemotes.remote(for: options)
        #expect(remote is PostgresRemote)
        let a = try Replica(dir.path("a.sqlite"), type: "sqlite", remote: remote, options: options)
        let b = try Replica(dir.path("b.lmdb"), type: "lmdb", remote: try PostgresRemote(options: options), options: options)
        let author = try a.insert("Author", ["name": "Le Guin"])
        try await a.sync()
        let pulled = try await b.sync()
        #expect(pulled.insertedRecords == 1)
        try b.update(author) { o, _ in try o.setValue(.integer32(1929), forKey: "born") }
        try await b.sync()
        try await a.sync()
        #expect(try a.value(author, "born") == .integer32(1929))
        #expect(try a.differences(from: b).isIdentical)
    }

    /// The container made again (its schema dropped and re-created, another database behind the same URL): the
    /// store refuses to merge into the new dataset and is unchanged.
    @Test func aRecreatedRemoteIsAnotherDatasetAndDetachesInsteadOfMerging() async throws {
        let dir = try TemporaryDirectory("sync-pg-identity")
        let url = try remoteURL()
        let a = try Replica(dir.path("a.sqlite"), type: "sqlite", remote: try PostgresRemote(url: url, container: "c"))
        try a.insert("Author", ["name": "kept"])
        try await a.sync()
        let schema = try RemoteLocation(url).schema
        try admin(url).execute("DROP SCHEMA \(RemoteLocation.quote(schema)) CASCADE")
        try a.insert("Author", ["name": "not pushed"])
        let error = await #expect(throws: SyncError.self) { try await a.sync() }
        guard case .remoteIdentityChanged = error else {
            Issue.record("expected remoteIdentityChanged, got \(String(describing: error))")
            return
        }
        #expect(try a.count("Author") == 2)
        #expect(try await PostgresRemote(url: url, container: "c").list(after: nil).names.isEmpty, "nothing was merged into it")
    }

    /// The server goes away in the middle of a push (the peer's connections are cut and new ones refused): the sync
    /// fails with a typed error, the store keeps everything, and once the server is back the next sync completes
    /// and another peer gets every record exactly once.
    @Test func serverGoneMidSyncLosesNothingAndTheNextSyncCompletes() async throws {
        let dir = try TemporaryDirectory("sync-pg-gone")
        let url = try remoteURL()
        let root = try admin(url)
        let role = "syncpeer_\(UUID().uuidString.prefix(8).lowercased())"
        try root.execute("CREATE ROLE \(role) LOGIN")
        try root.execute("GRANT CREATE ON DATABASE postgres TO \(role)")
        defer {
            _ = try? root.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = $1", [.text(role)])
            _ = try? root.execute("DROP OWNED BY \(role) CASCADE")
            _ = try? root.execute("DROP ROLE IF EXISTS \(role)")
        }
        var c = try #require(URLComponents(url: url, resolvingAgainstBaseURL: false))
        c.user = role
        let peerURL = try #require(c.url)
        let cut = CuttingRemote(try PostgresRemote(url: peerURL, container: "c"), afterPuts: 1) {
            // The server stops answering this peer: its sessions end and it cannot log in again.
            try root.execute("ALTER ROLE \(role) NOLOGIN")
            try root.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = $1", [.text(role)])
        }
        let a = try Replica(dir.path("a.sqlite"), type: "sqlite", remote: cut, timeout: 20)
        let ctx = a.context()
        for i in 0..<(2 * 2_000 + 500) { try ctx.insert("Author", ["name": .string("author \(i)"), "born": .integer32(Int32(i))]) }
        try ctx.save()
        await #expect(throws: SyncError.self) { try await a.sync() }
        #expect(try a.count("Author") == 4_500, "the store keeps everything")
        #expect(try a.engine.status().pendingTransactions > 0 || !a.engine.status().isAttached)

        try root.execute("ALTER ROLE \(role) LOGIN")
        let done = try await a.sync()
        #expect(done.pushedRecords > 0)
        let b = try Replica(dir.path("b.lmdb"), type: "lmdb", remote: try PostgresRemote(url: url, container: "c"))
        let pulled = try await b.sync()
        #expect(pulled.insertedRecords == 4_500)
        #expect(try b.count("Author") == 4_500, "every record once")
        #expect(try a.differences(from: b).isIdentical)
    }
}

/// A remote that runs `cut` before the put after the first `afterPuts` ones (once), then passes it on.
final class CuttingRemote: SyncRemote, @unchecked Sendable {
    private let inner: any SyncRemote
    private let lock = NSLock()
    private var puts = 0
    private let afterPuts: Int
    private let cut: () throws -> Void

    init(_ inner: any SyncRemote, afterPuts: Int, cut: @escaping () throws -> Void) {
        self.inner = inner
        self.afterPuts = afterPuts
        self.cut = cut
    }

    var displayName: String { inner.displayName }
    func identity() async throws -> String { try await inner.identity() }
    func list(after cursor: SyncCursor?) async throws -> RemoteListing { try await inner.list(after: cursor) }
    func fetch(_ name: ChangeFileName) async throws -> Data { try await inner.fetch(name) }
    func put(_ data: Data, as name: ChangeFileName) async throws -> PutOutcome {
        let now = lock.withLock { () -> Int in
            puts += 1
            return puts
        }
        if now == afterPuts + 1 { try cut() }
        return try await inner.put(data, as: name)
    }
}
