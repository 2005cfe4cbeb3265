import Foundation
import StoreAPI
@testable import StoreSync
import StoreTestSupport
import Testing

/// The named corner cases of sync: each ends with every replica holding the same records.
@Suite("Sync corner cases")
struct SyncCornerCaseTests {
    /// Two replicas (SQLite and LMDB), both attached and empty, syncing through one in-memory remote, in `label`'s
    /// directory, which the caller keeps alive until the replicas are done with it.
    private func pair(_ label: String) async throws -> (TemporaryDirectory, Replica, Replica) {
        let dir = try TemporaryDirectory(label)
        let remote = InMemoryRemote()
        let a = try Replica(dir.path("a.sqlite"), type: "sqlite", remote: remote)
        let b = try Replica(dir.path("b.lmdb"), type: "lmdb", remote: remote)
        try await a.sync()
        try await b.sync()
        return (dir, a, b)
    }

    private func settle(_ replicas: Replica...) async throws {
        for _ in 0..<2 { for r in replicas { try await r.sync() } }
        for r in replicas.dropFirst() {
            let d = try replicas[0].differences(from: r)
            #expect(d.isIdentical, "\(d.summary)")
        }
    }

    @Test func doubleInsertOfOneGlobalIDIsOneRecord() async throws {
        let (dir, a, b) = try await pair("sync-double-insert")
        defer { withExtendedLifetime(dir) {} }
        let id = UUID()
        try a.insert("Author", ["name": "from A", "born": .integer32(1)], globalID: id)
        try b.insert("Author", ["name": "from B"], globalID: id)
        try await settle(a, b)
        #expect(try a.count("Author") == 1 && b.count("Author") == 1)
        // Per attribute, one side's value on both.
        #expect(try a.value(id, "name") == b.value(id, "name"))
    }

    @Test func insertAfterDeleteStaysDeleted() async throws {
        let (dir, a, b) = try await pair("sync-insert-after-delete")
        defer { withExtendedLifetime(dir) {} }
        let id = try a.insert("Author", ["name": "ephemeral"])
        try await settle(a, b)
        try b.delete(id)
        try await settle(b, a)
        #expect(try a.count("Author") == 0)
        // The same global ID inserted again (an old export imported): a deleted global ID never comes back.
        try a.insert("Author", ["name": "imported again"], globalID: id)
        try await settle(a, b)
        #expect(try a.count("Author") == 0 && b.count("Author") == 0)
    }

    @Test func updateAfterDeleteStaysDeleted() async throws {
        let (dir, a, b) = try await pair("sync-update-after-delete")
        defer { withExtendedLifetime(dir) {} }
        let id = try a.insert("Author", ["name": "contested"])
        try await settle(a, b)
        try a.delete(id)
        try b.update(id) { o, _ in try o.setValue(.string("edited concurrently"), forKey: "name") }
        try await a.sync()
        try await settle(b, a)
        #expect(try a.count("Author") == 0 && b.count("Author") == 0)
    }

    @Test func equalDeletesConverge() async throws {
        let (dir, a, b) = try await pair("sync-equal-deletes")
        defer { withExtendedLifetime(dir) {} }
        let id = try a.insert("Author", ["name": "twice deleted"])
        try await settle(a, b)
        try a.delete(id)
        try b.delete(id)
        try await settle(a, b)
        #expect(try a.count("Author") == 0 && b.count("Author") == 0)
    }

    @Test func relationshipUpdateRacingDeletionOfItsTarget() async throws {
        let (dir, a, b) = try await pair("sync-link-vs-delete")
        defer { withExtendedLifetime(dir) {} }
        let c = a.context()
        let author = try c.insert("Author", ["name": "target"])
        let book = try c.insert("Book", ["title": "linked later"])
        try c.save()
        try await settle(a, b)
        try a.update(book.globalID) { o, ctx in
            let t = try #require(try a.object(author.globalID, in: ctx))
            try o.setObject(t, forKey: "author")
        }
        try b.delete(author.globalID)
        try await b.sync()
        try await a.sync()
        try await settle(a, b)
        #expect(try a.count("Author") == 0 && a.count("Book") == 1)
        let ctx = b.context()
        let bookOnB = try #require(try b.object(book.globalID, in: ctx))
        #expect(try bookOnB.object(forKey: "author") == nil)
    }

