import Foundation
import StoreAPI
@testable import StoreSync
import StoreTestSupport
import Testing

/// Pulls of many records at once, over several change files: the first pull into an empty store, a pull into a store
/// that already holds some of the records, records changed again or deleted by a later file of the same pull, linked
/// records, and records with a deduplication key. Each pull is one save; nothing is duplicated or pushed back.
@Suite("Sync of large pulls")
struct SyncBulkPullTests {
    /// More records than one change file holds, so every pull here reads several files; few enough to keep the
    /// suite's threads free for the tests beside it.
    static let many = SyncSession.recordsPerFile + 500

    /// The notes of a replica by global ID, as objects of `context`.
    private func notes(_ r: Replica, in context: StoreContext) throws -> [UUID: ManagedObject] {
        var found: [UUID: ManagedObject] = [:]
        for o in try context.fetch(FetchRequest(entity: "Note")) {
            #expect(found.updateValue(o, forKey: o.globalID) == nil, "one record per global ID")
        }
        return found
    }

    /// The notes of a replica by global ID: their text and rank.
    private func notes(_ r: Replica) throws -> [UUID: [StoreValue]] {
        let c = r.context()
        return try notes(r, in: c).mapValues { [try $0.value(forKey: "text"), try $0.value(forKey: "rank")] }
    }

    private func pullSaves(_ r: Replica, after token: Int64?) throws -> [HistoryTransaction] {
        try r.loaded.store.history(after: token).filter { $0.author == SyncEngine.historyAuthor }
    }

    /// A SQLite peer `a` holding `count` notes (text and rank), pushed to `remote`; their global IDs in order.
    private func seededNotes(in dir: TemporaryDirectory, remote: any SyncRemote,
                             count: Int = SyncBulkPullTests.many) async throws -> (Replica, [UUID]) {
        let a = try Replica(dir.url.appendingPathComponent("a.sqlite"), type: "sqlite", remote: remote,
                            schema: SyncUnlinkedRecordsTests.schema)
        let c = a.context()
        var ids: [UUID] = []
        for i in 0..<count {
            ids.append(try c.insert("Note", ["text": .string("note \(i)"), "rank": .integer64(Int64(i))]).globalID)
        }
        try c.save()
        try await a.sync()
        return (a, ids)
    }

