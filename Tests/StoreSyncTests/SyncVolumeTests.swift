import Foundation
import StoreAPI
@testable import StoreSync
import StoreTestSupport
import Testing

/// A push and a pull of many records at once, through each remote: every record arrives once, the pull is one save,
/// relationships arrive whole, and the two stores compare equal. `STORESYNC_VOLUME_RECORDS` sets how many books
/// (default 3 000) for a longer run; the timings are printed, not asserted (storebench measures them).
@Suite("Sync volume")
struct SyncVolumeTests {
    static var books: Int {
        ProcessInfo.processInfo.environment["STORESYNC_VOLUME_RECORDS"].flatMap(Int.init) ?? 3_000
    }

    @Test(arguments: SyncFixtures.remoteKinds)
    func initialPushAndPullOfManyRecordsArriveOnceInOneSave(kind: RemoteKind) async throws {
        let dir = try TemporaryDirectory()
        let remote = try kind.make(container: "volume")
        let a = try Replica(dir.url.appendingPathComponent("a.sqlite"), type: "sqlite", remote: remote)
        let n = Self.books
        let authors = max(1, n / 10)
        let context = a.context()
        var authorObjects: [ManagedObject] = []
        for i in 0..<authors {
            authorObjects.append(try context.insert("Author", ["name": .string("author \(i)"), "born": .integer32(Int32(1900 + i % 100))]))
        }
        let tags = try (0..<5).map { try context.insert("Tag", ["name": .string("tag \($0)")]) }
        for i in 0..<n {
            let book = try context.insert("Book", ["title": .string("book \(i)\t\"quoted\"\n"), "pages": .integer64(Int64(i)),
                                                   "rating": .double(Double(i % 50) / 10)])
            try book.setObject(authorObjects[i % authors], forKey: "author")
            try book.addObject(tags[i % tags.count], forKey: "tags")
        }
        try context.save()
        let total = n + authors + tags.count

        let pushStart = Date()
        let pushed = try await a.sync()
        let pushTime = Date().timeIntervalSince(pushStart)
        #expect(pushed.pushedRecords == total, "every record is pushed once")

        let b = try Replica(dir.url.appendingPathComponent("b.sqlite"), type: "sqlite", remote: remote)
        let before = try b.loaded.store.history(after: nil).last?.token
        let pullStart = Date()
        let pulled = try await b.sync()
        let pullTime = Date().timeIntervalSince(pullStart)
        #expect(pulled.insertedRecords == total)
        #expect(pulled.pushedRecords == 0, "a peer that pulled everything pushes nothing back")
        let saves = try b.loaded.store.history(after: before).filter { $0.author == SyncEngine.historyAuthor }
        #expect(saves.count == 1, "the pull is one save")
        #expect(try b.count("Book") == n)
        #expect(try b.count("Author") == authors)
        #expect(try b.count("Tag") == tags.count)
        let ids = try b.context().fetch(FetchRequest(entity: "Book")).map(\.globalID)
        #expect(Set(ids).count == n, "no book twice")
        #expect(try b.differences(from: a).isIdentical, "the two stores hold the same records")
        let again = try await b.sync()
        #expect(again.pulledFiles == 0 && again.pushedFiles == 0, "the next sync has nothing to do")
        print("sync volume (\(kind.rawValue), \(total) records): push \(String(format: "%.2f", pushTime)) s, "
            + "pull \(String(format: "%.2f", pullTime)) s")
    }
}
