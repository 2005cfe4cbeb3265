import Foundation
import StoreAPI
import StoreSync
import StoreTestSupport
import Testing

/// Random convergence: three replicas of different backend types make seeded random inserts, updates, deletes and
/// relinks with random partial syncs; after a full sync every replica holds the same records (the comparison
/// `storectl diff` uses). Short by default; `STORESYNC_SEEDS=n` and `STORESYNC_STEPS=n` run more and longer, and
/// `STORESYNC_SEED=n` replays one seed.
@Suite("Sync convergence")
struct SyncConvergenceTests {
    static let seeds: [UInt64] = {
        let env = ProcessInfo.processInfo.environment
        if let one = env["STORESYNC_SEED"].flatMap(UInt64.init) { return [one] }
        let count = env["STORESYNC_SEEDS"].flatMap(Int.init) ?? 4
        return (0..<UInt64(max(1, count))).map { 0x5EED_0000 + $0 }
    }()
    static let steps = ProcessInfo.processInfo.environment["STORESYNC_STEPS"].flatMap(Int.init) ?? 80

    @Test(arguments: seeds)
    func randomChangesOnThreeBackendsConverge(seed: UInt64) async throws {
        let dir = try TemporaryDirectory("sync-random")
        // Odd seeds go through a folder, even ones through memory: both remotes see the same workload.
        let remote: any SyncRemote = seed % 2 == 1
            ? try FolderRemote(directory: try dir.directory("remote"), container: "random")
            : InMemoryRemote()
        try await converge(seed: seed, through: remote, in: dir)
    }

    /// The same workload through the PostgreSQL remote, every seed.
    @Test(.enabled(if: PostgresTestServer.isAvailable, PostgresTestServer.skipReason), arguments: seeds)
    func randomChangesConvergeThroughPostgres(seed: UInt64) async throws {
        let dir = try TemporaryDirectory("sync-random-pg")
        try await converge(seed: seed, through: try RemoteKind.postgres.make(container: "random"), in: dir)
    }

    /// The same workload through a remote that delivers every listed file twice, in a shuffled order.
    @Test(arguments: seeds.prefix(2))
    func randomChangesConvergeThroughDuplicatedAndReorderedDeliveries(seed: UInt64) async throws {
        let dir = try TemporaryDirectory("sync-random-chaos")
        let remote = ChaoticRemote(InMemoryRemote(), seed: seed)
        try await converge(seed: seed, through: remote, in: dir)
        #expect(remote.deliveries > 0)
    }

    private func converge(seed: UInt64, through remote: any SyncRemote, in dir: TemporaryDirectory) async throws {
        var rng = SeededGenerator(seed: seed)
        let replicas = try [
            Replica(dir.path("r0.sqlite"), type: "sqlite", remote: remote),
            Replica(dir.path("r1.lmdb"), type: "lmdb", remote: remote),
            Replica(dir.path("r2.xml"), type: "xml", remote: remote),
        ]
        var log: [String] = []
        do {
            for step in 0..<Self.steps {
                let r = rng.below(replicas.count)
                let what = try change(replicas[r], &rng)
                if what == "sync" { try await replicas[r].sync() }
                log.append("\(step): r\(r) \(what)")
            }
            for _ in 0..<2 { for r in replicas { try await r.sync() } }
        } catch {
            Issue.record("seed \(seed): \(error)\n\(log.suffix(12).joined(separator: "\n"))")
            return
        }
        for (i, r) in replicas.enumerated().dropFirst() {
            let d = try replicas[0].differences(from: r)
            #expect(d.isIdentical, "seed \(seed) (replay with STORESYNC_SEED=\(seed)): r0 vs r\(i): \(d.summary)")
        }
        #expect(try replicas[0].count("Author") + replicas[0].count("Book") > 0, "seed \(seed): the run kept some records")
    }