    @Test func concurrentCreationOfTheSameDeduplicationKeyMergesIntoOne() async throws {
        let (dir, a, b) = try await pair("sync-dedup")
        defer { withExtendedLifetime(dir) {} }
        // Each device tags its own book "sf", independently: two Tag records with the same name.
        func tagBook(_ r: Replica, _ title: String) throws -> (tag: UUID, book: UUID) {
            let c = r.context()
            let tag = try c.insert("Tag", ["name": "sf"])
            let book = try c.insert("Book", ["title": .string(title)])
            try book.addObject(tag, forKey: "tags")
            try c.save()
            return (tag.globalID, book.globalID)
        }
        let x = try tagBook(a, "from A")
        let y = try tagBook(b, "from B")
        try await settle(a, b)
        #expect(try a.count("Tag") == 1 && b.count("Tag") == 1)
        let winner = [x.tag, y.tag].min { $0.uuidString < $1.uuidString }
        for r in [a, b] {
            let c = r.context()
            let tags = try c.fetch(FetchRequest(entity: "Tag"))
            #expect(tags.map(\.globalID) == [winner].compactMap { $0 }, "the lowest global ID wins everywhere")
            #expect(Set(try tags.first?.objects(forKey: "books").map(\.globalID) ?? []) == [x.book, y.book],
                    "both books keep the tag")
        }
    }

    @Test func tiesAreBrokenByPeerIDTheSameEverywhere() {
        let low = UUID(uuidString: "00000000-0000-0000-0000-000000000001") ?? UUID()
        let high = UUID(uuidString: "FFFFFFFF-0000-0000-0000-000000000001") ?? UUID()
        let a = HybridLogicalClock(wall: 1_000, counter: 3, peer: low)
        let b = HybridLogicalClock(wall: 1_000, counter: 3, peer: high)
        #expect(a < b && !(b < a))
        #expect(HybridLogicalClock(wall: 999, counter: 9, peer: high) < a, "wall time first")
        #expect(HybridLogicalClock(wall: 1_000, counter: 2, peer: high) < a, "then the counter")
        // A clock that received a later stamp orders its next stamps after it, whatever the wall clock says.
        let behind = HybridLogicalClock(wall: 10, counter: 0, peer: low).receiving(b)
        let next = behind.tick(now: Date(timeIntervalSince1970: 0), peer: low)
        #expect(b < next)
        #expect(HybridLogicalClock(text: a.description) == a)
    }

    @Test func concurrentEditsOfOneAttributeConvergeToTheLaterOne() async throws {
        let (dir, a, b) = try await pair("sync-lww")
        defer { withExtendedLifetime(dir) {} }
        let id = try a.insert("Book", ["title": "draft", "pages": .integer64(10)])
        try await settle(a, b)
        try a.update(id) { o, _ in try o.setValue(.string("A's title"), forKey: "title") }
        try b.update(id) { o, _ in try o.setValue(.integer64(99), forKey: "pages") }
        try await a.sync()
        try await Task.sleep(for: .milliseconds(5))
        try b.update(id) { o, _ in try o.setValue(.string("B's later title"), forKey: "title") }
        try await settle(b, a)
        // Per attribute: B's title is later; the page count only B changed.
        #expect(try a.value(id, "title") == .string("B's later title"))
        #expect(try a.value(id, "pages") == .integer64(99))
    }

    @Test func repeatedDeliveryIsIdempotent() async throws {
        let (dir, a, b) = try await pair("sync-redelivery")
        defer { withExtendedLifetime(dir) {} }
        let id = try a.insert("Book", ["title": "once"])
        try await settle(a, b)
        // Replay every file to B as if its cursor were lost.
        let session = SyncSession(loaded: b.loaded, coordinator: b.coordinator, remote: b.remote,
                                  calls: RemoteTimeout(seconds: 10, remoteName: "test"), logger: .init(label: "test"),
                                  state: try #require(try await b.engine.currentState()),
                                  report: SyncReport(peer: UUID(), remote: "test"), index: RecordIndex())
        session.state.cursor = nil
        try await session.pull()
        #expect(session.report.insertedRecords == 0 && session.report.updatedRecords == 0)
        #expect(try b.count("Book") == 1 && b.value(id, "title") == .string("once"))
    }
}