    @Test(arguments: SyncFixtures.remoteKinds)
    func laterFilesOfOnePullChangeAndDeleteRecordsEarlierFilesInsert(kind: RemoteKind) async throws {
        let dir = try TemporaryDirectory()
        let remote = try kind.make(container: "bulk-later")
        let schema = SyncUnlinkedRecordsTests.schema
        let (a, ids) = try await seededNotes(in: dir, remote: remote)
        // A later push: one note changed, one deleted, one new; the other peer reads all of it in one pull.
        let ca = a.context()
        let byID = try notes(a, in: ca)
        try #require(byID[ids[5]]).setValue(.string("changed later"), forKey: "text")
        try ca.delete(try #require(byID[ids[6]]))
        let late = try ca.insert("Note", ["text": "late"]).globalID
        try ca.save()
        try await a.sync()
        #expect(try await SyncFixtures.fileCount(remote) >= 3)

        let b = try Replica(dir.url.appendingPathComponent("b.sqlite"), type: "sqlite", remote: remote, schema: schema)
        let before = try b.loaded.store.history(after: nil).last?.token
        let pulled = try await b.sync()
        #expect(pulled.insertedRecords == Self.many, "every note but the deleted one, and the late one")
        #expect(pulled.pushedRecords == 0)
        #expect(try pullSaves(b, after: before).count == 1, "the pull is one save")
        let got = try notes(b)
        #expect(got.count == Self.many)
        #expect(got[ids[5]]?[0] == .string("changed later"))
        #expect(got[ids[6]] == nil)
        #expect(got[late]?[0] == .string("late"))
        #expect(got[ids[7]]?[1] == .integer64(7))
        #expect(try b.differences(from: a).isIdentical)
        let idle = try await b.sync()
        #expect(idle.pushedFiles == 0 && idle.pulledFiles == 0, "nothing of the pull is pushed back")

        // The pulled records are b's like any other: changed there, the change reaches a.
        let cb = b.context()
        let edited = try #require(try cb.fetch(FetchRequest(entity: "Note")).first { $0.globalID == ids[8] })
        try edited.setValue(.string("edited on b"), forKey: "text")
        try cb.save()
        try await b.sync()
        try await a.sync()
        #expect(try notes(a)[ids[8]]?[0] == .string("edited on b"))
        #expect(try b.differences(from: a).isIdentical)
    }

    /// A first pull of several files: every note arrives once, with its values, in the order it was pushed; notes a
    /// later file of the pull changes or deletes, in the first file or the last, are found.
    @Test func aFirstPullKeepsEveryNoteAndItsOrder() async throws {
        let dir = try TemporaryDirectory()
        let remote = try RemoteKind.memory.make(container: "bulk-order")
        let count = 3 * SyncSession.recordsPerFile + 700
        let (a, ids) = try await seededNotes(in: dir, remote: remote, count: count)
        let ca = a.context()
        let byID = try notes(a, in: ca)
        let changed = [ids[10], ids[count / 2], ids[count - 20]]
        for id in changed { try #require(byID[id]).setValue(.string("changed later"), forKey: "text") }
        let deleted = [ids[11], ids[count - 10]]
        for id in deleted { try ca.delete(try #require(byID[id])) }
        try ca.save()
        try await a.sync()

        let b = try Replica(dir.url.appendingPathComponent("b.sqlite"), type: "sqlite", remote: remote,
                            schema: SyncUnlinkedRecordsTests.schema)
        let pulled = try await b.sync()
        #expect(pulled.insertedRecords == count - deleted.count)
        let cb = b.context()
        let onB = try notes(b, in: cb)
        #expect(onB.count == count - deleted.count)
        for id in changed { #expect(try onB[id]?.value(forKey: "text") == .string("changed later")) }
        for id in deleted { #expect(onB[id] == nil) }
        // The notes no later file touched, by key: in the order they were pushed.
        let untouched = Set(ids).subtracting(changed).subtracting(deleted)
        let ranks = try onB.values.filter { untouched.contains($0.globalID) }
            .sorted { $0.objectID.primaryKey < $1.objectID.primaryKey }
            .map { try $0.value(forKey: "rank") }
        let pushed: [StoreValue] = ids.indices.filter { untouched.contains(ids[$0]) }.map { .integer64(Int64($0)) }
        let firstOutOfPlace = ranks.indices.first { $0 >= pushed.count || ranks[$0] != pushed[$0] }
        #expect(ranks.count == pushed.count && firstOutOfPlace == nil,
                "\(ranks.count) of \(pushed.count) untouched notes; the first out of place at \(firstOutOfPlace.map(String.init) ?? "-")")
        #expect(try b.differences(from: a).isIdentical)
    }

    /// One pull reads a new note, a change of a note it knows (which makes it list the new notes so far), another
    /// new note, and a change of that one: the last note is found among the new ones and inserted once, with its
    /// later text.
    @Test(arguments: SyncFixtures.remoteKinds)
    func aNoteNewToAPullAndChangedLaterInItIsInsertedOnce(kind: RemoteKind) async throws {
        let dir = try TemporaryDirectory()
        let remote = try kind.make(container: "bulk-new-then-changed")
        let schema = SyncUnlinkedRecordsTests.schema
        let a = try Replica(dir.url.appendingPathComponent("a.sqlite"), type: "sqlite", remote: remote, schema: schema)
        let b = try Replica(dir.url.appendingPathComponent("b.sqlite"), type: "sqlite", remote: remote, schema: schema)
        let known = try a.insert("Note", ["text": "known"])
        try await a.sync()
        try await b.sync()
        let ca = a.context()
        let first = try ca.insert("Note", ["text": "first"]).globalID
        try ca.save()
        try await a.sync()
        try #require(try notes(a, in: ca)[known]).setValue(.string("known, changed"), forKey: "text")
        try ca.save()
        try await a.sync()
        let late = try ca.insert("Note", ["text": "late"]).globalID
        try ca.save()
        try await a.sync()
        try #require(try notes(a, in: ca)[late]).setValue(.string("late, changed"), forKey: "text")
        try ca.save()
        try await a.sync()

        let pulled = try await b.sync()
        #expect(pulled.insertedRecords == 2)
        let got = try notes(b)
        #expect(got.count == 3)
        #expect(got[first]?[0] == .string("first"))
        #expect(got[known]?[0] == .string("known, changed"))
        #expect(got[late]?[0] == .string("late, changed"))
        #expect(try b.differences(from: a).isIdentical)
    }

    @Test(arguments: SyncFixtures.remoteKinds)
    func pullIntoAStoreHoldingSomeOfTheRecordsDuplicatesNone(kind: RemoteKind) async throws {
        let dir = try TemporaryDirectory()
        let remote = try kind.make(container: "bulk-some")
        let schema = SyncUnlinkedRecordsTests.schema
        let (a, ids) = try await seededNotes(in: dir, remote: remote)

        // b starts from the same seed data for every third note (same global IDs and values), and has notes of its own.
        let b = try Replica(dir.url.appendingPathComponent("b.sqlite"), type: "sqlite", remote: remote, schema: schema)
        let cb = b.context()
        var held = 0
        for (i, id) in ids.enumerated() where i % 3 == 0 {
            _ = try cb.insert("Note", ["text": .string("note \(i)"), "rank": .integer64(Int64(i))], globalID: id)
            held += 1
        }
        var own: [UUID] = []
        for i in 0..<5 { own.append(try cb.insert("Note", ["text": .string("b's own \(i)")]).globalID) }
        try cb.save()
        let pulled = try await b.sync()
        #expect(pulled.insertedRecords == Self.many - held)
        #expect(pulled.pushedRecords == 5, "only b's own notes are new to the remote")
        try await a.sync()
        let onB = try notes(b)
        #expect(onB.count == Self.many + 5)
        #expect(try notes(a).count == Self.many + 5)
        #expect(onB[ids[3]]?[0] == .string("note 3"))
        #expect(onB[ids[4]]?[0] == .string("note 4"))
        #expect(try notes(a)[own[2]]?[0] == .string("b's own 2"))
        #expect(try b.differences(from: a).isIdentical)
    }

    @Test(arguments: SyncFixtures.remoteKinds)
    func firstPullOfLinkedRecordsSetsEveryLink(kind: RemoteKind) async throws {
        let dir = try TemporaryDirectory()
        let remote = try kind.make(container: "bulk-linked")
        let a = try Replica(dir.url.appendingPathComponent("a.sqlite"), type: "sqlite", remote: remote)
        let c = a.context()
        let tags = try (0..<4).map { try c.insert("Tag", ["name": .string("tag \($0)")]) }
        let authors = try (0..<40).map { try c.insert("Author", ["name": .string("author \($0)"), "born": .integer32(Int32(1900 + $0))]) }
        var books: [ManagedObject] = []
        for i in 0..<Self.many {
            let book = try c.insert("Book", ["title": .string("book \(i)"), "pages": .integer64(Int64(i))])
            if i % 10 != 0 { try book.setObject(authors[i % authors.count], forKey: "author") }
            if i % 3 == 0 { try book.addObject(tags[i % tags.count], forKey: "tags") }
            if i > 0, i % 50 == 0 { try book.setObjects([books[i - 1], books[i - 2]], forKey: "related") }
            books.append(book)
        }
        try c.save()
        try await a.sync()
        // Relinked by a later file of the same pull.
        try a.update(books[11].globalID) { o, c in
            let author: ManagedObject = try #require(try a.object(authors[0].globalID, in: c))
            try o.setObject(author, forKey: "author")
        }
        try await a.sync()

        let b = try Replica(dir.url.appendingPathComponent("b.lmdb"), type: "lmdb", remote: remote)
        let before = try b.loaded.store.history(after: nil).last?.token
        let pulled = try await b.sync()
        #expect(pulled.insertedRecords == Self.many + 44)
        #expect(pulled.pushedRecords == 0)
        #expect(try pullSaves(b, after: before).count == 1, "the pull is one save")
        #expect(try b.count("Book") == Self.many && b.count("Author") == 40 && b.count("Tag") == 4)
        let cb = b.context()
        let book11 = try #require(try b.object(books[11].globalID, in: cb))
        #expect(try book11.object(forKey: "author")?.globalID == authors[0].globalID)
        let book100 = try #require(try b.object(books[100].globalID, in: cb))
        #expect(try book100.objects(forKey: "related").map(\.globalID) == [books[99].globalID, books[98].globalID])
        #expect(try b.differences(from: a).isIdentical)
        let idle = try await b.sync()
        #expect(idle.pushedFiles == 0 && idle.pulledFiles == 0)
    }

    @Test(arguments: SyncFixtures.remoteKinds)
    func largePullWithDeduplicationKeysMergesEachKeyOnce(kind: RemoteKind) async throws {
        let dir = try TemporaryDirectory()
        let remote = try kind.make(container: "bulk-dedup")
        let a = try Replica(dir.url.appendingPathComponent("a.sqlite"), type: "sqlite", remote: remote)
        let b = try Replica(dir.url.appendingPathComponent("b.sqlite"), type: "sqlite", remote: remote)
        // Both peers create tags independently: a many, b some of the same names and some of its own.
        let ca = a.context()
        for i in 0..<Self.many { _ = try ca.insert("Tag", ["name": .string("tag \(i)")]) }
        try ca.save()
        let cb = b.context()
        let shared = Array(stride(from: 0, to: Self.many, by: 97))
        var onB: [String: UUID] = [:]
        for i in shared {
            let tag = try cb.insert("Tag", ["name": .string("tag \(i)")])
            let book = try cb.insert("Book", ["title": .string("book of tag \(i)")])
            try book.addObject(tag, forKey: "tags")
            onB["tag \(i)"] = tag.globalID
        }
        _ = try cb.insert("Tag", ["name": "only on b"])
        try cb.save()
        try await a.sync()
        let pulled = try await b.sync()
        #expect(pulled.mergedDuplicates == shared.count)
        try await a.sync()
        try await b.sync()
        for r in [a, b] {
            let context = r.context()
            let all = try context.fetch(FetchRequest(entity: "Tag"))
            #expect(all.count == Self.many + 1)
            #expect(Set(try all.map { try $0.value(forKey: "name") }).count == all.count, "one tag per name")
            // Every book b made is linked to the tag that won its name.
            for book in try context.fetch(FetchRequest(entity: "Book")) {
                #expect(try book.objects(forKey: "tags").count == 1)
            }
        }
        #expect(try b.differences(from: a).isIdentical)
    }
}