    /// One random change or sync on one replica; returns what it did, for the failure message.
    private func change(_ r: Replica, _ rng: inout SeededGenerator) throws -> String {
        let c = r.context()
        let authors = try c.fetch(FetchRequest(entity: "Author"))
        let books = try c.fetch(FetchRequest(entity: "Book"))
        let tags = try c.fetch(FetchRequest(entity: "Tag"))
        let tagNames = ["sf", "fantasy", "essay", "poetry", "crime"]
        switch rng.below(12) {
        case 0, 1:
            try c.insert("Author", ["name": .string("author \(rng.below(1000))"), "born": .integer32(Int32(rng.below(2000)))])
        case 2, 3:
            let b = try c.insert("Book", ["title": .string("book \(rng.below(1000))"), "pages": .integer64(Int64(rng.below(900)))])
            if !authors.isEmpty, rng.below(2) == 0 { try b.setObject(rng.pick(authors), forKey: "author") }
        case 4:
            let free = try tagNames.filter { n in try !tags.contains { try $0.value(forKey: "name") == .string(n) } }
            guard !free.isEmpty else { return "no free tag name" }
            let t = try c.insert("Tag", ["name": .string(rng.pick(free))])
            if !books.isEmpty { try t.addObject(rng.pick(books), forKey: "books") }
        case 5:
            guard !books.isEmpty else { return "no book to edit" }
            let b = rng.pick(books)
            if rng.below(2) == 0 { try b.setValue(.string("retitled \(rng.below(1000))"), forKey: "title") }
            else { try b.setValue(.double(Double(rng.below(50)) / 10), forKey: "rating") }
        case 6:
            guard !authors.isEmpty else { return "no author to edit" }
            try rng.pick(authors).setValue(.integer32(Int32(rng.below(2000))), forKey: "born")
        case 7:
            let all = authors + books + tags
            guard !all.isEmpty else { return "nothing to delete" }
            try c.delete(rng.pick(all))
        case 8:
            guard !books.isEmpty else { return "no book to relink" }
            let target = authors.isEmpty || rng.below(4) == 0 ? nil : rng.pick(authors)
            try rng.pick(books).setObject(target, forKey: "author")
        case 9:
            guard !books.isEmpty, !tags.isEmpty else { return "no tag to move" }
            let b = rng.pick(books)
            let t = rng.pick(tags)
            if try b.objects(forKey: "tags").contains(where: { $0 === t }) { try b.removeObject(t, forKey: "tags") }
            else { try b.addObject(t, forKey: "tags") }
        case 10:
            guard books.count > 1 else { return "too few books to relate" }
            let b = rng.pick(books)
            let others = books.filter { $0 !== b }
            try b.setObjects((0..<rng.below(3)).map { _ in rng.pick(others) }.reduce(into: []) { list, o in
                if !list.contains(where: { $0 === o }) { list.append(o) }
            }, forKey: "related")
        default:
            return "sync"
        }
        try c.save()
        return "change"
    }
}

/// A remote that lists every new file twice and in a seeded random order: duplicated and reordered deliveries.
final class ChaoticRemote: SyncRemote, @unchecked Sendable {
    private let inner: any SyncRemote
    private let lock = NSLock()
    private var rng: SeededGenerator
    private var delivered = 0

    init(_ inner: any SyncRemote, seed: UInt64) {
        self.inner = inner
        self.rng = SeededGenerator(seed: seed ^ 0xC4A0_5000)
    }

    /// Files listed so far, duplicates included.
    var deliveries: Int { lock.withLock { delivered } }

    var displayName: String { "chaos:" + inner.displayName }
    func identity() async throws -> String { try await inner.identity() }
    func fetch(_ name: ChangeFileName) async throws -> Data { try await inner.fetch(name) }
    func put(_ data: Data, as name: ChangeFileName) async throws -> PutOutcome { try await inner.put(data, as: name) }

    func list(after cursor: SyncCursor?) async throws -> RemoteListing {
        var listing = try await inner.list(after: cursor)
        lock.withLock {
            var names = listing.names + listing.names
            for i in names.indices.reversed() where i > 0 { names.swapAt(i, rng.below(i + 1)) }
            listing.names = names
            delivered += names.count
        }
        return listing
    }
}