/// To-many relationships merge as add-wins sets; ordered ones keep one deterministic order.
@Suite("Sync to-many merges")
struct SyncToManyMergeTests {
    private func replicas(_ label: String, _ n: Int) async throws -> (TemporaryDirectory, [Replica]) {
        let dir = try TemporaryDirectory(label)
        let remote = InMemoryRemote()
        let types = ["sqlite", "lmdb", "xml"]
        let rs = try (0..<n).map { try Replica(dir.path(SyncFixtures.file("r\($0)", type: types[$0 % 3])), type: types[$0 % 3], remote: remote) }
        for r in rs { try await r.sync() }
        return (dir, rs)
    }

    private func tags(_ r: Replica, _ book: UUID) throws -> Set<UUID> {
        let c = r.context()
        return Set(try #require(try r.object(book, in: c)).objects(forKey: "tags").map(\.globalID))
    }

    @Test func concurrentAddAndRemoveOfDifferentMembersBothSurvive() async throws {
        let (dir, rs) = try await replicas("sync-addwins-different", 2)
        defer { withExtendedLifetime(dir) {} }
        let (a, b) = (rs[0], rs[1])
        let book = try a.insert("Book", ["title": "tagged"])
        let t1 = try a.insert("Tag", ["name": "one"])
        let t2 = try a.insert("Tag", ["name": "two"])
        try a.update(book) { o, c in try o.addObject(try #require(try a.object(t1, in: c)), forKey: "tags") }
        try await a.sync()
        try await b.sync()
        try a.update(book) { o, c in try o.addObject(try #require(try a.object(t2, in: c)), forKey: "tags") }
        try b.update(book) { o, c in try o.removeObject(try #require(try b.object(t1, in: c)), forKey: "tags") }
        for _ in 0..<2 { for r in [a, b] { try await r.sync() } }
        #expect(try tags(a, book) == [t2] && tags(b, book) == [t2])
    }

    /// a adds the tag and b sees it; c adds the same tag without having seen a's add; then b removes it. The
    /// removal is the latest change, yet it only takes away the add b saw: c's concurrent add wins.
    @Test func concurrentAddAndRemoveOfTheSameMemberAddWins() async throws {
        let (dir, rs) = try await replicas("sync-addwins-same", 3)
        defer { withExtendedLifetime(dir) {} }
        let (a, b, c) = (rs[0], rs[1], rs[2])
        let book = try a.insert("Book", ["title": "contested"])
        let tag = try a.insert("Tag", ["name": "maybe"])
        for r in [a, b, c] { try await r.sync() }
        try a.update(book) { o, ctx in try o.addObject(try #require(try a.object(tag, in: ctx)), forKey: "tags") }
        try await a.sync()
        try await b.sync()
        try await Task.sleep(for: .milliseconds(5))
        try c.update(book) { o, ctx in try o.addObject(try #require(try c.object(tag, in: ctx)), forKey: "tags") }
        try await Task.sleep(for: .milliseconds(5))
        try b.update(book) { o, ctx in try o.removeObject(try #require(try b.object(tag, in: ctx)), forKey: "tags") }
        try await b.sync()
        try await c.sync()
        for _ in 0..<2 { for r in rs { try await r.sync() } }
        for r in rs { #expect(try tags(r, book) == [tag], "the concurrent add wins on every peer") }
        // A removal that has seen every add removes it for good.
        try a.update(book) { o, ctx in try o.removeObject(try #require(try a.object(tag, in: ctx)), forKey: "tags") }
        for _ in 0..<2 { for r in rs { try await r.sync() } }
        for r in rs { #expect(try tags(r, book).isEmpty) }
    }

    @Test func concurrentReorderingsOfAnOrderedToManyEndInOneOrder() async throws {
        let (dir, rs) = try await replicas("sync-ordered", 2)
        defer { withExtendedLifetime(dir) {} }
        let (a, b) = (rs[0], rs[1])
        let owner = try a.insert("Book", ["title": "owner"])
        let others = try (0..<4).map { try a.insert("Book", ["title": .string("related \($0)")]) }
        try await a.sync()
        try await b.sync()
        try a.update(owner) { o, c in try o.setObjects(try others.map { try #require(try a.object($0, in: c)) }, forKey: "related") }
        try b.update(owner) { o, c in try o.setObjects(try others.reversed().map { try #require(try b.object($0, in: c)) }, forKey: "related") }
        for _ in 0..<2 { for r in [a, b] { try await r.sync() } }
        func order(_ r: Replica) throws -> [UUID] {
            let c = r.context()
            return try #require(try r.object(owner, in: c)).objects(forKey: "related").map(\.globalID)
        }
        #expect(try order(a) == order(b))
        #expect(try Set(order(a)) == Set(others))
    }
}
